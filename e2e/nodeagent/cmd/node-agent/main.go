// Command node-agent runs the e2e/nodeagent node agent: it registers a Node
// with the API server, binds pending pods to it and runs them as local
// processes (real Flink JVMs, fake JobManagers, the operator's image), until
// SIGTERM or SIGINT, when it stops every process it started and exits.
//
//	node-agent --kubeconfig admin.kubeconfig --dir /tmp/agent [--node-name local-node]
//	           [--record state.json] [--ready-file f] [--fake-jobmanager bin] [--max-grace 10s]
//	           [--tls-cert-file crt --tls-private-key-file key --client-ca-file ca.crt] [--no-mount-namespaces]
//	           [--host-commands] [--operator-binary bin] [--busybox bin]
//
// --host-commands (off by default) runs containers of the image
// nodeagent.HostCommandImage: their command (found on the agent's PATH) with
// the agent's environment. Whoever may create pods can then run anything as
// the agent, so only a harness that needs it turns it on (e2e/upstreame2e
// runs the operator as a pod with it).
//
// --operator-binary (go build ./cmd/flink-operator; e2e/localcluster passes
// its build) runs containers of the operator's image,
// ghcr.io/flinkops/flink-operator, as that binary with the containers'
// args; without it such containers are not supported.
//
// --busybox (a static busybox, Debian's busybox-static; e2e/localcluster
// passes one it fetches) runs containers of the busybox image with it, in a
// root like the image's; without it such containers are not supported.
//
// With the TLS flags (the kubelet's names) it serves the kubelet API's
// GET /containerLogs on 127.0.0.1 and a free port, for `kubectl logs`.
//
// e2e/localcluster starts it (Options.NodeAgent); see e2e/nodeagent/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/flinkops/flink-operator/e2e/localcluster"
	"github.com/flinkops/flink-operator/e2e/nodeagent"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "node-agent:", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of a user that may manage nodes, leases and pods (required)")
	nodeName := flag.String("node-name", nodeagent.DefaultNodeName, "name of the Node to register")
	dir := flag.String("dir", "", "work directory: pod directories (volumes, logs, hosts files) (required)")
	record := flag.String("record", "", "record the started processes in this file (localcluster state-file format), for stale cleanup")
	readyFile := flag.String("ready-file", "", "write this file once the node is registered and pods run")
	fakeJM := flag.String("fake-jobmanager", "", "fake-jobmanager binary (default: go build ./cmd/fake-jobmanager when first needed)")
	podRange := flag.String("pod-range", "", "pod IP range, a loopback prefix such as 127.100.0.0/16 (default: the first free /16 from 127.100.0.0)")
	maxGrace := flag.Duration("max-grace", 10*time.Second, "cap on a pod's termination grace period")
	tlsCert := flag.String("tls-cert-file", "", "serving certificate of the kubelet API (containerLogs) for 127.0.0.1; with --tls-private-key-file and --client-ca-file")
	tlsKey := flag.String("tls-private-key-file", "", "key of --tls-cert-file")
	clientCA := flag.String("client-ca-file", "", "CA whose client certificates the kubelet API accepts (the API server's --kubelet-client-certificate)")
	noMountNS := flag.Bool("no-mount-namespaces", false, "run containers without private mount namespaces (for an agent that is not root): volumes are then not at their mount paths")
	containerPaths := flag.Bool("container-paths", false, "start Flink with the pod spec's paths in its configuration and arguments (resolved in each container's mount namespace) instead of the volumes' host paths: Flink then logs and reports the pod's paths, as on a kubelet")
	hostCommands := flag.Bool("host-commands", false, "run containers of image "+nodeagent.HostCommandImage+" (their command, found on the agent's PATH, with the agent's environment): anyone who may create pods runs anything as the agent; for test harnesses only")
	operatorBinary := flag.String("operator-binary", "", "the operator binary (go build ./cmd/flink-operator) that containers of the image ghcr.io/flinkops/flink-operator run (default: such containers are not supported)")
	busybox := flag.String("busybox", "", "a static busybox binary (Debian's busybox-static) that containers of the busybox image run, in a root of their own (default: such containers are not supported)")
	flag.Parse()
	if *kubeconfig == "" || *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg := nodeagent.Config{
		RESTConfig:        rc,
		NodeName:          *nodeName,
		Dir:               *dir,
		FakeJobManager:    *fakeJM,
		MaxGracePeriod:    *maxGrace,
		Log:               os.Stderr,
		TLSCertFile:       *tlsCert,
		TLSKeyFile:        *tlsKey,
		ClientCAFile:      *clientCA,
		NoMountNamespaces: *noMountNS,
		HostCommands:      *hostCommands,
		ContainerPaths:    *containerPaths,
		OperatorBinary:    *operatorBinary,
		Busybox:           *busybox,
	}
	if *podRange != "" {
		if cfg.PodRange, err = netip.ParsePrefix(*podRange); err != nil {
			return fmt.Errorf("--pod-range: %w", err)
		}
	}
	if *record != "" {
		rec, err := localcluster.NewRecorder(*record, *dir)
		if err != nil {
			return err
		}
		defer rec.Close()
		cfg.Recorder = rec
	}
	agent, err := nodeagent.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return agent.Run(ctx, func() {
		if *readyFile != "" {
			if err := os.WriteFile(*readyFile, []byte(fmt.Sprintln(os.Getpid())), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "node-agent: ready file:", err)
			}
		}
	})
}
