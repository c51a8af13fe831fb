package jobengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	clientset "github.com/flinkops/flink-operator/pkg/clients/flink"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	"github.com/flinkops/flink-operator/pkg/lifecycle"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// journal records the order of everything a commit does.
type journal struct{ steps []string }

func (j *journal) add(s string) { j.steps = append(j.steps, s) }

// commitCase runs one commit of a FlinkDeployment or a FlinkSessionJob.
type commitCase struct {
	name string
	// edit changes the sync state before the commit.
	edit func(s statusEditor)
	// prevError is status.error before the sync.
	prevError string
	writeErr  error

	wantSteps []string
	wantErr   bool
	wantError string // status.error after the commit
	requeue   time.Duration
}

// statusEditor is what a case may do to a sync of either kind.
type statusEditor interface {
	Fail(reason, format string, args ...any)
	keepError(reason string)
	Event(typ, reason, format string, args ...any)
	RequeueWithin(d time.Duration)
	requeueNoLaterThan(d time.Duration)
	NoRequeue()
	ClearErrors()
	AfterStatusWrite(name string, run func(ctx context.Context) error)
	beforeStatusWrite(name string, run func(ctx context.Context) error)
	JobStatus() *v1beta1.JobStatus
	FailManualRestore(reason, format string, args ...any)
}

// Errors as an earlier sync wrote them (upstream's JSON).
const (
	validationSame = `{"type":"org.apache.flink.kubernetes.operator.exception.ValidationException","message":"same","additionalMetadata":{},"throwableList":[]}`
	// keptWaiting has what only a decoded error keeps: a stack trace
	// (rendered only with stacktrace.enabled, so dropped here by default
	// — not in this constant), a reason and causes.
	keptWaiting = `{"type":"org.apache.flink.util.SerializedThrowable","message":"waiting","additionalMetadata":{"reason":"X"},"throwableList":[{"type":"java.io.IOException","message":"disk full","additionalMetadata":{}}]}`
)

func commitCases(j *journal) []commitCase {
	act := func(name string) func(context.Context) error {
		return func(context.Context) error { j.add(name); return nil }
	}
	return []commitCase{{
		name: "pre-writes, one status write, events, then actions",
		edit: func(s statusEditor) {
			s.AfterStatusWrite("post", act("post"))
			s.beforeStatusWrite("pre", act("pre"))
			s.Event("Normal", "Submit", "submitted %s", "job")
			s.JobStatus().State = v1beta1.JobStatusRunning
			s.RequeueWithin(time.Minute)
			s.RequeueWithin(10 * time.Second)
			s.RequeueWithin(0)
		},
		wantSteps: []string{"pre", "fault pre-commit:pre", "status", "fault status-written", "event Normal Submit submitted job", "post", "fault action:post"},
		requeue:   10 * time.Second,
	}, {
		name: "an unchanged status is not written",
		edit: func(s statusEditor) {
			s.Event("Normal", "Submit", "x")
			s.AfterStatusWrite("post", act("post"))
		},
		wantSteps: []string{"event Normal Submit x", "post", "fault action:post"},
	}, {
		name: "a new error is written with one Warning per cause",
		edit: func(s statusEditor) {
			s.Fail("ValidationError", "bad %d", 1)
			s.Fail("UpgradeFailed", "worse")
		},
		wantSteps: []string{"status", "fault status-written", "event Warning ValidationError bad 1", "event Warning UpgradeFailed worse"},
		wantError: `{"type":"org.apache.flink.kubernetes.operator.exception.ValidationException","message":"bad 1; worse","additionalMetadata":{},"throwableList":[]}`,
	}, {
		name:      "an error that persists is not announced again",
		prevError: validationSame,
		edit:      func(s statusEditor) { s.Fail("ValidationError", "same") },
		wantSteps: nil,
		wantError: validationSame,
	}, {
		name:      "a kept error stays without an event",
		prevError: keptWaiting,
		edit:      func(s statusEditor) { s.keepError("SavepointError") },
		wantError: keptWaiting,
	}, {
		name:      "a plain error of an older operator is rewritten as JSON, without an event",
		prevError: "same",
		edit:      func(s statusEditor) { s.Fail("ValidationError", "same") },
		wantSteps: []string{"status", "fault status-written"},
		wantError: validationSame,
	}, {
		name:      "a kept plain error becomes JSON of its message",
		prevError: "waiting",
		edit:      func(s statusEditor) { s.keepError("SavepointError") },
		wantSteps: []string{"status", "fault status-written"},
		wantError: `{"type":"org.apache.flink.kubernetes.operator.exception.ReconciliationException","message":"waiting","additionalMetadata":{},"throwableList":[]}`,
	}, {
		name:      "a cleared error is removed from the status",
		prevError: "old",
		edit:      func(s statusEditor) { s.Fail("X", "new"); s.ClearErrors() },
		wantSteps: []string{"status", "fault status-written"},
	}, {
		name: "a failed status write runs no action and emits no event",
		edit: func(s statusEditor) {
			s.JobStatus().State = v1beta1.JobStatusFailed
			s.Event("Warning", "JobStatusChanged", "failed")
			s.AfterStatusWrite("post", act("post"))
		},
		writeErr:  errors.New("conflict"),
		wantSteps: []string{"status"},
		wantErr:   true,
	}, {
		name: "a failed pre-write stops the commit before the status",
		edit: func(s statusEditor) {
			s.beforeStatusWrite("pre", func(context.Context) error { j.add("pre"); return errors.New("no") })
			s.JobStatus().State = v1beta1.JobStatusRunning
		},
		wantSteps: []string{"pre"},
		wantErr:   true,
	}, {
		name: "a requeue is capped by a deadline and dropped on request",
		edit: func(s statusEditor) {
			s.RequeueWithin(time.Minute)
			s.requeueNoLaterThan(5 * time.Second)
		},
		requeue: 5 * time.Second,
	}, {
		name: "no requeue after NoRequeue",
		edit: func(s statusEditor) {
			s.RequeueWithin(time.Minute)
			s.NoRequeue()
			s.requeueNoLaterThan(5 * time.Second)
		},
	}}
}

func TestCommit(t *testing.T) {
	kinds := []struct {
		name string
		run  func(t *testing.T, tc commitCase, j *journal) (time.Duration, error, string)
	}{
		{"FlinkDeployment", func(t *testing.T, tc commitCase, j *journal) (time.Duration, error, string) {
			d := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
			d.Status.Error = tc.prevError
			return runCommit[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec](t, d, tc, j)
		}},
		{"FlinkSessionJob", func(t *testing.T, tc commitCase, j *journal) (time.Duration, error, string) {
			sj := &v1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
			sj.Status.Error = tc.prevError
			return runCommit[*v1beta1.FlinkSessionJob, v1beta1.FlinkSessionJobSpec](t, sj, tc, j)
		}},
	}
	for _, kind := range kinds {
		for i := range commitCases(&journal{}) {
			j := &journal{}
			tc := commitCases(j)[i]
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				requeue, err, statusError := kind.run(t, tc, j)
				if (err != nil) != tc.wantErr {
					t.Fatalf("err = %v, want error %v", err, tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantSteps, j.steps); diff != "" {
					t.Errorf("steps (-want +got):\n%s", diff)
				}
				if !tc.wantErr {
					if requeue != tc.requeue {
						t.Errorf("requeue = %v, want %v", requeue, tc.requeue)
					}
					if statusError != tc.wantError {
						t.Errorf("status.error = %q, want %q", statusError, tc.wantError)
					}
				}
			})
		}
	}
}

func runCommit[T Object[T, S], S Spec[S]](t *testing.T, base T, tc commitCase, j *journal) (time.Duration, error, string) {
	t.Helper()
	client := fake.NewSimpleClientset(base.DeepCopyObject())
	var written T
	client.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		j.add("status")
		if tc.writeErr != nil {
			return true, nil, tc.writeErr
		}
		written = a.(k8stesting.UpdateAction).GetObject().(T)
		return false, nil, nil
	})
	e := &Engine[T, S]{
		Client:   client,
		Writes:   testWrites[T](client),
		Recorder: journalRecorder{record.NewFakeRecorder(10), j}, // events are journalled as received
		Fault:    func(_, point string) { j.add("fault " + point) },
	}
	s, err := e.NewState(context.Background(), "ns/a", base, now)
	if err != nil {
		t.Fatal(err)
	}
	tc.edit(s)
	s.SetError()
	requeue, err := e.Commit(context.Background(), s)
	var none T
	if err == nil && any(written) != any(none) {
		if got := *written.JobResourceStatus().Error; got != *s.Status().Error {
			t.Errorf("written status.error %q differs from the sync's %q", got, *s.Status().Error)
		}
	}
	if *base.JobResourceStatus().Error != tc.prevError {
		t.Errorf("the cached object was mutated: status.error = %q", *base.JobResourceStatus().Error)
	}
	return requeue, err, *s.Status().Error
}

type journalRecorder struct {
	*record.FakeRecorder
	j *journal
}

func (r journalRecorder) Event(_ runtime.Object, typ, reason, msg string) {
	r.j.add(strings.Join([]string{"event", typ, reason, msg}, " "))
}

// A failure needs a manual restore when it says so through
// FailManualRestore or carries an error wrapping lifecycle.ErrManualRestore;
// the text alone decides nothing.
func TestNeedsManualRestore(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(s statusEditor)
		want bool
	}{
		{"none", func(statusEditor) {}, false},
		{"plain failure mentioning it", func(s statusEditor) { s.Fail("X", "text says %s", lifecycle.ManualRestore) }, false},
		{"explicit", func(s statusEditor) { s.FailManualRestore("X", "set initialSavepointPath") }, true},
		{"wrapped error", func(s statusEditor) {
			s.Fail("X", "cannot upgrade: %v", fmt.Errorf("checkpoint 3: %w", lifecycle.ErrManualRestore))
		}, true},
		{"cleared", func(s statusEditor) { s.FailManualRestore("X", "y"); s.ClearErrors() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine[*v1beta1.FlinkSessionJob, v1beta1.FlinkSessionJobSpec]{}
			s, err := e.NewState(context.Background(), "ns/a", &v1beta1.FlinkSessionJob{}, now)
			if err != nil {
				t.Fatal(err)
			}
			tc.fail(s)
			if got := s.NeedsManualRestore(); got != tc.want {
				t.Errorf("NeedsManualRestore = %v, want %v", got, tc.want)
			}
		})
	}
}

// testWrites is the Engine.Writes a controller of T gives.
func testWrites[T any](client clientset.Interface) func(string) Writer[T] {
	return func(ns string) Writer[T] {
		var w any
		var none T
		switch any(none).(type) {
		case *v1beta1.FlinkDeployment:
			w = client.FlinkV1beta1().FlinkDeployments(ns)
		case *v1beta1.FlinkSessionJob:
			w = client.FlinkV1beta1().FlinkSessionJobs(ns)
		}
		return w.(Writer[T])
	}
}
