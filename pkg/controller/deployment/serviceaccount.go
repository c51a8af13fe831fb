package deployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkops/flink-operator/pkg/cluster"
)

// In native mode Flink's resource manager creates the TaskManager pods, and
// its Kubernetes HA keeps leader and checkpoint pointers in ConfigMaps,
// through the API server as the pods' ServiceAccount
// (kubernetes.service-account). A ServiceAccount that is missing, or may
// not do that, would leave the JobManager waiting for TaskManagers forever
// (Flink retries and logs, the operator sees a job that never gets slots).
// So before each native deploy the operator checks, with two cheap API
// calls per permission at most, that the ServiceAccount exists and that a
// SubjectAccessReview allows it what Flink needs, and reports a
// failure as status.error and a Warning event naming what is missing.
// Checks the operator itself may not make (no RBAC for ServiceAccounts or
// SubjectAccessReviews) are skipped, never block the deploy.

// defaultServiceAccount is Flink's default kubernetes.service-account
// (and the pod's when spec.serviceAccount is unset).
const defaultServiceAccount = "default"

// saCheckTimeout bounds the check's API calls.
const saCheckTimeout = 5 * time.Second

// flinkPermission is one thing Flink does as its ServiceAccount.
type flinkPermission struct {
	verb, group, resource string
	ha                    bool // only with Kubernetes HA
}

// flinkPermissions are what Flink's Kubernetes resource manager (pods) and
// Kubernetes HA (ConfigMaps: leader election, checkpoint pointers) do; the
// Role in manifests/flink-serviceaccount grants them (and upstream's chart
// a superset).
var flinkPermissions = []flinkPermission{
	{verb: "create", resource: "pods"},
	{verb: "watch", resource: "pods"},
	{verb: "delete", resource: "pods"},
	{verb: "get", group: "apps", resource: "deployments"}, // the owner reference of the TaskManager pods
	{verb: "create", resource: "configmaps", ha: true},
	{verb: "update", resource: "configmaps", ha: true},
	{verb: "watch", resource: "configmaps", ha: true},
}

// serviceAccountOf is the ServiceAccount Flink's pods of spec run as.
func serviceAccountOf(spec string, flinkConfig map[string]string) string {
	if sa := strings.TrimSpace(spec); sa != "" {
		return sa
	}
	if sa := strings.TrimSpace(flinkConfig["kubernetes.service-account"]); sa != "" {
		return sa
	}
	return defaultServiceAccount
}

// checkServiceAccount returns why Flink could not run as the ServiceAccount
// of the cluster built ("" when it can, or when the operator cannot tell).
func (c *Controller) checkServiceAccount(ctx context.Context, sc *syncState, built *cluster.Cluster) string {
	ctx, cancel := context.WithTimeout(ctx, saCheckTimeout)
	defer cancel()
	ns := sc.Obj().Namespace
	sa := serviceAccountOf(sc.Recorded().Spec.ServiceAccount, built.FlinkConfig)
	_, err := c.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, sa, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("ServiceAccount %s/%s does not exist: in native mode Flink creates the TaskManager pods as it (spec.serviceAccount). "+
			"Create it with the Role and RoleBinding of manifests/flink-serviceaccount (docs/install.md)", ns, sa)
	case err != nil:
		sc.Log().V(1).Info("Cannot read the Flink ServiceAccount; not checked", "serviceAccount", sa, "err", err)
	}
	ha := haEnabled(sc.Cfg)
	var missing []string
	for _, p := range flinkPermissions {
		if p.ha && !ha {
			continue
		}
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + ns + ":" + sa,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: p.verb, Group: p.group, Resource: p.resource,
			},
		}}
		res, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			sc.Log().V(1).Info("Cannot review the Flink ServiceAccount's permissions; not checked", "serviceAccount", sa, "err", err)
			return ""
		}
		if !res.Status.Allowed {
			what := p.resource
			if p.group != "" {
				what += "." + p.group
			}
			missing = append(missing, p.verb+" "+what)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return missingRightsMessage(ns, sa, missing, ha)
}

// missingRightsMessage says what the ServiceAccount sa may not do (missing:
// "verb resource[.group]", as reviewed). A SubjectAccessReview cannot tell
// no binding from a binding to a role without these rules, so the message
// names both: on a cluster whose kube-controller-manager runs without the
// clusterrole-aggregation-controller, the aggregated ClusterRoles edit and
// admin (what Flink's own documentation binds in native mode) are empty,
// and a binding to them grants nothing.
func missingRightsMessage(ns, sa string, missing []string, ha bool) string {
	first := strings.Fields(missing[0])
	return fmt.Sprintf("ServiceAccount %s/%s may not %s in namespace %s, which Flink's resource manager%s needs in native mode. "+
		"Grant it the Role of manifests/flink-serviceaccount (docs/install.md). "+
		"If a Role or ClusterRole is already bound to it, that role lacks these rules: an aggregated ClusterRole such as edit is empty "+
		"where kube-controller-manager runs without its clusterrole-aggregation-controller "+
		"(check: kubectl auth can-i %s %s -n %s --as=system:serviceaccount:%s:%s)",
		ns, sa, strings.Join(missing, ", "), ns, haSuffix(ha), first[0], first[1], ns, ns, sa)
}

func haSuffix(ha bool) string {
	if ha {
		return " and Kubernetes HA"
	}
	return ""
}
