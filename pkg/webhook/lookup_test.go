package webhook

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkfake "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	flinkinformers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
)

// A target created just before its snapshot may not be in the cache yet:
// with a live client the lookup reads it from the API server, but only in
// a namespace the operator watches.
func TestListerLookupLiveFallback(t *testing.T) {
	dep := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "job"}}
	job := &v1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "sj"}}
	other := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "job"}}
	// The informers watch an API server that has nothing yet; the live
	// client sees the objects (the cache lags behind it).
	factory := flinkinformers.NewSharedInformerFactoryWithOptions(flinkfake.NewSimpleClientset(), 0, flinkinformers.WithNamespace("team"))
	lookup := NewListerLookup(map[string]flinkinformers.SharedInformerFactory{"team": factory})
	// Shutdown waits for the informers, so they stop on a context the
	// test cancels first (t.Context ends only after deferred calls).
	ctx, cancel := context.WithCancel(t.Context())
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), lookup.HasSynced) {
		t.Fatal("not synced")
	}
	if _, err := lookup.Deployment("team", "job"); !apierrors.IsNotFound(err) {
		t.Fatalf("without a live client: %v, want not found", err)
	}
	lookup.WithLiveFallback(flinkfake.NewSimpleClientset(dep, job, other), 5*time.Second)
	if got, err := lookup.Deployment("team", "job"); err != nil || got.Name != "job" {
		t.Errorf("deployment: %v, %v; want it from the live client", got, err)
	}
	if got, err := lookup.SessionJob("team", "sj"); err != nil || got.Name != "sj" {
		t.Errorf("session job: %v, %v; want it from the live client", got, err)
	}
	if got, err := lookup.Deployment("team", "gone"); got != nil || !apierrors.IsNotFound(err) {
		t.Errorf("missing everywhere: %v, want not found", err)
	}
	if _, err := lookup.Deployment("elsewhere", "job"); !apierrors.IsNotFound(err) {
		t.Errorf("unwatched namespace: %v, want not found (the controllers would never act on it)", err)
	}
}
