package deployment

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// A native FlinkDeployment whose ServiceAccount exists and is bound to a
// ClusterRole without rules (Flink's documentation binds edit, which is
// empty where kube-controller-manager does not aggregate ClusterRoles):
// every SubjectAccessReview is denied. status.error and the Warning event
// name each missing verb and resource, keep the pointer to
// manifests/flink-serviceaccount, say that a role already bound lacks the
// rules (an empty aggregated ClusterRole being the usual cause) and how to
// check; the deploy goes ahead once the rights are there.
func TestServiceAccountBoundToEmptyClusterRole(t *testing.T) {
	f := newNativeFixture(t)
	for _, p := range flinkPermissions {
		f.denied[p.verb+" "+p.resource] = true
	}
	d := withHA(native(f.application("job", v1beta1.UpgradeModeSavepoint)))
	f.Create(d)
	f.Step("job")
	f.Step("job")
	msg := jobengine.ErrorMessage(f.Get("job").Status.Error)
	wants := []string{
		"ServiceAccount " + ns + "/flink may not create pods, watch pods, delete pods, get deployments.apps, " +
			"create configmaps, update configmaps, watch configmaps in namespace " + ns,
		"which Flink's resource manager and Kubernetes HA needs in native mode",
		"Grant it the Role of manifests/flink-serviceaccount",
		"If a Role or ClusterRole is already bound to it, that role lacks these rules",
		"an aggregated ClusterRole such as edit is empty where kube-controller-manager runs without its clusterrole-aggregation-controller",
		"kubectl auth can-i create pods -n " + ns + " --as=system:serviceaccount:" + ns + ":flink",
	}
	for _, want := range wants {
		if !strings.Contains(msg, want) {
			t.Errorf("status.error lacks %q:\n%s", want, msg)
		}
	}
	var event string
	events := f.Events()
	for _, e := range events {
		if strings.Contains(e, reasons.ReasonServiceAccount) {
			event = e
		}
	}
	if !strings.Contains(event, "may not create pods, watch pods, delete pods, get deployments.apps") ||
		!strings.Contains(event, "clusterrole-aggregation-controller") {
		t.Errorf("Warning %s event %q does not name the missing rights and the likely cause; events: %v", reasons.ReasonServiceAccount, event, events)
	}
	t.Logf("status.error: %s", msg)

	f.denied = map[string]bool{}
	f.Until("job", 10, "deployed once the rights are granted", running)
}

// Only what is missing is named, in the order Flink needs it, and the
// command to check names the first of it (with its API group).
func TestMissingRightsMessage(t *testing.T) {
	msg := missingRightsMessage("team-a", "flink", []string{"get deployments.apps", "watch configmaps"}, true)
	for _, want := range []string{
		"ServiceAccount team-a/flink may not get deployments.apps, watch configmaps in namespace team-a, which Flink's resource manager and Kubernetes HA needs",
		"manifests/flink-serviceaccount",
		"kubectl auth can-i get deployments.apps -n team-a --as=system:serviceaccount:team-a:flink",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	for _, notWant := range []string{"create pods", "delete pods"} {
		if strings.Contains(msg, notWant) {
			t.Errorf("message names %q, which is not missing:\n%s", notWant, msg)
		}
	}
}

// TestFirstDeployRefusedReadsAsNotDeployed: a new FlinkDeployment whose
// first deploy cannot start (its ServiceAccount lacks rights) is shown as
// upstream shows a resource before its first deployment: lifecycle FAILED
// with the error and no job state, not a SUSPENDED job being UPGRADED.
// Once the rights are there it deploys.
func TestFirstDeployRefusedReadsAsNotDeployed(t *testing.T) {
	f := newNativeFixture(t)
	f.denied["create pods"] = true
	f.Create(native(f.application("job", v1beta1.UpgradeModeSavepoint)))
	for range 3 {
		f.Step("job")
	}
	got := f.Get("job")
	st := got.Status
	if st.LifecycleState != v1beta1.LifecycleFailed || st.JobStatus.State != "" || st.ReconciliationStatus.State == v1beta1.ReconciliationUpgrading ||
		st.ReconciliationStatus.LastReconciledSpec != "" || !strings.Contains(jobengine.ErrorMessage(st.Error), "may not create pods") {
		t.Fatalf("first deploy refused: %s (lastReconciledSpec %q)", statusString(got), st.ReconciliationStatus.LastReconciledSpec)
	}
	if deps, _ := f.Kube.AppsV1().Deployments(ns).List(f.Ctx, metav1.ListOptions{}); len(deps.Items) != 0 {
		t.Errorf("%d Deployments created", len(deps.Items))
	}
	f.denied = map[string]bool{}
	f.Until("job", 10, "deployed once the rights are granted", running)
}
