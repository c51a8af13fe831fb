package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/flinkops/flink-operator/pkg/clients/kubernetes"
)

// Keys of the self-managed certificate Secret (kubernetes.io/tls, plus the
// CA as cert-manager lays it out, plus the CA key the operator signs with).
const (
	SecretCAFile    = "ca.crt"
	SecretCAKeyFile = "ca.key"
)

// Defaults of SelfManagedOptions.
const (
	DefaultCAValidity    = 10 * 365 * 24 * time.Hour
	DefaultCertValidity  = 365 * 24 * time.Hour
	DefaultRotateBefore  = 30 * 24 * time.Hour
	DefaultCheckInterval = time.Minute
)

// maxEnsureAttempts bounds the create/update races one Ensure rides out;
// every lost race means another replica wrote a Secret, which the next
// attempt adopts.
const maxEnsureAttempts = 5

// SelfManagedOptions configure SelfManaged.
type SelfManagedOptions struct {
	// Client reads and writes the Secret and the webhook configuration.
	Client kubernetes.Interface
	// Namespace and SecretName locate the Secret holding CA and certificate.
	Namespace, SecretName string
	// ServiceName is the webhook Service: the certificate is valid for
	// <service>.<namespace>.svc and <service>.<namespace>.svc.cluster.local.
	ServiceName string
	// ExtraHosts are more DNS names or IP addresses for the certificate,
	// for example 127.0.0.1 when the API server calls a local operator.
	ExtraHosts []string
	// WebhookConfigName is the ValidatingWebhookConfiguration (and the
	// MutatingWebhookConfiguration of the same name) whose
	// webhooks get the CA as caBundle; empty patches nothing.
	WebhookConfigName string
	// CAValidity, CertValidity, RotateBefore and CheckInterval default to
	// 10 years, 1 year, 30 days and 1 minute. A certificate (or the CA) is
	// replaced once less than RotateBefore of it remains.
	CAValidity, CertValidity, RotateBefore, CheckInterval time.Duration
	// Clock is the real clock when nil.
	Clock clock.WithTicker
}

// SelfManaged generates the webhook's CA and serving certificate, keeps
// them in a Secret that every replica shares, patches the CA into the
// ValidatingWebhookConfiguration, and renews both before they expire.
//
// Replicas converge on one Secret: whoever creates it first wins, and a
// replica that loses the create or an update (AlreadyExists, Conflict)
// reads and adopts the winner's. The CA lives 10 years and is rarely
// replaced; serving certificates are renewed with the same CA, so the
// caBundle does not change and replicas still serving the previous
// certificate stay trusted. When the CA itself is replaced, the old one
// stays in the bundle until it expires, for the same reason.
type SelfManaged struct {
	opts  SelfManagedOptions
	hosts []string

	mu       sync.Mutex // serialises Ensure
	current  atomic.Pointer[tls.Certificate]
	caBundle atomic.Pointer[[]byte]
}

// NewSelfManaged checks the options; call Ensure before serving.
func NewSelfManaged(opts SelfManagedOptions) (*SelfManaged, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("self-managed webhook certificates need a Kubernetes client")
	case opts.Namespace == "":
		return nil, errors.New("self-managed webhook certificates need the namespace of their Secret (--webhook-namespace or $POD_NAMESPACE)")
	case opts.SecretName == "":
		return nil, errors.New("self-managed webhook certificates need a Secret name")
	case opts.ServiceName == "":
		return nil, errors.New("self-managed webhook certificates need the webhook Service name")
	}
	setDefault := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	setDefault(&opts.CAValidity, DefaultCAValidity)
	setDefault(&opts.CertValidity, DefaultCertValidity)
	setDefault(&opts.RotateBefore, DefaultRotateBefore)
	setDefault(&opts.CheckInterval, DefaultCheckInterval)
	if opts.RotateBefore >= opts.CertValidity || opts.RotateBefore >= opts.CAValidity {
		return nil, fmt.Errorf("webhook certificate rotation %v before expiry must be shorter than the validity (%v, CA %v)", opts.RotateBefore, opts.CertValidity, opts.CAValidity)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	m := &SelfManaged{opts: opts}
	svc := opts.ServiceName + "." + opts.Namespace + ".svc"
	m.hosts = []string{svc, svc + ".cluster.local"}
	for _, h := range opts.ExtraHosts {
		if h != "" && !slices.Contains(m.hosts, h) {
			m.hosts = append(m.hosts, h)
		}
	}
	return m, nil
}

// Hosts are the DNS names and IPs the serving certificate is made for.
func (m *SelfManaged) Hosts() []string { return slices.Clone(m.hosts) }

// GetCertificate returns the current serving certificate (nil before the
// first Ensure, which fails the handshake).
func (m *SelfManaged) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := m.current.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("the webhook serving certificate is not ready yet")
}

// CABundle is the PEM bundle the API server must trust (nil before Ensure).
func (m *SelfManaged) CABundle() []byte {
	if b := m.caBundle.Load(); b != nil {
		return *b
	}
	return nil
}

// Run calls Ensure every CheckInterval until ctx ends: it renews what is
// about to expire, adopts what another replica renewed and restores a
// caBundle that someone reset (a re-applied manifest).
func (m *SelfManaged) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ticker := m.opts.Clock.NewTicker(m.opts.CheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		checkCtx, cancel := context.WithTimeout(ctx, m.opts.CheckInterval)
		if err := m.Ensure(checkCtx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Checking the webhook certificate", "secret", klog.KRef(m.opts.Namespace, m.opts.SecretName))
		}
		cancel()
	}
}

// Ensure makes the Secret hold a valid CA and serving certificate (creating
// or renewing them if needed, or adopting another replica's), serves that
// certificate and patches the CA into the webhook configuration.
func (m *SelfManaged) Ensure(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	secret, err := m.ensureSecret(ctx)
	if err != nil {
		return err
	}
	if err := m.adopt(ctx, secret); err != nil {
		return err
	}
	return m.patchCABundle(ctx)
}

func (m *SelfManaged) ensureSecret(ctx context.Context) (*corev1.Secret, error) {
	secrets := m.opts.Client.CoreV1().Secrets(m.opts.Namespace)
	ref := klog.KRef(m.opts.Namespace, m.opts.SecretName)
	logger := klog.FromContext(ctx).WithValues("secret", ref)
	for range maxEnsureAttempts {
		now := m.opts.Clock.Now()
		secret, err := secrets.Get(ctx, m.opts.SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			data, err := m.renew(nil, now)
			if err != nil {
				return nil, err
			}
			secret := m.newSecret(data)
			secret.OwnerReferences = m.serviceOwner(ctx)
			created, err := secrets.Create(ctx, secret, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				logger.V(2).Info("Another replica created the webhook certificate Secret first; adopting it")
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("creating webhook certificate Secret %s: %w", ref, err)
			}
			logger.Info("Created the webhook CA and serving certificate")
			return created, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading webhook certificate Secret %s: %w", ref, err)
		}
		reason := m.needsRenewal(secret.Data, now)
		if reason == "" {
			return secret, nil
		}
		data, err := m.renew(secret.Data, now)
		if err != nil {
			return nil, err
		}
		updated := secret.DeepCopy()
		updated.Data = data // its type stays: a type cannot change, and the keys suit Opaque too
		updated, err = secrets.Update(ctx, updated, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			logger.V(2).Info("Another replica changed the webhook certificate Secret first; re-reading it")
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("renewing webhook certificate Secret %s: %w", ref, err)
		}
		logger.Info("Renewed the webhook certificate", "reason", reason)
		return updated, nil
	}
	return nil, fmt.Errorf("webhook certificate Secret %s kept changing under %d attempts to write it", ref, maxEnsureAttempts)
}

// serviceOwner makes the webhook Service the owner of a new Secret: whoever
// removes the install (helm uninstall, kubectl delete -k) removes the
// Service, and the garbage collector then removes the certificate the
// operator created, which no manifest names. Not blocking the Service's
// deletion (that would need the finalizers right on Services). A Service
// that cannot be read (not there yet, no RBAC) leaves the Secret unowned, as
// before: it is only left behind.
func (m *SelfManaged) serviceOwner(ctx context.Context) []metav1.OwnerReference {
	svc, err := m.opts.Client.CoreV1().Services(m.opts.Namespace).Get(ctx, m.opts.ServiceName, metav1.GetOptions{})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Webhook certificate Secret created without an owner: the webhook Service cannot be read",
			"service", klog.KRef(m.opts.Namespace, m.opts.ServiceName), "err", err)
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID}}
}

func (m *SelfManaged) newSecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      m.opts.SecretName,
			Namespace: m.opts.Namespace,
			Labels:    map[string]string{"app.kubernetes.io/managed-by": "flink-operator", "app.kubernetes.io/component": "webhook"},
		},
		Type: corev1.SecretTypeTLS,
		Data: data,
	}
}

// caState is the CA part of a Secret: the signing CA and the bundle.
type caState struct {
	ca     *keyPair            // nil when missing or broken
	bundle []*x509.Certificate // current CA first, then older ones
}

func parseCA(data map[string][]byte) caState {
	bundle, err := parseCertificates(data[SecretCAFile])
	if err != nil {
		return caState{}
	}
	ca, err := parseKeyPair(encodeBundle(bundle[0]), data[SecretCAKeyFile])
	if err != nil || !ca.cert.IsCA {
		return caState{bundle: bundle}
	}
	return caState{ca: ca, bundle: bundle}
}

// needsRenewal says why the Secret's content must be replaced, "" if not.
func (m *SelfManaged) needsRenewal(data map[string][]byte, now time.Time) string {
	st := parseCA(data)
	switch {
	case st.ca == nil:
		return "no usable CA"
	case st.ca.cert.NotAfter.Sub(now) < m.opts.RotateBefore:
		return "CA expires " + st.ca.cert.NotAfter.UTC().Format(time.RFC3339)
	}
	serving, err := parseKeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	switch {
	case err != nil:
		return "no usable serving certificate"
	case serving.cert.CheckSignatureFrom(st.ca.cert) != nil:
		return "serving certificate not signed by the CA"
	case serving.cert.NotAfter.Sub(now) < m.opts.RotateBefore:
		return "serving certificate expires " + serving.cert.NotAfter.UTC().Format(time.RFC3339)
	case !coversHosts(serving.cert, m.hosts):
		return "serving certificate lacks some of the hosts " + fmt.Sprint(m.hosts)
	}
	return ""
}

// renew returns the Secret data with what needs renewing replaced: the CA
// when it is missing or about to expire (the old one stays in the bundle
// while it is valid), and the serving certificate.
func (m *SelfManaged) renew(old map[string][]byte, now time.Time) (map[string][]byte, error) {
	st := parseCA(old)
	ca := st.ca
	var bundle []*x509.Certificate
	if ca == nil || ca.cert.NotAfter.Sub(now) < m.opts.RotateBefore {
		var err error
		if ca, err = newCA("flink-operator-webhook-ca@"+now.UTC().Format(time.RFC3339), now, m.opts.CAValidity); err != nil {
			return nil, err
		}
	}
	bundle = append(bundle, ca.cert)
	for _, c := range st.bundle {
		if now.Before(c.NotAfter) && !c.Equal(ca.cert) {
			bundle = append(bundle, c)
		}
	}
	// A replica with other --webhook-extra-hosts may run next to this one
	// during a rollout: keep the hosts of a still-valid certificate, so the
	// two do not take turns replacing each other's.
	hosts := slices.Clone(m.hosts)
	if prev, err := parseKeyPair(old[corev1.TLSCertKey], old[corev1.TLSPrivateKeyKey]); err == nil && now.Before(prev.cert.NotAfter) {
		for _, h := range certHosts(prev.cert) {
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	serving, err := newServing(ca, hosts, now, m.opts.CertValidity)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		SecretCAFile:            encodeBundle(bundle...),
		SecretCAKeyFile:         ca.keyPEM,
		corev1.TLSCertKey:       serving.certPEM,
		corev1.TLSPrivateKeyKey: serving.keyPEM,
	}, nil
}

// adopt serves the Secret's certificate, if it is not the one served.
func (m *SelfManaged) adopt(ctx context.Context, secret *corev1.Secret) error {
	certPEM, keyPEM := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	bundle := secret.Data[SecretCAFile]
	if cur := m.current.Load(); cur != nil && len(cur.Certificate) > 0 {
		if leaf, err := parseCertificates(certPEM); err == nil && bytes.Equal(leaf[0].Raw, cur.Certificate[0]) {
			m.caBundle.Store(&bundle)
			return nil
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("webhook certificate Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	m.current.Store(&pair)
	m.caBundle.Store(&bundle)
	klog.FromContext(ctx).Info("Serving the webhook certificate", append([]any{"secret", klog.KObj(secret)}, certLogValues(&pair)...)...)
	return nil
}

// patchCABundle writes the CA bundle into every webhook of the configured
// ValidatingWebhookConfiguration and of the MutatingWebhookConfiguration of
// the same name (the step that stamps reviewed cross-namespace references).
// A missing configuration is not an error: it may be installed after the
// operator, and Run patches it then.
func (m *SelfManaged) patchCABundle(ctx context.Context) error {
	name := m.opts.WebhookConfigName
	if name == "" {
		return nil
	}
	bundle := m.CABundle()
	logger := klog.FromContext(ctx)
	admission := m.opts.Client.AdmissionregistrationV1()
	err := patchConfig(ctx, logger, "ValidatingWebhookConfiguration", name, bundle,
		func(ctx context.Context) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
			return admission.ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		},
		func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
			out := make([]*admissionregistrationv1.WebhookClientConfig, len(cfg.Webhooks))
			for i := range cfg.Webhooks {
				out[i] = &cfg.Webhooks[i].ClientConfig
			}
			return out
		},
		func(ctx context.Context, cfg *admissionregistrationv1.ValidatingWebhookConfiguration) error {
			_, err := admission.ValidatingWebhookConfigurations().Update(ctx, cfg, metav1.UpdateOptions{})
			return err
		})
	if err != nil {
		return err
	}
	return patchConfig(ctx, logger, "MutatingWebhookConfiguration", name, bundle,
		func(ctx context.Context) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
			return admission.MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		},
		func(cfg *admissionregistrationv1.MutatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
			out := make([]*admissionregistrationv1.WebhookClientConfig, len(cfg.Webhooks))
			for i := range cfg.Webhooks {
				out[i] = &cfg.Webhooks[i].ClientConfig
			}
			return out
		},
		func(ctx context.Context, cfg *admissionregistrationv1.MutatingWebhookConfiguration) error {
			_, err := admission.MutatingWebhookConfigurations().Update(ctx, cfg, metav1.UpdateOptions{})
			return err
		})
}

// patchConfig writes bundle into the caBundle of every webhook of one
// webhook configuration (read fresh, written only when something changed).
func patchConfig[T any](ctx context.Context, logger klog.Logger, kind, name string, bundle []byte,
	get func(context.Context) (*T, error), clientConfigs func(*T) []*admissionregistrationv1.WebhookClientConfig,
	update func(context.Context, *T) error) error {
	logger = logger.WithValues(kind, name)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := get(ctx)
		if apierrors.IsNotFound(err) {
			logger.V(1).Info(kind + " not found; its caBundle is patched once it exists")
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s %s: %w", kind, name, err)
		}
		changed := 0
		for _, cc := range clientConfigs(cfg) {
			if !bytes.Equal(cc.CABundle, bundle) {
				cc.CABundle = bundle
				changed++
			}
		}
		if changed == 0 {
			return nil
		}
		if err := update(ctx, cfg); err != nil {
			if apierrors.IsConflict(err) {
				return err // retried
			}
			return fmt.Errorf("patching caBundle of %s %s: %w", kind, name, err)
		}
		logger.Info("Patched the webhook CA into the "+kind, "webhooks", changed)
		return nil
	})
}
