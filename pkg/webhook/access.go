package webhook

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
	"github.com/flinkops/flink-operator/pkg/validation"
)

// crossReference is a reference from the object under review to an
// object in another namespace, and the right it takes.
type crossReference struct {
	field     string // the referring field, for messages
	target    string // "a job", "a FlinkStateSnapshot"
	verb      string
	kind      string // of the referenced object
	resource  string // plural in flink.apache.org
	namespace string
	name      string
	relation  string // "refers to", "starts from"
	why       string // why the right is required
}

// snapshotJobReference is a snapshot's cross-namespace job reference: its
// creator must be allowed to update the job, because the snapshot triggers
// savepoints of it and may dispose of them, which is as much as editing it.
// nil when the reference stays in the namespace; a denial when the kind is
// not one a right can be asked for.
func snapshotJobReference(s *v1beta1.FlinkStateSnapshot) (*crossReference, *admissionv1.AdmissionResponse) {
	ns, cross := validation.CrossNamespaceReference(s)
	if !cross || s.Spec.JobReference.Name == "" {
		return nil, nil
	}
	ref := s.Spec.JobReference
	var resource string
	switch ref.Kind {
	case v1beta1.JobReferenceKindDeployment:
		resource = "flinkdeployments"
	case v1beta1.JobReferenceKindSessionJob:
		resource = "flinksessionjobs"
	default:
		return nil, deny(http.StatusForbidden, fmt.Sprintf("spec.jobReference.kind %q: want FlinkDeployment or FlinkSessionJob", ref.Kind))
	}
	return &crossReference{
		field: "spec.jobReference", target: "a job", verb: "update", kind: string(ref.Kind), resource: resource, namespace: ns, name: ref.Name,
		relation: "which this FlinkStateSnapshot refers to",
		why:      "a snapshot may refer to a job in another namespace only if its creator may update that job",
	}, nil
}

// initialSnapshotReference is a job's cross-namespace
// spec.job.initialStateSnapshotRef: its author must be allowed to read the
// snapshot, whose state the job then starts from.
func initialSnapshotReference(kind, namespace string, job *v1beta1.JobSpec) *crossReference {
	ref, cross := validation.CrossNamespaceSnapshotRef(namespace, job)
	if !cross || ref.Name == "" {
		return nil
	}
	return &crossReference{
		field: "spec.job.initialStateSnapshotRef", target: "a FlinkStateSnapshot", verb: "get", kind: "FlinkStateSnapshot", resource: "flinkstatesnapshots",
		namespace: ref.Namespace, name: ref.Name,
		relation: "which this " + kind + " starts from",
		why:      "a job may start from a snapshot in another namespace only if its author may read that snapshot",
	}
}

// stamped is what a review stamp names of the reference.
func (r *crossReference) stamped() reviewstamp.Reference {
	return reviewstamp.Reference{Kind: r.kind, Namespace: r.namespace, Name: r.name}
}

// authorizeCrossNamespace admits a reference to another namespace only if
// the operator allows such references and the requesting user holds the
// reference's right there (a SubjectAccessReview for the user, groups, uid
// and extra of the request), cfg being the operator configuration of the
// admission. nil means authorized.
func (v *Validator) authorizeCrossNamespace(ctx context.Context, req *admissionv1.AdmissionRequest, cfg config.Config, ref *crossReference) *admissionv1.AdmissionResponse {
	if enabled, err := cfg.Bool(config.KeySnapshotCrossNamespaceReferencesEnabled); err != nil || !enabled {
		return deny(http.StatusForbidden, fmt.Sprintf(
			"%s.namespace %q: references to %s in another namespace are disabled: the operator option %s is false (an administrator can enable it in the operator configuration)",
			ref.field, ref.namespace, ref.target, config.KeySnapshotCrossNamespaceReferencesEnabled))
	}
	user := req.UserInfo
	what := fmt.Sprintf("%s %s.%s %q in namespace %q", ref.verb, ref.resource, v1beta1.GroupName, ref.name, ref.namespace)
	if v.reviews == nil {
		return deny(http.StatusInternalServerError, fmt.Sprintf("cannot check whether user %q may %s: the webhook has no access to SubjectAccessReviews", user.Username, what))
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user.Username,
		Groups: user.Groups,
		UID:    user.UID,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ref.namespace,
			Verb:      ref.verb,
			Group:     v1beta1.GroupName,
			Resource:  ref.resource,
			Name:      ref.name,
		},
	}}
	if len(user.Extra) > 0 {
		review.Spec.Extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, vals := range user.Extra {
			review.Spec.Extra[k] = authorizationv1.ExtraValue(vals)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, v.reviewTimeout)
	defer cancel()
	result, err := v.reviews.Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return deny(http.StatusInternalServerError, fmt.Sprintf("checking whether user %q may %s: %v", user.Username, what, err))
	}
	klog.FromContext(ctx).V(2).Info("Cross-namespace reference reviewed", "field", ref.field, "target", klog.KRef(ref.namespace, ref.name),
		"resource", ref.resource, "verb", ref.verb, "allowed", result.Status.Allowed, "reason", result.Status.Reason)
	if !result.Status.Allowed || result.Status.Denied {
		msg := fmt.Sprintf("user %q may not %s, %s: %s", user.Username, what, ref.relation, ref.why)
		if r := result.Status.Reason; r != "" {
			msg += " (" + r + ")"
		}
		return deny(http.StatusForbidden, msg)
	}
	return nil
}
