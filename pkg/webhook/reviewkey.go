package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/flinkops/flink-operator/pkg/clients/kubernetes"
)

// ReviewKeySecretKey is the key, in the review-key Secret, of the HMAC key
// that signs and verifies cross-namespace review stamps (pkg/reviewstamp).
const ReviewKeySecretKey = "key"

// reviewKeyBytes is the HMAC-SHA256 key size.
const reviewKeyBytes = 32

// ReviewKey keeps the HMAC key of cross-namespace review stamps in a Secret
// that every replica shares: the webhook of any replica signs, the leader's
// controllers verify. The first replica to find no Secret creates it; one
// that loses that race adopts the winner's. It is never rotated by the
// operator (a new key invalidates every stamp, and with it every
// cross-namespace reference until its object is admitted again); Run
// re-reads it, so replicas converge on a key an administrator replaced.
//
// Its own Secret, not the certificate's: it must exist whatever serves
// the certificate (overlays/cert-manager gives the operator no access to
// certificate Secrets), and rotating certificates must not touch it.
type ReviewKey struct {
	client          kubernetes.Interface
	namespace, name string
	key             atomic.Pointer[[]byte]
}

// NewReviewKey returns a ReviewKey for the Secret namespace/name; call
// Ensure (and Run) to load it.
func NewReviewKey(client kubernetes.Interface, namespace, name string) (*ReviewKey, error) {
	if client == nil || namespace == "" || name == "" {
		return nil, errors.New("the review key needs a client, and the namespace and name of its Secret")
	}
	return &ReviewKey{client: client, namespace: namespace, name: name}, nil
}

// Keys returns the loaded key, nil before the first successful Ensure.
func (k *ReviewKey) Keys() [][]byte {
	if p := k.key.Load(); p != nil {
		return [][]byte{*p}
	}
	return nil
}

// Ensure reads the Secret, creating it with a new random key if it does not
// exist, and serves its key.
func (k *ReviewKey) Ensure(ctx context.Context) error {
	secrets := k.client.CoreV1().Secrets(k.namespace)
	ref := klog.KRef(k.namespace, k.name)
	logger := klog.FromContext(ctx).WithValues("secret", ref)
	for range maxEnsureAttempts {
		secret, err := secrets.Get(ctx, k.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			key := make([]byte, reviewKeyBytes)
			if _, err := rand.Read(key); err != nil {
				return err
			}
			secret = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: k.name, Namespace: k.namespace,
					Labels: map[string]string{"app.kubernetes.io/managed-by": "flink-operator", "app.kubernetes.io/component": "webhook"}},
				Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{ReviewKeySecretKey: key},
			}
			created, err := secrets.Create(ctx, secret, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				logger.V(2).Info("Another replica created the review key Secret first; adopting it")
				continue
			}
			if err != nil {
				return fmt.Errorf("creating review key Secret %s: %w", ref, err)
			}
			logger.Info("Created the cross-namespace review key")
			secret = created
		} else if err != nil {
			return fmt.Errorf("reading review key Secret %s: %w", ref, err)
		}
		key := secret.Data[ReviewKeySecretKey]
		if len(key) < reviewKeyBytes {
			// Never replaced here: another replica may be signing with it.
			return fmt.Errorf("review key Secret %s: %q holds %d bytes, want at least %d", ref, ReviewKeySecretKey, len(key), reviewKeyBytes)
		}
		if old := k.key.Load(); old == nil || !bytes.Equal(*old, key) {
			key = bytes.Clone(key)
			k.key.Store(&key)
			logger.Info("Loaded the cross-namespace review key", "replaced", old != nil) // never the key itself
		}
		return nil
	}
	return fmt.Errorf("review key Secret %s kept changing under %d attempts to create it", ref, maxEnsureAttempts)
}

// Run calls Ensure every interval until ctx ends.
func (k *ReviewKey) Run(ctx context.Context, interval time.Duration) {
	logger := klog.FromContext(ctx)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		checkCtx, cancel := context.WithTimeout(ctx, interval)
		if err := k.Ensure(checkCtx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Loading the cross-namespace review key", "secret", klog.KRef(k.namespace, k.name))
		}
		cancel()
	}
}
