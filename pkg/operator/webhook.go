package operator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"k8s.io/klog/v2"

	versioned "github.com/flinkops/flink-operator/pkg/clients/flink"
	"github.com/flinkops/flink-operator/pkg/clients/kubernetes"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/webhook"
)

// webhookStartTimeout bounds creating or adopting the self-managed
// certificate at start-up (a few API calls).
const webhookStartTimeout = 30 * time.Second

// webhookLiveLookupTimeout bounds the API server read of a target the
// informer cache does not hold yet; the API server gives the whole webhook
// call 10 s (the configuration's timeoutSeconds).
const webhookLiveLookupTimeout = 3 * time.Second

// certificateRunner is a certificate source that keeps itself current
// (re-reading files, or renewing the self-managed certificate).
type certificateRunner interface {
	webhook.CertificateSource
	Run(ctx context.Context)
}

// newWebhook prepares the validating admission webhook: its certificate
// (read, or created and published, before the port serves anything), its
// validator over the operator's informer listers, and its bound port. It
// returns a nil server when the webhook is disabled. Call it before the
// informer factories start, so the listers' informers start with them.
//
// The webhook serves on every replica, leader or not: the API server may
// call any of them, and answering needs only the caches. It is not part
// of /readyz, which is about the caches the controllers need.
func newWebhook(ctx context.Context, kube kubernetes.Interface, flink versioned.Interface, inf *Informers, opts *runState) (*server, certificateRunner, error) {
	w := opts.Webhook
	if w.BindAddress == "" || w.BindAddress == "0" {
		return nil, nil, nil
	}
	logger := klog.FromContext(ctx).WithName("webhook")
	ctx = klog.NewContext(ctx, logger)

	// Bind first: a taken port fails start-up before anything is written.
	ln, err := net.Listen("tcp", w.BindAddress)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook server: %w", err)
	}
	certs, err := webhookCertificates(ctx, kube, w)
	if err != nil {
		_ = ln.Close()
		return nil, nil, err
	}
	// The webhook judges with the configuration the controllers read at
	// each sync (the live one, dynamicconfig.go), not the start-up one.
	live := opts.live
	if live == nil {
		live = controllerctx.NewLiveConfig(opts.Config)
	}
	validator := webhook.NewValidator(webhook.Options{
		CurrentConfig: live.Load,
		Lookup:        webhook.NewListerLookup(inf.Flink).WithLiveFallback(flink, webhookLiveLookupTimeout),
		AccessReviews: kube.AuthorizationV1().SubjectAccessReviews(),
		ReviewKeys:    reviewKeys(opts.reviewKey),
	})
	srv := webhook.NewServer(ctx, validator, certs)
	return &server{name: "webhook", srv: srv, ln: tls.NewListener(ln, srv.TLSConfig)}, certs, nil
}

// webhookCertificates sets up the certificate source of the chosen mode;
// a self-managed certificate is created or adopted, and published, now.
func webhookCertificates(ctx context.Context, kube kubernetes.Interface, w WebhookOptions) (certificateRunner, error) {
	var certs certificateRunner
	switch w.CertMode {
	case WebhookCertFiles:
		if w.CertDir == "" {
			return nil, errors.New("--webhook-cert-mode=files needs --webhook-cert-dir, the directory holding tls.crt and tls.key")
		}
		files, err := webhook.NewFileCertificates(w.CertDir, 0, nil)
		if err != nil {
			return nil, err
		}
		certs = files
	case WebhookCertSelfManaged, "":
		ns := w.Namespace
		if ns == "" {
			ns = os.Getenv("POD_NAMESPACE")
		}
		managed, err := webhook.NewSelfManaged(webhook.SelfManagedOptions{
			Client:            kube,
			Namespace:         ns,
			SecretName:        w.SecretName,
			ServiceName:       w.ServiceName,
			WebhookConfigName: w.ConfigName,
			ExtraHosts:        w.ExtraHosts,
		})
		if err != nil {
			return nil, err
		}
		ensureCtx, cancel := context.WithTimeout(ctx, webhookStartTimeout)
		defer cancel()
		if err := managed.Ensure(ensureCtx); err != nil {
			return nil, fmt.Errorf("webhook certificate: %w", err)
		}
		certs = managed
	default:
		return nil, fmt.Errorf("--webhook-cert-mode %q: want %s or %s", w.CertMode, WebhookCertSelfManaged, WebhookCertFiles)
	}
	return certs, nil
}
