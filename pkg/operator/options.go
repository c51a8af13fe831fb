// Package operator wires the flink-operator together: API clients, the shared
// informer factories, leader election, the health and metrics servers and the
// controllers. It owns process lifetime, not reconciliation logic.
package operator

import (
	"time"

	"github.com/flinkops/flink-operator/pkg/config"
)

// Options are the operator's process-level settings: what a user sets, with
// flags or the --config file, and nothing decided while the operator runs
// (that is runState's, operator.go).
type Options struct {
	// Kubeconfig is a kubeconfig path; empty means in-cluster (or $KUBECONFIG).
	Kubeconfig string
	// Namespaces to watch; empty means all namespaces.
	Namespaces []string
	// LeaderElect turns on leader election on a Lease.
	LeaderElect bool
	// LeaderElectionNamespace holds the Lease.
	LeaderElectionNamespace string
	// LeaderElectionID is the Lease name.
	LeaderElectionID string
	// MetricsAddr serves /metrics; empty or "0" disables it.
	MetricsAddr string
	// Profiling adds Go's /debug/pprof/ handlers to the metrics server.
	Profiling bool
	// ProbeAddr serves /healthz and /readyz; empty or "0" disables it.
	ProbeAddr string
	// Config is the operator-wide configuration (defaults plus --config file).
	Config config.Config
	// ConfigFile is the --config file Config was loaded from; with
	// kubernetes.operator.dynamic.config.enabled it is read again every
	// check interval and a change applies without a restart
	// (dynamicconfig.go). Empty: nothing to re-read.
	ConfigFile string
	// NamespacesFromFlag says Namespaces came from --namespaces: the file's
	// kubernetes.operator.watched.namespaces then never changes them.
	NamespacesFromFlag bool
	// ConnectTimeout bounds the start-up check that the API server answers.
	ConnectTimeout time.Duration
	// ShutdownTimeout bounds graceful shutdown of the HTTP servers.
	ShutdownTimeout time.Duration
	// FlinkEndpoint chooses how Flink REST endpoints are reached:
	// EndpointService (default) or EndpointPodIP.
	FlinkEndpoint string
	// Controllers names the controllers to run; empty means all.
	Controllers []string
	// ResyncPeriod of the shared informers (0 = none).
	ResyncPeriod time.Duration
	// Webhook configures the validating admission webhook.
	Webhook WebhookOptions
	// KubeAPIQPS and KubeAPIBurst pace each of the operator's API clients
	// (one for flink.apache.org resources, one for Kubernetes objects):
	// client-go's defaults (5/s, burst 10) serialise thousands of resources
	// behind an hour of throttled writes.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// EventsQPS and EventsBurst pace the event recorder's own client, so
	// that events never take the budget of status writes.
	EventsQPS   float32
	EventsBurst int
}

// DefaultOptions returns the defaults the flags start from.
func DefaultOptions() Options {
	return Options{
		LeaderElectionID: "flink-operator-lease",
		MetricsAddr:      ":8080",
		ProbeAddr:        ":8081",
		ConnectTimeout:   15 * time.Second,
		ShutdownTimeout:  10 * time.Second,
		Config:           config.Defaults(),
		KubeAPIQPS:       DefaultKubeAPIQPS,
		KubeAPIBurst:     DefaultKubeAPIBurst,
		EventsQPS:        DefaultEventsQPS,
		EventsBurst:      DefaultEventsBurst,
		Webhook: WebhookOptions{
			BindAddress: "0",
			CertMode:    WebhookCertSelfManaged,
			SecretName:  "flink-operator-webhook-cert",
			ServiceName: "flink-operator-webhook",
			ConfigName:  "flink-operator",
		},
	}
}

// Client budgets. A resource's lifecycle costs a few writes (a snapshot
// three), and 1,000 savepoints created at once cost 3,000 within seconds:
// 500 writes/s per client (bursts of 1,000) lets the API server, not the
// client, set the pace (measured in docs/performance.md), while a runaway
// resource is still bounded by the per-resource rate limit and the API
// server's priority and fairness. Events, a best-effort record, get a
// separate and smaller budget.
const (
	DefaultKubeAPIQPS   float32 = 500
	DefaultKubeAPIBurst         = 1000
	DefaultEventsQPS    float32 = 20
	DefaultEventsBurst          = 100
)

// Certificate modes of the webhook.
const (
	// WebhookCertSelfManaged: the operator generates, stores (in a Secret),
	// publishes (caBundle) and rotates its own CA and certificate.
	WebhookCertSelfManaged = "self-managed"
	// WebhookCertFiles: tls.crt and tls.key are read from a directory (a
	// mounted cert-manager Secret, say) and re-read when they change.
	WebhookCertFiles = "files"
)

// WebhookOptions configure the validating admission webhook, which every
// replica serves, leader or not.
type WebhookOptions struct {
	// BindAddress serves HTTPS POST /validate; empty or "0" disables the
	// webhook.
	BindAddress string
	// CertMode is WebhookCertSelfManaged or WebhookCertFiles.
	CertMode string
	// CertDir holds tls.crt and tls.key (files mode).
	CertDir string
	// Namespace of the Service and the certificate Secret; empty means
	// $POD_NAMESPACE (self-managed mode).
	Namespace string
	// SecretName holds the self-managed CA and certificate.
	SecretName string
	// ServiceName is the webhook Service; the self-managed certificate is
	// made for <service>.<namespace>.svc(.cluster.local).
	ServiceName string
	// ConfigName is the ValidatingWebhookConfiguration whose caBundle the
	// self-managed mode patches.
	ConfigName string
	// ExtraHosts are more DNS names or IPs for the self-managed
	// certificate (127.0.0.1 for an API server calling a local operator).
	ExtraHosts []string
}
