package localcluster

import (
	"context"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// aggregationWait bounds how long the clusterrole-aggregation-controller
// may take to fill the edit ClusterRole after kube-controller-manager is
// healthy (about a second here).
const aggregationWait = 30 * time.Second

// TestClusterRoleAggregation: the aggregated ClusterRoles get their rules,
// as on any real cluster, so the RBAC Flink's documentation gives for
// native mode (a binding to the ClusterRole edit) grants what it says: the
// edit ClusterRole allows creating pods, and a ServiceAccount bound to it
// in a namespace may create pods there.
func TestClusterRoleAggregation(t *testing.T) {
	start, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(start, Options{Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	admin := kubernetes.NewForConfigOrDie(c.RESTConfig())

	ctx, cancel := context.WithTimeout(context.Background(), aggregationWait)
	defer cancel()
	t0 := time.Now()
	allows := func(role *rbacv1.ClusterRole, verb, group, resource string) bool {
		for _, r := range role.Rules {
			if slices.Contains(r.Verbs, verb) && slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) {
				return true
			}
		}
		return false
	}
	// The controller fills edit as the API server's bootstrap creates the
	// aggregate-to-edit roles, so a first read may hold only part of the
	// rules: wait until every permission Flink needs is there.
	needed := [][3]string{{"create", "", "pods"}, {"delete", "", "pods"}, {"watch", "", "pods"}, {"update", "", "configmaps"}, {"get", "apps", "deployments"}}
	missing := func(role *rbacv1.ClusterRole) [][3]string {
		var out [][3]string
		for _, p := range needed {
			if role == nil || !allows(role, p[0], p[1], p[2]) {
				out = append(out, p)
			}
		}
		return out
	}
	var edit *rbacv1.ClusterRole
	for {
		edit, err = admin.RbacV1().ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
		if err == nil && len(missing(edit)) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			rules := -1
			if edit != nil {
				rules = len(edit.Rules)
			}
			t.Fatalf("ClusterRole edit still lacks %v %s after kube-controller-manager started (%d rules, last error %v): is the clusterrole-aggregation-controller running?",
				missing(edit), aggregationWait, rules, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("ClusterRole edit aggregated in %s: %d rules", time.Since(t0).Round(time.Millisecond), len(edit.Rules))

	// Flink's native-mode RBAC, in one namespace: a ServiceAccount bound to
	// edit may create pods there.
	const ns, sa = "default", "flink"
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flink-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	review := func() bool {
		r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":" + sa,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	// The API server's RBAC authorizer reads bindings from its own
	// informers: the new RoleBinding may take a moment to count.
	waitFor(ctx, t, "ServiceAccount "+ns+"/"+sa+" bound to edit may create pods", review)
}
