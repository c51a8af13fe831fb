package sessionjob

import (
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	kubeinformers "github.com/flinkops/flink-operator/pkg/generated/kube/informers"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

// upgradingSession makes "session" a session cluster whose spec and
// lastReconciledSpec say Flink `recorded` while its live JobManager (the
// fake one, and the JobManager Deployment's flinkops.io/flink-version
// annotation in the controller's Kubernetes cache) still runs `running`,
// with its REST Service on port 8081 and rest.port 9091 in the spec.
func (f *fixture) upgradingSession(recorded, running flink.Version) {
	f.T.Helper()
	f.jm = fakejm.New(fakejm.Options{Version: running, Clock: f.Clock, CompletionPolls: 1, CheckpointDir: filepath.Join(f.Dir, "checkpoints")})
	f.T.Cleanup(f.jm.Close)

	d := f.sessionCluster("session", map[string]string{
		"execution.checkpointing.savepoint-dir": "file://" + filepath.Join(f.Dir, "savepoints"),
		"rest.port":                             "9091",
	})
	d.Spec.FlinkVersion = v1beta1.FlinkVersion("v" + strings.ReplaceAll(recorded.String(), ".", "_"))
	d.Status.ReconciliationStatus.State = v1beta1.ReconciliationUpgrading
	d.Status.ReconciliationStatus.LastReconciledSpec = `{"spec":{"flinkVersion":"` + string(d.Spec.FlinkVersion) +
		`"},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":false}}`
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, d, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}

	owner := []metav1.OwnerReference{{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Name: "session", UID: d.UID, Controller: ptr.To(true)}}
	factory := kubeinformers.NewSharedInformerFactory(kubefake.NewSimpleClientset(), 0)
	lookup := jobmanager.NewLookup(map[string]kubeinformers.SharedInformerFactory{"": factory})
	jm := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: cluster.JobManagerDeploymentName("session"), Namespace: ns, OwnerReferences: owner,
		Annotations: map[string]string{jobmanager.AnnotationFlinkVersion: running.String()},
	}}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: cluster.RESTServiceName("session"), Namespace: ns, OwnerReferences: owner},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: cluster.RESTPortName, Port: 8081}}},
	}
	if err := factory.Apps().V1().Deployments().Informer().GetIndexer().Add(jm); err != nil {
		f.T.Fatal(err)
	}
	if err := factory.Core().V1().Services().Informer().GetIndexer().Add(svc); err != nil {
		f.T.Fatal(err)
	}
	f.ctrl.JobManagers = lookup
}

// A session job with its own flinkConfiguration (sent with the jar run,
// which Flink has from 1.17) on a session cluster being upgraded from 1.16
// to 1.17: the running 1.16 JobManager is spoken to in 1.16's terms, so the
// submission is refused before anything is sent (1.16 answers an unknown
// flinkConfiguration field with 400).
func TestSessionJobSpeaksTheRunningVersionMidUpgrade(t *testing.T) {
	f := newFixture(t)
	f.upgradingSession(flink.V1_17, flink.V1_16)
	j := f.sessionJob("job", v1beta1.UpgradeModeStateless)
	j.Spec.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"pipeline.name":"counting"}`)}
	f.Create(j)

	f.MustSync("job")
	f.MustSync("job")
	if n := len(f.jm.RequestsTo(fakejm.RouteJarRun)) + len(f.jm.RequestsTo(fakejm.RouteJarUpload)); n != 0 {
		t.Errorf("the 1.16 JobManager got %d jar uploads/runs", n)
	}
	if got := f.Get("job"); !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "session cluster session runs 1.16") {
		t.Errorf("status error %q, want the 1.16 refusal", got.Status.Error)
	}
}

// The other way round: the cluster's spec says 1.16 but its JobManager
// runs 1.17: the job is submitted with its flinkConfiguration, to the live
// Service's port (not the spec's rest.port 9091).
func TestSessionJobSpeaksTheRunningVersionWhenSpecIsOlder(t *testing.T) {
	f := newFixture(t)
	f.upgradingSession(flink.V1_16, flink.V1_17)
	var ports []int
	resolve := f.ctrl.dialer.Endpoints
	f.ctrl.dialer.Endpoints = func(c *v1beta1.FlinkDeployment, port int) (string, error) {
		ports = append(ports, port)
		return resolve(c, port)
	}
	j := f.sessionJob("job", v1beta1.UpgradeModeStateless)
	j.Spec.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"pipeline.name":"counting"}`)}
	f.Create(j)

	f.MustSync("job")
	f.MustSync("job")
	runs := f.runs()
	if len(runs) != 1 || runs[0].FlinkConfiguration["pipeline.name"] != "counting" {
		t.Fatalf("run requests %+v, want one carrying flinkConfiguration", runs)
	}
	if len(ports) == 0 {
		t.Fatal("no client was built")
	}
	for _, p := range ports {
		if p != 8081 {
			t.Errorf("asked for port %d, want the live Service's 8081", p)
		}
	}
}
