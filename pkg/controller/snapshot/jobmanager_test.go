package snapshot

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	kubeinformers "github.com/flinkops/flink-operator/pkg/generated/kube/informers"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

// runningJobManager gives the controller a Kubernetes cache holding the live
// JobManager Deployment of FlinkDeployment name, built for Flink version
// (the flinkops.io/flink-version annotation), and its REST Service on
// restPort, as the FlinkDeployment controller leaves them (owned by the
// FlinkDeployment's UID, which the test bench's API server gives it).
func (f *fixture) runningJobManager(name string, version v1beta1.FlinkVersion, restPort int32) {
	f.T.Helper()
	dep, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Get(f.Ctx, name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	owner := []metav1.OwnerReference{{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Name: name, UID: dep.UID, Controller: ptr.To(true)}}
	factory := kubeinformers.NewSharedInformerFactory(kubefake.NewSimpleClientset(), 0)
	lookup := jobmanager.NewLookup(map[string]kubeinformers.SharedInformerFactory{"": factory})
	jm := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: cluster.JobManagerDeploymentName(name), Namespace: ns, OwnerReferences: owner,
		Annotations: map[string]string{jobmanager.AnnotationFlinkVersion: string(version)},
	}}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: cluster.RESTServiceName(name), Namespace: ns, OwnerReferences: owner},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: cluster.RESTPortName, Port: restPort}}},
	}
	if err := factory.Apps().V1().Deployments().Informer().GetIndexer().Add(jm); err != nil {
		f.T.Fatal(err)
	}
	if err := factory.Core().V1().Services().Informer().GetIndexer().Add(svc); err != nil {
		f.T.Fatal(err)
	}
	f.ctrl.JobManagers = lookup
}

// upgradeSpec records on FlinkDeployment name that it is being moved to
// another Flink version and rest.port: the spec and lastReconciledSpec say
// so, the job still RUNNING on the old JobManager.
func (f *fixture) upgradeSpec(name string, version v1beta1.FlinkVersion, restPort string) {
	f.T.Helper()
	dep, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Get(f.Ctx, name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	conf, err := dep.Spec.FlinkConfiguration.Values()
	if err != nil {
		f.T.Fatal(err)
	}
	flat := map[string]string{"rest.port": restPort}
	for k, v := range conf {
		if s, ok := v.(string); ok {
			flat[k] = s
		}
	}
	dep.Spec.FlinkVersion = version
	dep.Spec.FlinkConfiguration = v1beta1.NewConfiguration(flat)
	dep.Status.ReconciliationStatus.State = v1beta1.ReconciliationUpgrading
	dep.Status.ReconciliationStatus.LastReconciledSpec = `{"spec":{"flinkVersion":"` + string(version) +
		`"},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":false}}`
	if dep, err = f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, dep, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	if _, err = f.Client.FlinkV1beta1().FlinkDeployments(ns).UpdateStatus(f.Ctx, dep, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
}

// recordPorts wraps the fixture's endpoint resolver to record the REST ports
// asked for.
func (f *fixture) recordPorts() *[]int {
	var ports []int
	resolve := f.ctrl.dialer.Endpoints
	f.ctrl.dialer.Endpoints = func(c *v1beta1.FlinkDeployment, port int) (string, error) {
		ports = append(ports, port)
		return resolve(c, port)
	}
	return &ports
}

// The spec names a newer Flink than the JobManager that runs: a checkpoint
// is asked of the running 1.16 cluster in 1.16's terms, which has no
// checkpoint trigger, so nothing is POSTed to it; the spec's 1.17 would have
// sent POST /jobs/:id/checkpoints to a cluster without that endpoint.
func TestSnapshotSpeaksTheRunningVersionMidUpgrade(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_16, nil)
	f.upgradeSpec("job", v1beta1.FlinkVersion1_17, "9091")
	f.runningJobManager("job", v1beta1.FlinkVersion1_16, 8081)

	f.Create(withBackoff(checkpointSnap("cp", "job"), 0))
	f.MustSync("cp")
	s := f.Get("cp")
	if s.Status.State != v1beta1.SnapshotFailed || !strings.Contains(s.Status.Error, "requires Flink 1.17+") {
		t.Fatalf("status %+v, want FAILED: the running cluster is 1.16", s.Status)
	}
	for _, r := range jm.Requests() {
		if strings.HasSuffix(r.Path, "/checkpoints") && r.Method == "POST" {
			t.Errorf("the 1.16 JobManager got %s %s", r.Method, r.Path)
		}
	}

	// A savepoint goes to the running cluster, on the live Service's port
	// (the new rest.port is not served until the new JobManager runs).
	ports := f.recordPorts()
	f.Create(savepointSnap("sp", "job"))
	if s := f.drive("sp", 10); s.Status.State != v1beta1.SnapshotCompleted {
		t.Fatalf("savepoint %+v", s.Status)
	}
	if len(*ports) == 0 {
		t.Fatal("no client was built")
	}
	for _, p := range *ports {
		if p != 8081 {
			t.Errorf("asked for port %d, want the live Service's 8081", p)
		}
	}
	if n := len(jm.RequestsTo(fakejm.RouteSavepointTrigger)); n != 1 {
		t.Errorf("%d savepoint triggers, want 1", n)
	}
}

// The other way round: the spec names an older Flink (1.16, no checkpoint
// trigger) than the JobManager that runs (1.17): the checkpoint is
// triggered, in 1.17's terms, and completes.
func TestSnapshotSpeaksTheRunningVersionWhenSpecIsOlder(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_17, nil)
	f.upgradeSpec("job", v1beta1.FlinkVersion1_16, "8081")
	f.runningJobManager("job", v1beta1.FlinkVersion1_17, 8081)

	f.Create(checkpointSnap("cp", "job"))
	if s := f.drive("cp", 10); s.Status.State != v1beta1.SnapshotCompleted {
		t.Fatalf("status %+v, want COMPLETED on the running 1.17 cluster", s.Status)
	}
	trig := jm.RequestsTo(fakejm.RouteCheckpointTrigger)
	if len(trig) != 1 || trig[0].Status >= 300 || !strings.Contains(string(trig[0].Body), `"checkpointType":"FULL"`) {
		t.Errorf("checkpoint triggers %+v, want one FULL trigger accepted", trig)
	}
}

// Without the live objects (the Deployment not in the cache yet, or no
// Kubernetes informers), the recorded spec decides, as before.
func TestSnapshotWithoutLiveJobManagerUsesRecordedSpec(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_17, nil)
	f.upgradeSpec("job", v1beta1.FlinkVersion1_16, "8081")

	f.Create(withBackoff(checkpointSnap("cp", "job"), 0))
	f.MustSync("cp")
	if s := f.Get("cp"); s.Status.State != v1beta1.SnapshotFailed || !strings.Contains(s.Status.Error, "requires Flink 1.17+") {
		t.Fatalf("status %+v, want FAILED by the recorded 1.16", s.Status)
	}
}
