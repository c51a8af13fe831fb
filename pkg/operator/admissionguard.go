package operator

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/clients/kubernetes"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
	"github.com/flinkops/flink-operator/pkg/validation"
	"github.com/flinkops/flink-operator/pkg/webhook"
)

// ReviewKeySecretName is the Secret, in the operator's namespace
// (--webhook-namespace, else $POD_NAMESPACE), holding the HMAC key of
// cross-namespace review stamps (pkg/reviewstamp). manifests/ grants
// access to this name only.
const ReviewKeySecretName = "flink-operator-review-key"

// reviewKeyRefresh is how often every replica re-reads the review key, so
// they converge on one an administrator replaced.
const reviewKeyRefresh = time.Minute

// A reference to another namespace is trusted only when the object itself
// proves the webhook reviewed it: the webhook's mutating step stamps the
// object after its SubjectAccessReview allowed the reference, and the
// controllers verify that stamp (reviewstamp.Verify) before acting. Whether a
// webhook is registered now says nothing about an object admitted before
// it was, while it failed open, or outside its selectors, so that is no
// longer asked.

// newReviewKey loads the review key when cross-namespace references are
// enabled (otherwise no stamp is ever made or needed, and the operator
// touches no Secret for it). A key that cannot be loaded now is retried by
// its Run; until then no stamp is made and none verifies, so cross-namespace
// references wait, never act unchecked.
func newReviewKey(ctx context.Context, kube kubernetes.Interface, opts Options) *webhook.ReviewKey {
	logger := klog.FromContext(ctx)
	if on, err := opts.Config.Bool(config.KeySnapshotCrossNamespaceReferencesEnabled); err != nil || !on {
		return nil
	}
	ns := opts.Webhook.Namespace
	if ns == "" {
		ns = os.Getenv("POD_NAMESPACE")
	}
	key, err := webhook.NewReviewKey(kube, ns, ReviewKeySecretName)
	if err != nil {
		logger.Error(err, "Cross-namespace references are enabled but cannot be reviewed: set --webhook-namespace or $POD_NAMESPACE; none will be acted on")
		return nil
	}
	ensureCtx, cancel := context.WithTimeout(ctx, webhookStartTimeout)
	defer cancel()
	if err := key.Ensure(ensureCtx); err != nil {
		logger.Error(err, "Loading the cross-namespace review key; retrying every minute, cross-namespace references wait until then")
	}
	return key
}

// reviewKeys is the key as the controllers and the webhook take it: a nil
// *ReviewKey must become a nil interface.
func reviewKeys(k *webhook.ReviewKey) reviewstamp.Keys {
	if k == nil {
		return nil
	}
	return k
}

// snapshotGuard is the snapshot controller's AdmissionGuard: a snapshot's
// reference to a job in another namespace is acted on only if the webhook
// stamped this snapshot after reviewing that reference.
func snapshotGuard(keys reviewstamp.Keys) func(ctx context.Context, s *v1beta1.FlinkStateSnapshot) error {
	return func(_ context.Context, s *v1beta1.FlinkStateSnapshot) error {
		ns, cross := validation.CrossNamespaceReference(s)
		if !cross || s.Spec.JobReference == nil {
			return nil
		}
		ref := reviewstamp.Reference{Kind: string(s.Spec.JobReference.Kind), Namespace: ns, Name: s.Spec.JobReference.Name}
		if _, err := reviewstamp.Verify(keys, "FlinkStateSnapshot", s, ref); err != nil {
			return fmt.Errorf("no valid review by the operator's admission webhook: %w", err)
		}
		return nil
	}
}
