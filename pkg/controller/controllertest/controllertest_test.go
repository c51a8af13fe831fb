package controllertest

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// A toy controller on the bench: each sync sees the fake API server's
// objects in its informers, counts the FlinkDeployment up in a label, and
// asks to be requeued after a minute (Step moves the clock 30 s); a Crash
// at the second sync restarts it with fresh informers.
func TestLoop(t *testing.T) {
	var l *Loop[*v1beta1.FlinkDeployment]
	builds, crashAt := 0, 0
	l = &Loop[*v1beta1.FlinkDeployment]{
		Fixture: New(t, Options{Kube: true}),
		Build: func() (SyncFunc, error) {
			builds++
			lister := l.Factory.Flink().V1beta1().FlinkDeployments().Lister()
			return func(ctx context.Context, key string) (time.Duration, error) {
				cached, err := lister.List(labels.Everything())
				if err != nil || len(cached) != 1 {
					t.Fatalf("informer holds %d FlinkDeployments (%v), want 1", len(cached), err)
				}
				d := cached[0].DeepCopy()
				d.Labels = map[string]string{"syncs": d.Labels["syncs"] + "x"}
				if _, err := l.Client.FlinkV1beta1().FlinkDeployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
					return 0, err
				}
				if len(d.Labels["syncs"]) == crashAt {
					panic(Crash{})
				}
				return time.Minute, nil
			}, nil
		},
		Resource: func(namespace string) Resource[*v1beta1.FlinkDeployment] {
			return l.Client.FlinkV1beta1().FlinkDeployments(namespace)
		},
		Status: func(d *v1beta1.FlinkDeployment) string { return d.Labels["syncs"] },
		Ready:  func(d *v1beta1.FlinkDeployment) bool { return d.Labels["syncs"] == "xxx" },
	}
	l.Restart()
	d := l.Deploy(&v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "job"}})
	if d.UID == "" || !d.CreationTimestamp.Time.Equal(T0) || d.Namespace != Namespace {
		t.Errorf("created %s/%s uid %q at %v, want a UID and T0", d.Namespace, d.Name, d.UID, d.CreationTimestamp)
	}
	if got := l.Clock.Since(T0); got != 90*time.Second {
		t.Errorf("clock moved %v in three steps, want 90s", got)
	}
	l.Edit("job", func(d *v1beta1.FlinkDeployment) { d.Spec.Image = "flink:2" })
	if d := l.Get("job"); d.Generation != 1 || d.Spec.Image != "flink:2" {
		t.Errorf("after Edit: generation %d image %q", d.Generation, d.Spec.Image)
	}

	crashAt = 4
	if !l.StepCrashing("job") || builds != 2 {
		t.Errorf("crash not survived (builds %d)", builds)
	}
	if l.StepCrashing("job") || l.Get("job").Labels["syncs"] != "xxxxx" {
		t.Errorf("after the restart: syncs %q", l.Get("job").Labels["syncs"])
	}
	if ids := SeqTriggerIDs(); ids() != "00000000000000000000000000000001" || ids() != "00000000000000000000000000000002" {
		t.Error("trigger ids are not sequential")
	}
}
