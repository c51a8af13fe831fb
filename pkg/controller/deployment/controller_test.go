package deployment

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	informers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	kubeinformers "github.com/flinkops/flink-operator/pkg/generated/kube/informers"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

// TestRunWiresHandlers runs the controller on real (fake-backed) informers:
// a new FlinkDeployment is deployed through the queue, and a deleted owned
// Deployment comes back through the owner-reference handler.
func TestRunWiresHandlers(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := &fixture{} // for application()
	f.Fixture = &controllertest.Fixture{T: t, Dir: t.TempDir()}
	client, kube := fake.NewSimpleClientset(), kubefake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	kfactory := kubeinformers.NewSharedInformerFactory(kube, 0)
	caches, err := flinkcache.New(map[string]informers.SharedInformerFactory{"": factory})
	if err != nil {
		t.Fatal(err)
	}
	// No per-resource rate limiter: the burst of syncs a deploy causes (one
	// per object created, coalesced or not depending on timing) must not
	// delay the sync this test waits for by a refresh period.
	cfg := config.Defaults()
	cfg[config.KeyRateLimiterLimit] = "0"
	ctrl, err := New(controllerctx.Context{Client: client, Kube: kube, Caches: caches, Recorder: record.NewFakeRecorder(100), Config: cfg},
		map[string]kubeinformers.SharedInformerFactory{"": kfactory}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	kfactory.Start(ctx.Done())
	go ctrl.Run(ctx, 2)

	if _, err := client.FlinkV1beta1().FlinkDeployments(ns).Create(ctx, f.application("job", v1beta1.UpgradeModeStateless), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tm := cluster.TaskManagerDeploymentName("job")
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	exists := func() bool {
		_, err := kube.AppsV1().Deployments(ns).Get(ctx, tm, metav1.GetOptions{})
		return err == nil
	}
	waitFor("cluster created", exists)
	if err := kube.AppsV1().Deployments(ns).Delete(ctx, tm, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("TaskManager Deployment recreated", exists)
	waitFor("status written", func() bool {
		d, err := client.FlinkV1beta1().FlinkDeployments(ns).Get(ctx, "job", metav1.GetOptions{})
		return err == nil && d.Status.JobStatus.JobID != "" && d.Status.LifecycleState == v1beta1.LifecycleDeployed
	})
}
