package canary

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
)

const ns = "default"

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func canaryDeployment(name string) *v1beta1.FlinkDeployment {
	return &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1,
		Labels: map[string]string{Label: "true"}}}
}

func canaryJob(name string) *v1beta1.FlinkSessionJob {
	return &v1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1,
		Labels: map[string]string{Label: "true"}}}
}

// bench is a Monitor on a fake clock and a fake flink.apache.org API server
// that, like a real one, moves an object's generation when its spec changes.
type bench struct {
	t      *testing.T
	ctx    context.Context
	m      *Monitor
	clock  *testingclock.FakeClock
	client *fake.Clientset
}

func newBench(t *testing.T, cfg config.Config, objs ...runtime.Object) *bench {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	clk := testingclock.NewFakeClock(t0)
	m, err := New(cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{t: t, ctx: ctx, m: m, clock: clk, client: fake.NewSimpleClientset(objs...)}
	b.client.PrependReactor("update", "*", generationReactor(b.client))
	return b
}

// generationReactor makes a fake API server move an object's generation
// when an update changes its spec, as a real one does.
func generationReactor(client *fake.Clientset) core.ReactionFunc {
	return func(a core.Action) (bool, runtime.Object, error) {
		u := a.(core.UpdateAction)
		if u.GetSubresource() != "" {
			return false, nil, nil
		}
		cur := u.GetObject().(metav1.Object)
		old, err := client.Tracker().Get(a.GetResource(), u.GetNamespace(), cur.GetName())
		if err != nil {
			return false, nil, nil
		}
		changed := false
		switch o := old.(type) {
		case *v1beta1.FlinkDeployment:
			changed = !equality.Semantic.DeepEqual(o.Spec, u.GetObject().(*v1beta1.FlinkDeployment).Spec)
		case *v1beta1.FlinkSessionJob:
			changed = !equality.Semantic.DeepEqual(o.Spec, u.GetObject().(*v1beta1.FlinkSessionJob).Spec)
		}
		gen := old.(metav1.Object).GetGeneration()
		if changed {
			gen++
		}
		cur.SetGeneration(gen)
		return false, nil, nil // the default reaction stores it
	}
}

// syncDeployment is the controller's hook on what the API server holds
// now (the informer cache, up to date).
func (b *bench) syncDeployment(name string) bool {
	b.t.Helper()
	handled, err := Sync(b.ctx, b.m, b.client, ns+"/"+name, func(namespace, name string) (*v1beta1.FlinkDeployment, error) {
		return b.client.FlinkV1beta1().FlinkDeployments(namespace).Get(b.ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return handled
}

func (b *bench) syncJob(name string) bool {
	b.t.Helper()
	handled, err := Sync(b.ctx, b.m, b.client, ns+"/"+name, func(namespace, name string) (*v1beta1.FlinkSessionJob, error) {
		return b.client.FlinkV1beta1().FlinkSessionJobs(namespace).Get(b.ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return handled
}

func (b *bench) deployment(name string) *v1beta1.FlinkDeployment {
	b.t.Helper()
	d, err := b.client.FlinkV1beta1().FlinkDeployments(ns).Get(b.ctx, name, metav1.GetOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	return d
}

// bumps is the canary's restartNonce: how often the Monitor bumped it.
func (b *bench) bumps() int64 {
	b.t.Helper()
	if n := b.deployment("canary").Spec.RestartNonce; n != nil {
		return *n
	}
	return 0
}

func TestIs(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{nil, false},
		{map[string]string{}, false},
		{map[string]string{Label: "true"}, true},
		{map[string]string{Label: "TRUE"}, true},
		{map[string]string{Label: "false"}, false},
		{map[string]string{Label: "yes"}, false},
		{map[string]string{"flink.apache.org/other": "true"}, false},
	} {
		if got := Is(&metav1.ObjectMeta{Labels: tc.labels}); got != tc.want {
			t.Errorf("Is(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
}

func TestIsJSON(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"metadata":{"name":"c","labels":{"flink.apache.org/canary":"true"}}}`:  true,
		`{"metadata":{"name":"c","labels":{"flink.apache.org/canary":"false"}}}`: false,
		`{"metadata":{"name":"c"},"spec":{"image":"flink"}}`:                     false,
		`not json`: false,
		``:         false,
	} {
		if got := IsJSON([]byte(raw)); got != want {
			t.Errorf("IsJSON(%s) = %v, want %v", raw, got, want)
		}
	}
}

func TestNewReadsConfig(t *testing.T) {
	for _, tc := range []struct {
		name        string
		conf        map[string]string
		wantEnabled bool
		wantTimeout time.Duration
		wantErr     bool
	}{
		{name: "defaults", wantEnabled: true, wantTimeout: time.Minute},
		{name: "set", conf: map[string]string{config.KeyHealthProbeEnabled: "false", config.KeyHealthCanaryResourceTimeout: "30 s"},
			wantEnabled: false, wantTimeout: 30 * time.Second},
		{name: "bad bool", conf: map[string]string{config.KeyHealthProbeEnabled: "maybe"}, wantErr: true},
		{name: "bad duration", conf: map[string]string{config.KeyHealthCanaryResourceTimeout: "soon"}, wantErr: true},
		{name: "zero timeout", conf: map[string]string{config.KeyHealthCanaryResourceTimeout: "0 s"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			for k, v := range tc.conf {
				cfg[k] = v
			}
			m, err := New(cfg, nil)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.enabled != tc.wantEnabled || m.timeout != tc.wantTimeout {
				t.Errorf("enabled=%v timeout=%v, want %v %v", m.enabled, m.timeout, tc.wantEnabled, tc.wantTimeout)
			}
		})
	}
}

// TestReconciledInTime: a canary the controller keeps reconciling stays
// healthy, check after check, and is bumped each time.
func TestReconciledInTime(t *testing.T) {
	b := newBench(t, config.Defaults(), canaryDeployment("canary"))
	if !b.syncDeployment("canary") {
		t.Fatal("a canary was not handled by the canary hook")
	}
	b.m.check(b.ctx, b.client) // first seen: bumped at once
	if d := b.deployment("canary"); d.Generation != 2 || d.Spec.RestartNonce == nil || *d.Spec.RestartNonce != 1 {
		t.Fatalf("after the first check: generation %d nonce %v, want 2 and 1", d.Generation, d.Spec.RestartNonce)
	}
	for i := range 3 {
		b.clock.Step(10 * time.Second)
		b.syncDeployment("canary") // the controller sees the bump in time
		b.clock.Step(50 * time.Second)
		b.m.check(b.ctx, b.client)
		if err := b.m.Healthy(); err != nil {
			t.Fatalf("check %d: %v", i+1, err)
		}
		if got, want := b.bumps(), int64(i+2); got != want {
			t.Fatalf("check %d: %d bumps, want %d", i+1, got, want)
		}
	}
}

// TestStalledController: a canary whose bump no sync saw within the
// timeout makes Healthy fail; it passes again once the controller catches
// up and a later check finds the change reconciled.
func TestStalledController(t *testing.T) {
	for _, kind := range []string{kindDeployment, kindSessionJob} {
		t.Run(kind, func(t *testing.T) {
			b := newBench(t, config.Defaults(), canaryDeployment("canary"), canaryJob("canary"))
			sync := b.syncDeployment
			if kind == kindSessionJob {
				sync = b.syncJob
			}
			sync("canary")
			if next := b.m.check(b.ctx, b.client); next != time.Minute {
				t.Fatalf("next check in %v, want 1m", next)
			}
			// The controller stalls: no sync sees generation 2.
			b.clock.Step(time.Minute - time.Second)
			if next := b.m.check(b.ctx, b.client); next != time.Second {
				t.Fatalf("next check in %v, want 1s", next)
			}
			if err := b.m.Healthy(); err != nil {
				t.Fatalf("before the timeout: %v", err)
			}
			b.clock.Step(time.Second)
			b.m.check(b.ctx, b.client)
			err := b.m.Healthy()
			if err == nil || !strings.Contains(err.Error(), kind+" default/canary") {
				t.Fatalf("after the timeout: Healthy() = %v, want the stalled %s", err, kind)
			}
			// Still stalled at the next check.
			b.clock.Step(time.Minute)
			b.m.check(b.ctx, b.client)
			if b.m.Healthy() == nil {
				t.Fatal("healthy while the controller is still stalled")
			}
			// The controller catches up; the next check passes.
			sync("canary")
			if b.m.Healthy() == nil {
				t.Fatal("healthy before a check found the change reconciled")
			}
			b.clock.Step(time.Minute)
			b.m.check(b.ctx, b.client)
			if err := b.m.Healthy(); err != nil {
				t.Fatalf("after catching up: %v", err)
			}
		})
	}
}

// TestDisabled: with the probe disabled canaries are still handled (never
// deployed) but neither bumped nor judged.
func TestDisabled(t *testing.T) {
	cfg := config.Defaults()
	cfg[config.KeyHealthProbeEnabled] = "false"
	b := newBench(t, cfg, canaryDeployment("canary"))
	if !b.syncDeployment("canary") {
		t.Fatal("a canary was not handled with the probe disabled")
	}
	if b.m.Len() != 0 {
		t.Errorf("%d canaries tracked, want none", b.m.Len())
	}
	done := make(chan struct{})
	go func() { b.m.Run(b.ctx, b.client); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return with the probe disabled")
	}
	b.clock.Step(time.Hour)
	if err := b.m.Healthy(); err != nil {
		t.Error(err)
	}
	if n := b.bumps(); n != 0 {
		t.Errorf("%d bumps, want none", n)
	}
}

// TestNilMonitor: a controller without a Monitor still skips canaries.
func TestNilMonitor(t *testing.T) {
	b := newBench(t, config.Defaults(), canaryDeployment("canary"))
	b.m = nil
	if !b.syncDeployment("canary") {
		t.Fatal("a canary was not handled without a Monitor")
	}
	if b.m.Healthy() != nil || b.m.Len() != 0 {
		t.Error("a nil Monitor is not healthy and empty")
	}
}

// TestForget: a canary deleted, gone, or no longer labelled is no longer
// tracked (a check of it would fail for ever); a canary being deleted
// loses the controller's finalizer.
func TestForget(t *testing.T) {
	for _, tc := range []struct {
		name        string
		change      func(b *bench)
		wantHandled bool
	}{
		{name: "deleted", wantHandled: true, change: func(b *bench) {
			d := b.deployment("canary")
			d.Finalizers = []string{"other/finalizer", v1beta1.DeploymentFinalizer}
			d.DeletionTimestamp = &metav1.Time{Time: t0}
			if _, err := b.client.FlinkV1beta1().FlinkDeployments(ns).Update(b.ctx, d, metav1.UpdateOptions{}); err != nil {
				b.t.Fatal(err)
			}
		}},
		{name: "gone", change: func(b *bench) {
			if err := b.client.FlinkV1beta1().FlinkDeployments(ns).Delete(b.ctx, "canary", metav1.DeleteOptions{}); err != nil {
				b.t.Fatal(err)
			}
		}},
		{name: "label removed", change: func(b *bench) {
			d := b.deployment("canary")
			d.Labels = nil
			if _, err := b.client.FlinkV1beta1().FlinkDeployments(ns).Update(b.ctx, d, metav1.UpdateOptions{}); err != nil {
				b.t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, config.Defaults(), canaryDeployment("canary"))
			b.syncDeployment("canary")
			b.m.check(b.ctx, b.client)
			if b.m.Len() != 1 {
				t.Fatalf("%d canaries tracked, want 1", b.m.Len())
			}
			tc.change(b)
			if got := b.syncDeployment("canary"); got != tc.wantHandled {
				t.Errorf("handled = %v, want %v", got, tc.wantHandled)
			}
			if b.m.Len() != 0 {
				t.Errorf("%d canaries tracked, want none", b.m.Len())
			}
			b.clock.Step(time.Hour)
			b.m.check(b.ctx, b.client)
			if err := b.m.Healthy(); err != nil {
				t.Error(err)
			}
			if tc.name == "deleted" {
				if got := b.deployment("canary").Finalizers; len(got) != 1 || got[0] != "other/finalizer" {
					t.Errorf("finalizers %v, want only other/finalizer", got)
				}
			}
		})
	}
}

// TestBumpOfDeletedCanary: a canary gone before its bump (deleted between
// the sync and the check, no sync since) is forgotten, not judged.
func TestBumpOfDeletedCanary(t *testing.T) {
	b := newBench(t, config.Defaults(), canaryDeployment("canary"))
	b.syncDeployment("canary")
	b.m.check(b.ctx, b.client)
	if err := b.client.FlinkV1beta1().FlinkDeployments(ns).Delete(b.ctx, "canary", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	b.clock.Step(time.Minute)
	b.m.check(b.ctx, b.client)
	if _, err := b.client.FlinkV1beta1().FlinkDeployments(ns).Get(b.ctx, "canary", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the bump re-created the canary: %v", err)
	}
	if b.m.Len() != 0 {
		t.Errorf("%d canaries tracked, want none", b.m.Len())
	}
	b.clock.Step(time.Minute)
	b.m.check(b.ctx, b.client)
	if err := b.m.Healthy(); err != nil {
		t.Error(err)
	}
}

// TestRun: the loop bumps a newly seen canary at once and judges it a
// timeout later.
func TestRun(t *testing.T) {
	b := newBench(t, config.Defaults(), canaryDeployment("canary"))
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { b.m.Run(ctx, b.client); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(b.ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return cond(), nil
		}); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	waitFor("the loop to wait", b.clock.HasWaiters)
	b.syncDeployment("canary")
	waitFor("the first bump", func() bool { return b.bumps() == 1 })
	waitFor("the loop to wait again", b.clock.HasWaiters)
	if err := b.m.Healthy(); err != nil {
		t.Fatal(err)
	}
	b.clock.Step(time.Minute) // the controller stalled
	waitFor("the check to fail", func() bool { return b.m.Healthy() != nil })
	if b.bumps() != 2 {
		t.Errorf("%d bumps, want 2", b.bumps())
	}
}
