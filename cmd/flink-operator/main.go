// Command flink-operator runs the Kubernetes operator for Apache Flink.
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/operator"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		// One line, no stack trace: start-up errors are for people.
		fmt.Fprintf(os.Stderr, "flink-operator: %v\n", err)
		os.Exit(1)
	}
}

// settings are the parsed command line.
type settings struct {
	opts       operator.Options
	configFile string
}

func newFlags() (*pflag.FlagSet, *settings) {
	s := &settings{opts: operator.DefaultOptions()}
	opts := &s.opts

	fs := pflag.NewFlagSet("flink-operator", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig file. Empty: in-cluster config, or $KUBECONFIG.")
	fs.StringSliceVar(&opts.Namespaces, "namespaces", nil, "Comma-separated namespaces to watch. Empty: all namespaces (or kubernetes.operator.watched.namespaces from --config).")
	fs.BoolVar(&opts.LeaderElect, "leader-elect", false, "Elect a leader on a Lease so only one replica reconciles (default from kubernetes.operator.leader-election.enabled).")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader-election Lease. Empty: $POD_NAMESPACE, else \"default\".")
	fs.StringVar(&opts.LeaderElectionID, "leader-election-id", opts.LeaderElectionID, "Name of the leader-election Lease (default from kubernetes.operator.leader-election.lease-name when set).")
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", opts.MetricsAddr, "Address serving Prometheus /metrics. \"0\" disables it.")
	fs.BoolVar(&opts.Profiling, "profiling", false, "Serve Go's profiles at /debug/pprof/ on the metrics address (heap, CPU, goroutines); off by default, as the profiles show the operator's internals.")
	fs.StringVar(&opts.ProbeAddr, "health-probe-bind-address", opts.ProbeAddr, "Address serving /healthz and /readyz. \"0\" disables it.")
	fs.StringVar(&s.configFile, "config", "", "YAML file of kubernetes.operator.* defaults (flat or nested keys), as upstream's operator config. Read again every kubernetes.operator.dynamic.config.check.interval while kubernetes.operator.dynamic.config.enabled (default true): changes apply without a restart.")
	fs.StringVar(&opts.FlinkEndpoint, "flink-endpoint", operator.EndpointService, "How to reach Flink JobManager REST endpoints: \"service\" (the <name>-rest Service, for an operator in the cluster) or \"pod-ip\" (a ready JobManager pod's IP, for an operator outside it).")
	fs.StringSliceVar(&opts.Controllers, "controllers", nil, "Controllers to run: "+strings.Join(operator.ControllerNames, ", ")+" (default: all).")
	fs.DurationVar(&opts.ConnectTimeout, "connect-timeout", opts.ConnectTimeout, "How long to wait at start-up for the API server, and for the FlinkDeployment and FlinkSessionJob CRDs to be served, before giving up.")
	fs.Float32Var(&opts.KubeAPIQPS, "kube-api-qps", opts.KubeAPIQPS, "Requests per second each API client (flink.apache.org resources; Kubernetes objects) may send, sustained.")
	fs.IntVar(&opts.KubeAPIBurst, "kube-api-burst", opts.KubeAPIBurst, "Requests each API client may send in a burst above --kube-api-qps.")
	fs.Float32Var(&opts.EventsQPS, "events-qps", opts.EventsQPS, "Requests per second the event recorder may send; a budget of its own, so events never delay status writes.")
	fs.IntVar(&opts.EventsBurst, "events-burst", opts.EventsBurst, "Requests the event recorder may send in a burst above --events-qps.")
	wh := &opts.Webhook
	fs.StringVar(&wh.BindAddress, "webhook-bind-address", wh.BindAddress, "Address serving the validating admission webhook (HTTPS POST /validate), e.g. \":9443\". \"0\" disables it.")
	fs.StringVar(&wh.CertMode, "webhook-cert-mode", wh.CertMode, "Where the webhook's serving certificate comes from: \""+operator.WebhookCertSelfManaged+"\" (generated and rotated by the operator in --webhook-secret-name, CA patched into --webhook-config-name) or \""+operator.WebhookCertFiles+"\" (tls.crt/tls.key in --webhook-cert-dir, e.g. from cert-manager, re-read when they change).")
	fs.StringVar(&wh.CertDir, "webhook-cert-dir", wh.CertDir, "Directory holding tls.crt and tls.key (--webhook-cert-mode=files).")
	fs.StringVar(&wh.Namespace, "webhook-namespace", wh.Namespace, "Namespace of the webhook Service and certificate Secret. Empty: $POD_NAMESPACE.")
	fs.StringVar(&wh.SecretName, "webhook-secret-name", wh.SecretName, "Secret holding the self-managed webhook CA and certificate, shared by all replicas.")
	fs.StringVar(&wh.ServiceName, "webhook-service-name", wh.ServiceName, "Service in front of the webhook; the self-managed certificate is made for <service>.<namespace>.svc and <service>.<namespace>.svc.cluster.local.")
	fs.StringVar(&wh.ConfigName, "webhook-config-name", wh.ConfigName, "ValidatingWebhookConfiguration whose webhooks get the self-managed CA as caBundle.")
	fs.StringSliceVar(&wh.ExtraHosts, "webhook-extra-hosts", wh.ExtraHosts, "Comma-separated extra DNS names or IP addresses for the self-managed certificate (e.g. 127.0.0.1 when the API server calls a local operator).")

	klogFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	for _, name := range []string{"v", "vmodule"} {
		fs.AddGoFlag(klogFlags.Lookup(name))
	}
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: flink-operator [flags]\n\nRuns the Kubernetes operator for Apache Flink (flink.apache.org/v1beta1).\n\nFlags:\n%s", fs.FlagUsages())
	}
	return fs, s
}

func run(args []string) error {
	fs, s := newFlags()
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return nil
		}
		return err
	}
	opts, configFile := s.opts, s.configFile
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}

	klog.EnableContextualLogging(true)
	logger := klog.Background().WithName("flink-operator")
	ctx := klog.NewContext(context.Background(), logger)

	if configFile != "" {
		cfg, warnings, err := config.LoadFile(configFile)
		if err != nil {
			return err
		}
		for _, w := range warnings {
			logger.Info("Operator configuration warning", "key", w.Key, "message", w.Message)
		}
		opts.Config = cfg
		opts.ConfigFile = configFile // re-read with kubernetes.operator.dynamic.config.enabled
	}
	opts.NamespacesFromFlag = fs.Changed("namespaces")
	if !fs.Changed("namespaces") {
		opts.Namespaces = config.WatchedNamespaces(opts.Config)
	}
	if !fs.Changed("leader-elect") {
		enabled, err := opts.Config.Bool(config.KeyLeaderElectionEnabled)
		if err != nil {
			return err
		}
		opts.LeaderElect = enabled
	}
	if name := opts.Config.String(config.KeyLeaderElectionLeaseName); !fs.Changed("leader-election-id") && name != "" {
		opts.LeaderElectionID = name
	}

	// SIGTERM (kubelet) and SIGINT (Ctrl-C) start a graceful shutdown; a second
	// signal exits at once.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	defer klog.Flush()
	return operator.Run(ctx, opts)
}
