package deployment

import (
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
		return f.ctrl.sync, nil
	}
	f.Restart()
	return f, m
}

// TestCanaryNeverDeployed: a FlinkDeployment labelled as a canary, bare as
// upstream's example or with a full application spec, is only noted by the
// Monitor: no Kubernetes object, no JobManager, no Flink call, no status,
// no finalizer, however long it runs.
func TestCanaryNeverDeployed(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  func(f *fixture) *v1beta1.FlinkDeployment
	}{
		{name: "bare", obj: func(*fixture) *v1beta1.FlinkDeployment {
			return &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "canary", Generation: 1}}
		}},
		{name: "application spec", obj: func(f *fixture) *v1beta1.FlinkDeployment {
			return f.application("canary", v1beta1.UpgradeModeStateless)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, m := canaryFixture(t)
			d := tc.obj(f)
			d.Labels = map[string]string{canary.Label: "true"}
			f.Create(d)
			for range 5 {
				f.Step("canary")
			}
			f.Clock.Step(time.Hour)
			f.Step("canary")
			if m.Len() != 1 {
				t.Errorf("%d canaries tracked, want 1", m.Len())
			}
			for _, a := range f.Kube.Actions() {
				if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
					t.Errorf("Kubernetes %s %s: a canary made a write", a.GetVerb(), a.GetResource().Resource)
				}
			}
			for _, a := range f.Client.Actions() {
				if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" &&
					(a.GetVerb() != "create" || a.GetResource().Resource != "flinkdeployments") {
					t.Errorf("flink.apache.org %s %s/%s: a canary made a write", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
				}
			}
			if n := len(f.JobManagers) + len(f.jms); n != 0 {
				t.Errorf("%d JobManagers started for a canary", n)
			}
			got := f.Get("canary")
			if got.Status.LifecycleState != "" || got.Status.ReconciliationStatus.State != "" || len(got.Finalizers) != 0 {
				t.Errorf("canary touched: status %s, finalizers %v", statusString(got), got.Finalizers)
			}
			if ev := f.Events(); len(ev) != 0 {
				t.Errorf("events for a canary: %v", ev)
			}
		})
	}
}

// TestCanaryHookPassesOthers: a FlinkDeployment without the label goes
// through the queue's sync to Sync, and a canary whose label is removed is
// deployed from then on.
func TestCanaryHookPassesOthers(t *testing.T) {
	f, m := canaryFixture(t)
	d := f.application("app", v1beta1.UpgradeModeStateless)
	d.Labels = map[string]string{canary.Label: "false"}
	f.Deploy(d)

	c := f.application("canary", v1beta1.UpgradeModeStateless)
	c.Labels = map[string]string{canary.Label: "true"}
	f.Create(c)
	f.Step("canary")
	if m.Len() != 1 {
		t.Fatalf("%d canaries tracked, want 1", m.Len())
	}
	f.Edit("canary", func(d *v1beta1.FlinkDeployment) { d.Labels = nil })
	f.Until("canary", 10, "deploy the former canary", running)
	if m.Len() != 0 {
		t.Errorf("%d canaries tracked after the label went, want none", m.Len())
	}
}

// TestCanaryDeletion: a canary being deleted loses the controller's
// finalizer (the mutating webhook gives it one) and is forgotten.
func TestCanaryDeletion(t *testing.T) {
	f, m := canaryFixture(t)
	f.Create(&v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "canary", Generation: 1,
		Labels: map[string]string{canary.Label: "true"}, Finalizers: []string{Finalizer}}})
	f.Step("canary")
	if m.Len() != 1 {
		t.Fatalf("%d canaries tracked, want 1", m.Len())
	}
	d := f.Get("canary")
	d.DeletionTimestamp = &metav1.Time{Time: f.Clock.Now()}
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Step("canary")
	if got := f.Get("canary").Finalizers; len(got) != 0 {
		t.Errorf("finalizers %v, want none", got)
	}
	if m.Len() != 0 {
		t.Errorf("%d canaries tracked, want none", m.Len())
	}
}
