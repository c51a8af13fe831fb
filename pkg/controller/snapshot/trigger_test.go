package snapshot

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Rules of a TRIGGER_PENDING snapshot's first steps (sync.go: Sync,
// validate; trigger.go: trigger, post).

// A savepoint is taken in the format its spec asks for; unset (and
// UNKNOWN) mean CANONICAL, Flink's default.
func TestSavepointFormatSentToFlink(t *testing.T) {
	for _, tc := range []struct {
		spec v1beta1.SavepointFormatType
		want string
	}{
		{"", "CANONICAL"},
		{v1beta1.SavepointFormatUnknown, "CANONICAL"},
		{v1beta1.SavepointFormatCanonical, "CANONICAL"},
		{v1beta1.SavepointFormatNative, "NATIVE"},
	} {
		t.Run("spec "+string(tc.spec), func(t *testing.T) {
			f := newFixture(t)
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			s := savepointSnap("sp", "job")
			s.Spec.Savepoint.FormatType = tc.spec
			triggered(t, f, s)
			ops := jm.Operations()
			if len(ops) != 1 || ops[0].FormatType != tc.want {
				t.Fatalf("operations %+v, want one savepoint in format %s", ops, tc.want)
			}
		})
	}
}

// spec.savepoint.path wins over the job's configured savepoint directory.
func TestSavepointPathInSpecWinsOverConfiguredDirectory(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	own := "file://" + f.Dir + "/own"
	s := savepointSnap("sp", "job")
	s.Spec.Savepoint.Path = own
	triggered(t, f, s)
	if ops := jm.Operations(); len(ops) != 1 || ops[0].TargetDirectory != own {
		t.Fatalf("operations %+v, want one savepoint into %s", ops, own)
	}
}

// SnapshotTriggered says Flink accepted the trigger (with
// snapshot.normal-events.enabled): it is emitted when the POST succeeded,
// not when it failed (the intent is kept and polled by id).
func TestSnapshotTriggeredEventOnlyWhenFlinkAcceptedTheTrigger(t *testing.T) {
	for _, tc := range []struct {
		name     string
		postFail bool
	}{
		{"accepted: one event naming the trigger id", false},
		{"POST failed: no event, intent kept", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.normalEvents()
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			if tc.postFail {
				jm.InjectFault(fakejm.Fault{Route: fakejm.RouteSavepointTrigger, Status: http.StatusServiceUnavailable})
			}
			f.Create(savepointSnap("sp", "job"))
			if d := f.MustSync("sp"); d != snapshotrules.MinPollDelay {
				t.Errorf("requeue %v, want the first poll after %v", d, snapshotrules.MinPollDelay)
			}
			s := f.Get("sp")
			if s.Status.State != v1beta1.SnapshotInProgress || s.Status.TriggerID == "" || s.Status.Failures != 0 {
				t.Fatalf("status %+v, want IN_PROGRESS with a trigger id", s.Status)
			}
			events := f.Events()
			n := countEvents(events, reasons.ReasonSnapshotTriggered)
			if tc.postFail {
				if n != 0 {
					t.Errorf("events %v: SnapshotTriggered although the POST failed", events)
				}
				return
			}
			if n != 1 || !strings.Contains(events[0], s.Status.TriggerID) || !strings.Contains(events[0], "savepoint of job (FlinkDeployment)") {
				t.Errorf("events %v, want one SnapshotTriggered naming the savepoint, the job and trigger id %s", events, s.Status.TriggerID)
			}
		})
	}
}

// Retries wait 10 s, 20 s, 40 s … after the last failure, computed from
// the status (so a restart keeps the schedule); the wait is exact: the
// snapshot triggers when it is over, not a poll later. A snapshot without
// failures never waits.
func TestRetryWaitsForTheBackoffSinceTheLastFailure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int32
		since    time.Duration // since status.resultTimestamp
		wait     time.Duration // 0: triggers now
	}{
		{"first retry 1 s early", 1, 9 * time.Second, time.Second},
		{"first retry on time", 1, 10 * time.Second, 0},
		{"second retry half way", 2, 10 * time.Second, 10 * time.Second},
		{"second retry 1 ms early", 2, 20*time.Second - time.Millisecond, time.Millisecond},
		{"second retry on time", 2, 20 * time.Second, 0},
		{"third retry late", 3, time.Minute, 0},
		{"no failure: never waits", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			s := savepointSnap("sp", "job")
			s.Status = v1beta1.FlinkStateSnapshotStatus{State: v1beta1.SnapshotTriggerPending, Failures: tc.failures,
				ResultTimestamp: snapshotrules.FormatTime(t0), Error: "earlier failure"}
			f.Create(s)
			f.Clock.SetTime(t0.Add(tc.since))
			d := f.MustSync("sp")
			got := f.Get("sp")
			if tc.wait > 0 {
				if d != tc.wait || got.Status.State != v1beta1.SnapshotTriggerPending || len(jm.Operations()) != 0 {
					t.Fatalf("requeue %v, status %+v, %d operations: want to wait %v without triggering", d, got.Status, len(jm.Operations()), tc.wait)
				}
				return
			}
			if got.Status.State != v1beta1.SnapshotInProgress || got.Status.Failures != tc.failures || got.Status.Error != "" || len(jm.Operations()) != 1 {
				t.Fatalf("status %+v, %d operations: want triggered now", got.Status, len(jm.Operations()))
			}
		})
	}
}

// The CRD says exactly one of savepoint and checkpoint; an object created
// without the webhook that has both or neither gets a ValidationError and
// no REST call.
func TestValidationNeedsExactlyOneOfSavepointOrCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name       string
		savepoint  bool
		checkpoint bool
	}{
		{"both", true, true},
		{"neither", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			s := savepointSnap("sp", "job")
			s.Spec.Savepoint, s.Spec.Checkpoint = nil, nil
			if tc.savepoint {
				s.Spec.Savepoint = &v1beta1.SavepointSpec{}
			}
			if tc.checkpoint {
				s.Spec.Checkpoint = &v1beta1.CheckpointSpec{}
			}
			f.Create(s)
			if d := f.MustSync("sp"); d != waitForValidation {
				t.Errorf("requeue %v, want %v", d, waitForValidation)
			}
			got := f.Get("sp")
			if got.Status.State != v1beta1.SnapshotTriggerPending || !strings.Contains(got.Status.Error, "exactly one of checkpoint or savepoint") {
				t.Fatalf("status %+v", got.Status)
			}
			if n := countEvents(f.Events(), reasons.ReasonValidationError); n != 1 {
				t.Errorf("%d ValidationError events, want 1", n)
			}
			if n := len(jm.Requests()); n != 0 {
				t.Errorf("%d REST calls for an invalid snapshot", n)
			}
		})
	}
}

// A job reference without a name is refused, unless the savepoint already
// exists (then no job is needed).
func TestValidationNeedsAJobReferenceName(t *testing.T) {
	f := newFixture(t)
	s := savepointSnap("sp", "")
	f.Create(s)
	f.MustSync("sp")
	if got := f.Get("sp"); got.Status.State != v1beta1.SnapshotTriggerPending || got.Status.Error != "job reference must be supplied for this snapshot" {
		t.Fatalf("status %+v", got.Status)
	}
}

// A terminal snapshot's labels are kept as the operator wants them: a
// job-reference label removed by hand comes back while the job exists.
func TestTerminalSnapshotJobReferenceLabelsRestored(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))
	s := f.drive("sp", 10)
	delete(s.Labels, v1beta1.LabelJobReferenceName)
	delete(s.Labels, v1beta1.LabelJobReferenceKind)
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Update(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.resetActions()
	if d := f.MustSync("sp"); d != 0 {
		t.Errorf("terminal snapshot requeued after %v", d)
	}
	got := f.Get("sp")
	if got.Labels[v1beta1.LabelJobReferenceName] != "job" || got.Labels[v1beta1.LabelJobReferenceKind] != "FlinkDeployment" {
		t.Errorf("labels %v, want the job-reference labels back", got.Labels)
	}
	if meta, status := f.writes(); meta != 1 || status != 0 {
		t.Errorf("%d metadata + %d status writes, want 1 + 0", meta, status)
	}
}

// roundTrips counts the requests an http.Client sends.
type roundTrips struct{ n atomic.Int32 }

func (r *roundTrips) RoundTrip(req *http.Request) (*http.Response, error) {
	r.n.Add(1)
	return http.DefaultTransport.RoundTrip(req)
}

// Flink REST calls go through the HTTP client the operator passes in
// (which carries its REST metrics), not a client of the controller's own.
func TestFlinkCallsUseTheOperatorsHTTPClient(t *testing.T) {
	f := newFixture(t)
	rt := &roundTrips{}
	f.httpClient = &http.Client{Transport: rt}
	f.Restart()
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	triggered(t, f, savepointSnap("sp", "job"))
	if sent, served := rt.n.Load(), len(jm.Requests()); sent == 0 || int(sent) != served {
		t.Errorf("the operator's client sent %d requests, the JobManager served %d", sent, served)
	}
}

// Each state change is logged once, from NEW for a snapshot never
// reconciled before.
func TestStateChangesAreLoggedFromNew(t *testing.T) {
	f := newFixture(t)
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	f.Ctx = klog.NewContext(context.Background(), logger)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))
	f.drive("sp", 10)

	var changes []string
	for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if e.Message != "Snapshot state changed" {
			continue
		}
		kv := map[string]string{}
		for i := 0; i+1 < len(e.WithKVList); i += 2 {
			kv[e.WithKVList[i].(string)] = toString(e.WithKVList[i+1])
		}
		for i := 0; i+1 < len(e.ParameterKVList); i += 2 {
			kv[e.ParameterKVList[i].(string)] = toString(e.ParameterKVList[i+1])
		}
		changes = append(changes, kv["from"]+">"+kv["to"])
	}
	if want := []string{"NEW>IN_PROGRESS", "IN_PROGRESS>COMPLETED"}; strings.Join(changes, ",") != strings.Join(want, ",") {
		t.Errorf("logged state changes %v, want %v", changes, want)
	}
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case v1beta1.SnapshotState:
		return string(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// By default a snapshot's life costs no Normal event, as upstream: a manual
// savepoint made through the webhook costs three writes, the intent, the
// terminal labels and the terminal status (docs/performance.md). Warnings
// stay.
func TestSnapshotWritesWithoutNormalEvents(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	jm.SetCompletion(0, 0)
	s := savepointSnap("sp", "job")
	s.Labels = snapshotrules.DesiredLabels(s, "", true) // as admitted by the webhook
	s.Finalizers = []string{v1beta1.SnapshotFinalizer}
	f.Create(s)
	f.resetActions()
	got := f.drive("sp", 10)
	if got.Status.State != v1beta1.SnapshotCompleted {
		t.Fatalf("status %+v", got.Status)
	}
	if metadata, status := f.writes(); metadata != 1 || status != 2 {
		t.Errorf("%d metadata and %d status writes, want 1 (terminal labels) and 2 (intent, result)", metadata, status)
	}
	if events := f.Events(); len(events) != 0 {
		t.Errorf("events %v, want none", events)
	}
}
