package jobengine

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// deletionKind is a JobKind whose answers a case sets; it counts the
// EndOnDeletion calls.
type deletionKind struct {
	starting, ended bool
	ends            int
}

func (k *deletionKind) Starting() bool            { return k.starting }
func (k *deletionKind) NeverRan() bool            { return false }
func (k *deletionKind) Describe() string          { return "unreachable (test)" }
func (k *deletionKind) Unreachable() (bool, bool) { return false, false }
func (k *deletionKind) LastStateStop(context.Context) (LastStateStop, string) {
	return StopByCancel, ""
}
func (k *deletionKind) EndOnDeletion() bool              { k.ends++; return k.ended }
func (k *deletionKind) EndOnDeletionDescription() string { return "ending it so" }

// TestStopOnDeletion runs the one deletion stop over both kinds: what it
// decides without a JobManager (the savepoint itself is covered by each
// controller's deletion tests on a fake JobManager).
func TestStopOnDeletion(t *testing.T) {
	deleted := metav1.NewTime(now.Add(-time.Minute))
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "a", DeletionTimestamp: &deleted}
	running := v1beta1.JobStatus{JobID: "0123456789abcdef0123456789abcdef", State: v1beta1.JobStatusRunning}
	t.Run("FlinkDeployment", func(t *testing.T) {
		testStopOnDeletion[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec](t, func(js v1beta1.JobStatus) *v1beta1.FlinkDeployment {
			return &v1beta1.FlinkDeployment{ObjectMeta: meta, Status: v1beta1.FlinkDeploymentStatus{JobStatus: js}}
		}, running)
	})
	t.Run("FlinkSessionJob", func(t *testing.T) {
		testStopOnDeletion[*v1beta1.FlinkSessionJob, v1beta1.FlinkSessionJobSpec](t, func(js v1beta1.JobStatus) *v1beta1.FlinkSessionJob {
			return &v1beta1.FlinkSessionJob{ObjectMeta: meta, Status: v1beta1.FlinkSessionJobStatus{JobStatus: js}}
		}, running)
	})
}

func testStopOnDeletion[T Object[T, S], S Spec[S]](t *testing.T, obj func(v1beta1.JobStatus) T, running v1beta1.JobStatus) {
	const timeout = "30 s" // past: the deletion was a minute ago
	for _, tc := range []struct {
		name        string
		cfg         config.Config
		savepoint   bool
		kind        deletionKind
		wantDone    bool
		wantEnds    int
		wantEvent   string // reason and a part of the message; "" none
		wantRequeue bool
	}{
		{name: "no savepoint: the kind ends the job", kind: deletionKind{ended: true}, wantDone: true, wantEnds: 1},
		{name: "no savepoint: the kind's end is pending", kind: deletionKind{}, wantEnds: 1},
		{name: "savepoint, job unreachable: ended without one", savepoint: true, kind: deletionKind{ended: true},
			wantDone: true, wantEnds: 1, wantEvent: reasons.ReasonCleanup + ": Job 0123456789abcdef0123456789abcdef is unreachable (test): no savepoint taken on deletion"},
		{name: "savepoint, job starting: wait for it", savepoint: true, kind: deletionKind{starting: true, ended: true}, wantRequeue: true},
		{name: "savepoint past the stop timeout", savepoint: true, cfg: config.Config{config.FlinkCheckpointTimeout: timeout}, kind: deletionKind{starting: true},
			wantDone: true, wantEvent: reasons.ReasonSavepointError + ": No savepoint of job 0123456789abcdef0123456789abcdef within 30s of the deletion"},
		{name: "stop past the stop timeout", cfg: config.Config{config.FlinkCheckpointTimeout: timeout}, kind: deletionKind{},
			wantDone: true, wantEvent: reasons.ReasonCleanup + ": Job 0123456789abcdef0123456789abcdef could not be stopped within 30s of the deletion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine[T, S]{}
			s, err := e.NewState(context.Background(), "ns/a", obj(running), now)
			if err != nil {
				t.Fatal(err)
			}
			s.Cfg = tc.cfg
			k := tc.kind
			done, err := s.StopOnDeletion(context.Background(), &k, tc.savepoint)
			if err != nil {
				t.Fatal(err)
			}
			if done != tc.wantDone || k.ends != tc.wantEnds {
				t.Errorf("done %v after %d EndOnDeletion calls, want %v after %d", done, k.ends, tc.wantDone, tc.wantEnds)
			}
			var events []string
			for _, ev := range s.events {
				events = append(events, ev.reason+": "+ev.msg)
			}
			switch {
			case tc.wantEvent == "" && len(events) > 0:
				t.Errorf("events %q, want none", events)
			case tc.wantEvent != "" && (len(events) != 1 || !strings.HasPrefix(events[0], tc.wantEvent)):
				t.Errorf("events %q, want one starting %q", events, tc.wantEvent)
			}
			if tc.wantRequeue && s.requeue == 0 {
				t.Errorf("no requeue while the job starts")
			}
		})
	}
}
