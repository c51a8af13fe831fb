package operator

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// admissionGuardTTL is how long one answer about the webhook registration is
// trusted: a cross-namespace snapshot waits at most this long after the
// webhook is registered, and at most this long is acted on after it is
// removed.
const admissionGuardTTL = 30 * time.Second

// admissionGuard answers the snapshot controller's question "are
// FlinkStateSnapshots admitted through our validating webhook?" (its
// SubjectAccessReview is what makes a cross-namespace reference
// trustworthy) from the ValidatingWebhookConfiguration the operator
// manages, read at most every admissionGuardTTL.
type admissionGuard struct {
	kube  kubernetes.Interface
	name  string
	clock clock.PassiveClock

	mu      sync.Mutex
	checked time.Time
	last    error
}

func newAdmissionGuard(kube kubernetes.Interface, name string, clk clock.PassiveClock) *admissionGuard {
	return &admissionGuard{kube: kube, name: name, clock: clk}
}

// Check returns nil when the webhook guards snapshot creation.
func (g *admissionGuard) Check(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	if !g.checked.IsZero() && now.Sub(g.checked) < admissionGuardTTL {
		return g.last
	}
	vwc, err := g.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, g.name, metav1.GetOptions{})
	if err != nil {
		g.last = fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", g.name, err)
	} else {
		g.last = guardsSnapshots(vwc)
	}
	g.checked = now
	return g.last
}

// guardsSnapshots reports whether a ValidatingWebhookConfiguration sends
// every FlinkStateSnapshot CREATE to a webhook that fails closed.
func guardsSnapshots(vwc *admissionregistrationv1.ValidatingWebhookConfiguration) error {
	for _, w := range vwc.Webhooks {
		if w.FailurePolicy != nil && *w.FailurePolicy != admissionregistrationv1.Fail {
			continue // a webhook that may be skipped guards nothing
		}
		for _, r := range w.Rules {
			if matches(r.APIGroups, "flink.apache.org") && matches(r.Resources, "flinkstatesnapshots") &&
				slices.ContainsFunc(r.Operations, func(op admissionregistrationv1.OperationType) bool {
					return op == admissionregistrationv1.Create || op == admissionregistrationv1.OperationAll
				}) {
				return nil
			}
		}
	}
	return fmt.Errorf("ValidatingWebhookConfiguration %s has no webhook with failurePolicy Fail for CREATE of flinkstatesnapshots.flink.apache.org", vwc.Name)
}

func matches(list []string, want string) bool {
	return slices.Contains(list, want) || slices.Contains(list, "*")
}
