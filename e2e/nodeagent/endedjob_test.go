package nodeagent_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/nodeagent"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
)

// TestEndedJobGuard: the JobManager the operator builds for a native
// application carries its ended-job guard (pkg/cluster endedjob.go); the
// agent runs it as bash would: the application unless the guard's variable
// holds the Deployment's token, then the session entrypoint with the same
// arguments.
func TestEndedJobGuard(t *testing.T) {
	const jobID = "0123456789abcdef0123456789abcdef"
	fd := &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image: "flink:2.3", FlinkVersion: v1beta1.FlinkVersion("v2_3"), Mode: v1beta1.DeploymentModeNative, ServiceAccount: "flink",
			FlinkConfiguration: flinkConf(map[string]any{"kubernetes.jobmanager.entrypoint.args": "-Dx=y"}),
			Job:                &v1beta1.JobSpec{JarURI: "local:///opt/flink/usrlib/testjob.jar", EntryClass: flinkjvm.TestJobClass},
		},
	}
	const token = "01234567-mfz1k2"
	objs, err := cluster.Build(cluster.Input{Deployment: fd, Spec: fd.Spec, OperatorConfig: config.Defaults(), JobID: jobID, Native: true, DeployToken: token})
	if err != nil {
		t.Fatal(err)
	}
	pod := objs.JobManager.Spec.Template.Spec
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == cluster.MainContainerName })
	main := &pod.Containers[i]
	g := flinkjvm.SplitEndedJobGuard(main.Args)
	if g == nil || g.Token != token || g.Var != cluster.EndedJobEnv {
		t.Fatalf("guard %+v in %q, want one on %s for token %s", g, main.Args, cluster.EndedJobEnv, token)
	}
	if c := nodeagent.Classify(main, main.Command, main.Args); c.Kind != nodeagent.Flink || c.Mode != flinkjvm.KubernetesApplication || !slices.Equal(c.Args, []string{"-Dx=y"}) {
		t.Errorf("classified %+v, want the application with [-Dx=y]", c)
	}
	for _, tc := range []struct {
		env  map[string]string
		want flinkjvm.Mode
	}{
		{nil, flinkjvm.KubernetesApplication},
		{map[string]string{cluster.EndedJobEnv: "01234567-mfz1k1"}, flinkjvm.KubernetesApplication},
		{map[string]string{cluster.EndedJobEnv: token}, flinkjvm.KubernetesSession},
	} {
		args, ended := g.Choose(tc.env)
		c := nodeagent.Classify(main, main.Command, args)
		if c.Kind != nodeagent.Flink || c.Mode != tc.want || !slices.Equal(c.Args, []string{"-Dx=y"}) || ended != (tc.want == flinkjvm.KubernetesSession) {
			t.Errorf("with %v: %+v (ended %v), want %s with [-Dx=y]", tc.env, c, ended, tc.want)
		}
	}
}
