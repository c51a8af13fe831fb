package cache

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	flinkinformers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Without the FlinkStateSnapshot CRD the snapshot informer is never
// requested (it would never sync), and snapshot reads find nothing.
func TestWithoutSnapshots(t *testing.T) {
	client := fake.NewSimpleClientset(&v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns"}})
	factory := flinkinformers.NewSharedInformerFactory(client, 0)
	c, err := NewWithOptions(map[string]flinkinformers.SharedInformerFactory{"": factory}, Options{WithoutSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.HasSnapshots() {
		t.Fatal("HasSnapshots")
	}
	if err := c.AddEventHandlers(Handlers{Snapshots: cache.ResourceEventHandlerFuncs{}, Deployments: cache.ResourceEventHandlerFuncs{}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	synced := factory.WaitForCacheSync(ctx.Done())
	for typ, ok := range synced {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	for typ := range synced {
		if typ.Name() == "FlinkStateSnapshot" {
			t.Fatal("the snapshot informer was requested")
		}
	}
	if !c.HasSynced() {
		t.Fatal("HasSynced false")
	}
	if _, err := c.Deployment("ns", "job"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot("ns", "s"); !apierrors.IsNotFound(err) {
		t.Fatalf("Snapshot: %v", err)
	}
	if list, err := c.SnapshotsOfJob(snapshotrules.JobKeyFor(v1beta1.JobReferenceKindDeployment, "ns", "job")); err != nil || len(list) != 0 {
		t.Fatalf("SnapshotsOfJob: %v %v", list, err)
	}
	if list, err := c.SnapshotsInState(v1beta1.SnapshotCompleted); err != nil || len(list) != 0 {
		t.Fatalf("SnapshotsInState: %v %v", list, err)
	}
	if len(c.AllSnapshots()) != 0 {
		t.Fatal("AllSnapshots")
	}
}

func TestWithSnapshotsByDefault(t *testing.T) {
	factory := flinkinformers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	c, err := New(map[string]flinkinformers.SharedInformerFactory{"ns": factory})
	if err != nil || !c.HasSnapshots() {
		t.Fatalf("%v %v", c.HasSnapshots(), err)
	}
}
