package sessionjob

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/canary"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
)

// canaryFixture is the usual fixture whose loop syncs through the queue's
// sync (the canary hook, then Sync), with a canary Monitor.
func canaryFixture(t *testing.T) (*fixture, *canary.Monitor) {
	t.Helper()
	f := newFixture(t)
	m, err := canary.New(f.Config, f.Clock)
	if err != nil {
		t.Fatal(err)
	}
	f.Build = func() (controllertest.SyncFunc, error) {
		if _, err := f.build(); err != nil {
			return nil, err
		}
		f.ctrl.canaries = m
		return func(ctx context.Context, key string) (time.Duration, error) {
			defer f.settleSubmission(key)
			return f.ctrl.sync(ctx, key)
		}, nil
	}
	f.Restart()
	return f, m
}

// TestCanaryNeverSubmitted: a FlinkSessionJob labelled as a canary, bare
// as upstream's or with a job on a ready session cluster, is only noted by
// the Monitor: no jar download, no Flink call, no status, no finalizer.
func TestCanaryNeverSubmitted(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  func(f *fixture) *v1beta1.FlinkSessionJob
	}{
		{name: "bare", obj: func(*fixture) *v1beta1.FlinkSessionJob {
			return &v1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "canary", Generation: 1}}
		}},
		{name: "job spec", obj: func(f *fixture) *v1beta1.FlinkSessionJob {
			f.sessionCluster("session", nil)
			return f.sessionJob("canary", v1beta1.UpgradeModeStateless)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, m := canaryFixture(t)
			j := tc.obj(f)
			j.Labels = map[string]string{canary.Label: "true"}
			f.Create(j)
			for range 5 {
				f.Step("canary")
			}
			f.Clock.Step(time.Hour)
			f.Step("canary")
			if m.Len() != 1 {
				t.Errorf("%d canaries tracked, want 1", m.Len())
			}
			if n := len(f.jm.Requests()); n != 0 {
				t.Errorf("%d Flink REST calls for a canary", n)
			}
			if n := f.jarGets.Load(); n != 0 {
				t.Errorf("%d jar downloads for a canary", n)
			}
			for _, a := range f.Client.Actions() {
				if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" && v != "create" {
					t.Errorf("flink.apache.org %s %s/%s: a canary made a write", v, a.GetResource().Resource, a.GetSubresource())
				}
				if a.GetVerb() == "create" && a.GetResource().Resource == "flinkstatesnapshots" {
					t.Errorf("a snapshot was created for a canary")
				}
			}
			got := f.Get("canary")
			if got.Status.LifecycleState != "" || got.Status.ReconciliationStatus.State != "" || len(got.Finalizers) != 0 {
				t.Errorf("canary touched: status %s, finalizers %v", statusString(got), got.Finalizers)
			}
		})
	}
}

// TestCanaryDeletion: a canary being deleted loses the controller's
// finalizer and is forgotten; a session job without the label is synced.
func TestCanaryDeletion(t *testing.T) {
	f, m := canaryFixture(t)
	f.Create(&v1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "canary", Generation: 1,
		Labels: map[string]string{canary.Label: "true"}, Finalizers: []string{Finalizer}}})
	f.Step("canary")
	if m.Len() != 1 {
		t.Fatalf("%d canaries tracked, want 1", m.Len())
	}
	j := f.Get("canary")
	j.DeletionTimestamp = &metav1.Time{Time: f.Clock.Now()}
	if _, err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Update(f.Ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Step("canary")
	if got := f.Get("canary").Finalizers; len(got) != 0 {
		t.Errorf("finalizers %v, want none", got)
	}
	if m.Len() != 0 {
		t.Errorf("%d canaries tracked, want none", m.Len())
	}

	f.sessionCluster("session", nil)
	f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeStateless))
}
