// Package localcluster runs a real, throwaway Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager) as local processes on 127.0.0.1,
// for integration tests and for `make run`. There is no scheduler and no
// kubelet: Pods stay Pending unless a test binds them, or Options.NodeAgent
// starts the node agent (e2e/nodeagent), which schedules pods onto its node
// and runs them as local processes (real Flink JVMs, fake JobManagers).
//
// The API server reaches Services as on a real cluster, though there is no
// kube-proxy: its "cluster" egress (webhooks configured by Service,
// aggregated APIs, the node agent's kubelet API for kubectl logs, the proxy
// subresources) goes through an HTTP CONNECT proxy that the owning process
// serves on a Unix socket (Cluster.EgressSocket, egress.go), named in
// kube-apiserver's --egress-selector-config-file. A ClusterIP:port there is
// sent to a Ready, non-terminating pod with a pod IP that the Service
// selects (round-robin; targetPort a number or a container port's name), as
// kube-proxy would; no such pod answers 503, which the API server reports as
// the call's failure (a webhook's failurePolicy applies). Anything else
// (127.0.0.1:<port> of the kubelet API, a pod IP) is dialed as asked.
// Webhooks configured by URL use the control-plane egress, which stays
// direct. The proxy learns Services and Pods from informers started once the
// API server is ready; it lives and stops with the Cluster. Pods do not use
// it: they resolve Services through the node agent's hosts files.
//
// Two add-ons run in the owning process too, as a minikube or kind cluster
// has them (Options.NoStorage, Options.NoIngress leave them out):
//
//   - Storage (storage.go): the default StorageClass DefaultStorageClass
//     ("standard", provisioner StorageProvisioner, reclaimPolicy Delete,
//     volumeBindingMode Immediate) and a provisioner that makes a hostPath
//     PersistentVolume of a directory <Dir>/volumes/pvc-<claim uid> (the
//     claim's size, access modes and claimRef) for each claim that
//     kube-controller-manager's persistentvolume-binder-controller hands
//     it, and removes both once the claim is deleted (Retain keeps them).
//     The binder binds; the protection and ephemeral-volume controllers run
//     too (StorageControllers, part of DefaultControllers). The node agent
//     mounts a claim's bound volume, and keeps a pod waiting until then.
//   - Ingress (ingress.go): the default IngressClass IngressClassName
//     ("nginx", controller IngressController) and an HTTP server on
//     127.0.0.1 (Cluster.IngressAddress, DefaultIngressPort when free) that
//     routes that class's Ingresses as ingress-nginx does (host, path,
//     regex paths, rewrite-target) to a Ready pod of the backend Service,
//     by pod IP; 404 without a matching path, 503 without a Ready pod; the
//     Ingresses' status gets the address 127.0.0.1.
//
// Binaries come from hack/build-cluster-bins.sh (built from Go modules, cached
// per version) or from $FLINKOP_KUBE_BIN_DIR. Every process is recorded in a
// state file so that a later Start stops what a killed run left behind.
package localcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// AdminUser is in system:masters.
	AdminUser = "admin"
	// OperatorUser has no groups beyond system:authenticated; its RBAC is the
	// caller's job (see GrantClusterAdmin).
	OperatorUser = "flink-operator"
	// ServiceCIDR is the service cluster IP range.
	ServiceCIDR = "10.0.0.0/24"
)

// DefaultControllers are the kube-controller-manager controllers started
// unless Options.Controllers says otherwise. The EndpointSlice controllers are
// left out: pod IPs here are loopback addresses, which EndpointSlices reject
// (a FailedToUpdateEndpointSlices Warning per Service, forever), and nothing
// reads them: the node agent's hosts files, the operator's pod-ip endpoint
// and the API server's egress proxy (egress.go) resolve Services from the
// pods themselves.
var DefaultControllers = append([]string{
	"garbage-collector-controller",
	"deployment-controller",
	"replicaset-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"namespace-controller",
	// kube-root-ca.crt in every namespace: the ca.crt of the projected
	// service-account volume (kube-api-access-*) that pods get.
	"root-ca-certificate-publisher-controller",
	// The rules of the aggregated ClusterRoles admin, edit and view (from
	// the system:aggregate-to-* roles, and any role labelled to join them).
	// Without it they are empty, and the RBAC Flink's documentation gives
	// for native mode (a binding to edit) grants nothing, unlike on any
	// real cluster.
	"clusterrole-aggregation-controller",
	// And StorageControllers (storage.go): PersistentVolumeClaims bound to
	// the volumes of the in-process provisioner, the protection
	// finalizers, the claims of generic ephemeral volumes.
}, StorageControllers...)

// Options configure Start. The zero value is a good default.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and kubectl.
	// Default: FindBinaries.
	BinDir string
	// Dir is the work dir (certs, kubeconfigs, logs, etcd data). Default: a
	// new temp dir, removed by Stop unless KeepDir.
	Dir     string
	KeepDir bool
	// StateDir holds the records of running clusters. Default: <CacheDir>/run.
	StateDir string
	// Out receives progress lines. Default: discarded.
	Out io.Writer
	// Controllers for kube-controller-manager. Default: DefaultControllers.
	Controllers []string
	// NoControllerManager starts only etcd and kube-apiserver.
	NoControllerManager bool
	// StartTimeout bounds the start of the processes (not a build of the
	// binaries). Default 2m.
	StartTimeout time.Duration
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL. Default 10s.
	StopGrace time.Duration
	// NoParentDeathSignal leaves the processes running if the owner dies
	// without Stop (by default the kernel kills them). Only useful to test
	// StopStale.
	NoParentDeathSignal bool
	// NodeAgent starts the node agent (e2e/nodeagent) once the control plane
	// is up: it registers node NodeAgentNode, binds pending pods to it and
	// runs them as local processes (real Flink JVMs for Flink images, fake
	// JobManagers for fake-jobmanager images). The agent and
	// cmd/fake-jobmanager are built with go build into <CacheDir>/bin while
	// the control plane starts.
	NodeAgent bool
	// NodeAgentArgs are extra flags for the agent (e.g. --max-grace 5s).
	NodeAgentArgs []string
	// Audit, if set, makes kube-apiserver write an audit log (see
	// AuditOptions): which writes a client made, for benchmarks.
	Audit *AuditOptions
	// ServiceCIDR is the service cluster IP range. Default ServiceCIDR (a
	// /24: about 250 ClusterIP Services); scale tests need a wider one.
	ServiceCIDR string
	// ControllerManagerArgs are extra kube-controller-manager flags (e.g.
	// --kube-api-qps for scale tests).
	ControllerManagerArgs []string
	// NoStorage leaves out the default StorageClass (DefaultStorageClass)
	// and the in-process provisioner (storage.go) that makes the volumes
	// of PersistentVolumeClaims.
	NoStorage bool
	// NoIngress leaves out the IngressClass IngressClassName and the
	// in-process ingress controller on 127.0.0.1 (ingress.go).
	NoIngress bool
	// IngressPort is the ingress's port on 127.0.0.1: 0 is
	// DefaultIngressPort when it is free, else any free port; negative is
	// any free port.
	IngressPort int
}

// NodeAgentNode is the node the agent registers.
const NodeAgentNode = "local-node"

// nodeAgentStopGrace bounds the agent's shutdown: it stops all pods at once,
// each within its (capped, 10s) termination grace period.
const nodeAgentStopGrace = 30 * time.Second

// Cluster is a running control plane.
type Cluster struct {
	Dir                string // work dir
	BinDir             string
	KubectlPath        string
	Host               string // https://127.0.0.1:<port>
	CAFile             string // CA of the apiserver's serving certificate
	Kubeconfig         string // admin (system:masters)
	OperatorKubeconfig string // user flink-operator, no groups
	StatePath          string // record of the processes, removed by Stop
	// NodeAgent is the node agent's process (nil without Options.NodeAgent).
	NodeAgent *Process
	// NodeAgentRecord is the agent's record of the processes it runs (see
	// ReadRecord); it removes the file when it stops cleanly.
	NodeAgentRecord string
	// NodeAgentDir holds the agent's pod directories (volumes, hosts files,
	// container logs under pods/<namespace>_<name>_<uid>/logs).
	NodeAgentDir string
	// EgressSocket is the Unix socket of the HTTP CONNECT proxy through
	// which the API server reaches Services, pods and the kubelet API (see
	// the package doc). Usually <Dir>/egress.sock; a short temporary path
	// when that is too long for a socket.
	EgressSocket string
	// IngressAddress is host:port (127.0.0.1:<port>, plain HTTP) where the
	// Ingresses of class IngressClassName are served (see ingress.go and
	// IngressURL); empty with Options.NoIngress.
	IngressAddress string
	// VolumesDir holds the directories of the volumes that the in-process
	// provisioner makes for PersistentVolumeClaims (<Dir>/volumes,
	// pvc-<claim uid> each; see storage.go); empty with Options.NoStorage.
	VolumesDir string

	opts          Options
	out           io.Writer
	caPEM         []byte
	pki           *pki           // the node agent gets its kubelet API certificates from here
	egress        *egressProxy   // set under mu
	provisioner   *provisioner   // set under mu
	ingress       *ingressServer // set under mu
	adminToken    string
	operatorToken string
	removeDir     bool

	mu      sync.Mutex
	procs   []*Process
	state   runState
	stopped bool

	stopOnce sync.Once
	stopErr  error
}

var stateSeq struct {
	sync.Mutex
	n int
}

// Start starts etcd, kube-apiserver and kube-controller-manager and returns
// once the apiserver's /readyz and the controller manager's /healthz answer.
// It first stops stale processes of earlier runs (see StopStale). ctx (and
// Options.StartTimeout) bound the start only; the processes run until Stop.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	begin := time.Now()
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = 10 * time.Second
	}
	if opts.Controllers == nil {
		opts.Controllers = DefaultControllers
	}
	// A list built from DefaultControllers may name one twice.
	var controllers []string
	for _, name := range opts.Controllers {
		if !slices.Contains(controllers, name) {
			controllers = append(controllers, name)
		}
	}
	opts.Controllers = controllers
	if opts.StateDir == "" {
		opts.StateDir = filepath.Join(CacheDir(), "run")
	}
	c := &Cluster{opts: opts, out: opts.Out}
	if err := os.MkdirAll(opts.StateDir, 0o755); err != nil {
		return nil, err
	}
	if n, err := StopStale(opts.StateDir, c.out); err != nil {
		c.logf("stale cleanup: %v", err)
	} else if n > 0 {
		c.logf("stopped %d stale processes of earlier runs", n)
	}

	c.BinDir = opts.BinDir
	if c.BinDir == "" {
		if c.BinDir, err = FindBinaries(ctx, c.out); err != nil {
			return nil, err
		}
	} else if err := checkBinaries(c.BinDir); err != nil {
		return nil, err
	}
	c.KubectlPath = filepath.Join(c.BinDir, "kubectl")
	buildCtx := ctx // a build (like FindBinaries') is not bounded by StartTimeout
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	c.Dir = opts.Dir
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "flinkop-localcluster-"); err != nil {
			return nil, err
		}
		c.removeDir = !opts.KeepDir
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := c.record(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	var agentBins chan buildResult
	if opts.NodeAgent {
		agentBins = make(chan buildResult, 1)
		go func() {
			t := time.Now()
			dir, err := BuildCommands(buildCtx, "./e2e/nodeagent/cmd/node-agent", "./cmd/fake-jobmanager")
			if err == nil {
				c.logf("node-agent and fake-jobmanager built in %s", time.Since(t).Round(time.Millisecond))
			}
			agentBins <- buildResult{dir, err}
		}()
	}
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	if opts.NodeAgent {
		var bins buildResult
		select {
		case bins = <-agentBins:
		case <-buildCtx.Done():
			return nil, buildCtx.Err()
		}
		if bins.err != nil {
			return nil, bins.err
		}
		if err := c.startNodeAgent(ctx, bins.dir); err != nil {
			return nil, err
		}
	}
	c.logf("control plane ready in %s (apiserver %s, work dir %s)", time.Since(begin).Round(time.Millisecond), c.Host, c.Dir)
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	etcdPort, peerPort, apiPort, kcmPort := ports[0], ports[1], ports[2], ports[3]
	pkiDir := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return err
	}
	svcCIDR := c.opts.ServiceCIDR
	if svcCIDR == "" {
		svcCIDR = ServiceCIDR
	}
	_, svcNet, err := net.ParseCIDR(svcCIDR)
	if err != nil {
		return fmt.Errorf("service CIDR: %w", err)
	}
	firstIP := slices.Clone(svcNet.IP.To4())
	firstIP[3]++
	pki, err := writePKI(pkiDir, firstIP)
	if err != nil {
		return err
	}
	// The API server dials the proxy's socket at its first webhook or
	// kubelet call, so it must listen before kube-apiserver starts.
	egress, err := startEgressProxy(c.Dir, svcNet, c.logf)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.egress, c.EgressSocket = egress, egress.socket
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		egress.close()
		return errors.New("cluster stopped")
	}
	egressConfig := filepath.Join(c.Dir, "egress-selector.yaml")
	if err := egress.writeConfig(egressConfig); err != nil {
		return err
	}
	c.CAFile, c.caPEM, c.pki = pki.CACert, pki.caPEM, pki
	c.Host = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.adminToken, c.operatorToken = randomToken(), randomToken()
	kcmToken := randomToken()
	tokens := filepath.Join(pkiDir, "tokens.csv")
	err = os.WriteFile(tokens, []byte(fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s\n%s,system:kube-controller-manager,system:kube-controller-manager\n",
		c.adminToken, AdminUser, AdminUser, c.operatorToken, OperatorUser, OperatorUser, kcmToken)), 0o600)
	if err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	c.OperatorKubeconfig = filepath.Join(c.Dir, "operator.kubeconfig")
	kcmKubeconfig := filepath.Join(c.Dir, "kube-controller-manager.kubeconfig")
	for path, tok := range map[string]string{c.Kubeconfig: c.adminToken, c.OperatorKubeconfig: c.operatorToken, kcmKubeconfig: kcmToken} {
		if err := c.writeKubeconfig(path, tok); err != nil {
			return err
		}
	}

	t := time.Now()
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	etcd, err := c.StartProcess(ProcessSpec{Name: "etcd", Args: []string{
		filepath.Join(c.BinDir, "etcd"),
		"--name=localcluster",
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=localcluster=" + peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	}})
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, etcd, http.DefaultClient, etcdURL+"/health", ""); err != nil {
		return err
	}
	c.logf("etcd ready in %s", time.Since(t).Round(time.Millisecond))

	auditArgs, err := c.opts.Audit.apiserverArgs(c.Dir)
	if err != nil {
		return err
	}
	t = time.Now()
	api, err := c.StartProcess(ProcessSpec{Name: "kube-apiserver", Args: append([]string{
		filepath.Join(c.BinDir, "kube-apiserver"),
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + filepath.Join(c.Dir, "apiserver"),
		"--tls-cert-file=" + pki.ServingCert,
		"--tls-private-key-file=" + pki.ServingKey,
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki.SAPub,
		"--service-account-signing-key-file=" + pki.SAKey,
		"--service-cluster-ip-range=" + svcCIDR,
		"--allow-privileged=true",
		// Endpoints reject loopback addresses; nothing in-cluster needs them.
		"--endpoint-reconciler-type=none",
		// pods/log goes to the node agent's kubelet API at the node's
		// InternalIP (127.0.0.1; its Hostname does not resolve), both
		// sides authenticated by the cluster CA.
		"--kubelet-client-certificate=" + pki.KubeletClientCert,
		"--kubelet-client-key=" + pki.KubeletClientKey,
		"--kubelet-certificate-authority=" + pki.CACert,
		"--kubelet-preferred-address-types=InternalIP",
		// Webhooks, aggregated APIs and the kubelet API through the
		// proxy that plays kube-proxy for the API server (egress.go).
		"--egress-selector-config-file=" + egressConfig,
		"--profiling=false",
	}, auditArgs...)})
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, api, c.httpClient(), c.Host+"/readyz", c.adminToken); err != nil {
		return err
	}
	c.logf("kube-apiserver ready in %s", time.Since(t).Round(time.Millisecond))
	t = time.Now()
	if err := egress.startInformers(ctx, c.RESTConfig(), "127.0.0.1:"+strconv.Itoa(apiPort)); err != nil {
		return err
	}
	c.logf("egress proxy routing ClusterIPs in %s (socket %s)", time.Since(t).Round(time.Millisecond), egress.socket)
	if err := c.startAddons(ctx); err != nil {
		return err
	}

	if c.opts.NoControllerManager {
		return nil
	}
	t = time.Now()
	kcm, err := c.StartProcess(ProcessSpec{Name: "kube-controller-manager", Args: append([]string{
		filepath.Join(c.BinDir, "kube-controller-manager"),
		"--kubeconfig=" + kcmKubeconfig,
		"--authentication-kubeconfig=" + kcmKubeconfig,
		"--authorization-kubeconfig=" + kcmKubeconfig,
		// Token reviews only: there is no client-CA ConfigMap to look up.
		"--authentication-skip-lookup=true",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(kcmPort),
		"--cert-dir=" + filepath.Join(c.Dir, "kube-controller-manager"),
		"--controllers=" + strings.Join(c.opts.Controllers, ","),
		"--root-ca-file=" + pki.CACert,
		"--service-account-private-key-file=" + pki.SAKey,
		"--use-service-account-credentials=true",
		"--leader-elect=false",
		"--profiling=false",
	}, c.opts.ControllerManagerArgs...)})
	if err != nil {
		return err
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := waitHTTP(ctx, kcm, insecure, "https://127.0.0.1:"+strconv.Itoa(kcmPort)+"/healthz", ""); err != nil {
		return err
	}
	c.logf("kube-controller-manager healthy in %s", time.Since(t).Round(time.Millisecond))
	return nil
}

// StartProcess starts a process owned by the cluster: recorded in the state
// file, stopped first by Stop (and by StopStale if the owner dies).
func (c *Cluster) StartProcess(spec ProcessSpec) (*Process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, errors.New("cluster stopped")
	}
	p, err := startProcess(spec, c.Dir, !c.opts.NoParentDeathSignal)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	c.state.Processes = append(c.state.Processes, p.info)
	if err := writeState(c.StatePath, c.state); err != nil {
		return p, err
	}
	return p, nil
}

func (c *Cluster) record() error {
	stateSeq.Lock()
	stateSeq.n++
	n := stateSeq.n
	stateSeq.Unlock()
	c.StatePath = filepath.Join(c.opts.StateDir, fmt.Sprintf("%d-%d.json", os.Getpid(), n))
	c.state = runState{OwnerPID: os.Getpid(), OwnerStartTime: selfStartTime()}
	if c.removeDir {
		c.state.Dir = c.Dir
	}
	return writeState(c.StatePath, c.state)
}

// Stop terminates every process the cluster started (newest first: SIGTERM
// to its process group, SIGKILL after StopGrace), checks that none of them is
// alive, and removes the state file and, unless KeepDir, the work dir. Safe to
// call more than once and concurrently.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		begin := time.Now()
		c.mu.Lock()
		c.stopped = true
		procs := slices.Clone(c.procs)
		egress, prov, ing := c.egress, c.provisioner, c.ingress
		c.mu.Unlock()
		// The proxy's watches end before the API server does, so that
		// they do not log its going; its connections after the
		// processes, so that none is cut while they stop. The
		// provisioner and the ingress go first, whole.
		ing.close()
		prov.close()
		egress.stopInformers()
		var errs []error
		for _, p := range slices.Backward(procs) {
			grace := c.opts.StopGrace
			if p.grace > 0 {
				grace = p.grace
			}
			if err := p.stop(grace); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
			}
		}
		for _, p := range procs {
			if p.info.isSame() {
				errs = append(errs, fmt.Errorf("%s (pid %d) is still alive", p.Name, p.PID()))
			}
		}
		if c.NodeAgentRecord != "" {
			if err := stopLeftovers(c.NodeAgentRecord); err != nil {
				errs = append(errs, err)
			}
		}
		egress.close()
		if len(errs) == 0 {
			if c.StatePath != "" {
				os.Remove(c.StatePath)
			}
			if c.removeDir {
				os.RemoveAll(c.Dir)
			}
		}
		c.stopErr = errors.Join(errs...)
		c.logf("stopped %d processes in %s", len(procs), time.Since(begin).Round(time.Millisecond))
	})
	return c.stopErr
}

// Processes returns the processes started so far.
func (c *Cluster) Processes() []*Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.procs)
}

// StopOnSignal stops the cluster and exits with status 1 when the process
// receives SIGINT or SIGTERM. Call the returned function to stop listening.
func (c *Cluster) StopOnSignal() (cancel func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			fmt.Fprintf(os.Stderr, "localcluster: %v: stopping the control plane\n", s)
			if err := c.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "localcluster: stop: %v\n", err)
			}
			os.Exit(1)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// RESTConfig is a client config for the admin user (system:masters).
func (c *Cluster) RESTConfig() *rest.Config { return c.restConfig(c.adminToken) }

// OperatorRESTConfig is a client config for OperatorUser.
func (c *Cluster) OperatorRESTConfig() *rest.Config { return c.restConfig(c.operatorToken) }

func (c *Cluster) restConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            c.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: slices.Clone(c.caPEM)},
		QPS:             100,
		Burst:           200,
	}
}

// Kubectl runs kubectl as the admin user (a --kubeconfig argument overrides
// that) and returns its stdout; on failure the error includes stderr.
func (c *Cluster) Kubectl(args ...string) (string, error) {
	return c.KubectlInput(nil, args...)
}

// KubectlInput is Kubectl with stdin.
func (c *Cluster) KubectlInput(stdin io.Reader, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.KubectlPath, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "KUBECACHEDIR="+filepath.Join(c.Dir, "kubectl-cache"))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// WriteKubeconfig writes a kubeconfig for the cluster that authenticates
// with token (a ServiceAccount token from the TokenRequest API, say).
func (c *Cluster) WriteKubeconfig(path, token string) error { return c.writeKubeconfig(path, token) }

func (c *Cluster) writeKubeconfig(path, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user", Namespace: "default"}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}

func (c *Cluster) httpClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.out, "localcluster: "+format+"\n", args...)
}

// waitHTTP polls url until it answers 200, p exits, or ctx ends.
func waitHTTP(ctx context.Context, p *Process, client *http.Client, url, token string) error {
	client = &http.Client{Transport: client.Transport, Timeout: 2 * time.Second}
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited (%v) before %s answered%s", p.Name, p.Err(), url, logTail(p.LogPath))
		case <-ctx.Done():
			return fmt.Errorf("%s: %s did not answer 200 (last: %s): %w%s", p.Name, url, last, ctx.Err(), logTail(p.LogPath))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTail returns the last lines of a log file, for error messages.
func logTail(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return "\n--- last lines of " + path + " ---\n" + strings.Join(lines, "\n")
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	ps, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

// freePorts returns n distinct free ports (all listeners held until the end,
// so they differ).
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startAddons starts what the control plane gets besides its processes,
// in this process: the storage provisioner with the default StorageClass
// (storage.go) and the ingress controller with its IngressClass
// (ingress.go), unless Options leave them out.
func (c *Cluster) startAddons(ctx context.Context) error {
	if !c.opts.NoStorage {
		t := time.Now()
		dir := filepath.Join(c.Dir, "volumes")
		p, err := startProvisioner(ctx, c.RESTConfig(), dir, c.logf)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.provisioner, c.VolumesDir = p, dir
		stopped := c.stopped
		c.mu.Unlock()
		if stopped {
			p.close()
			return errors.New("cluster stopped")
		}
		c.logf("storage provisioner %s ready in %s (default StorageClass %s, volumes in %s)", StorageProvisioner, time.Since(t).Round(time.Millisecond), DefaultStorageClass, dir)
	}
	if !c.opts.NoIngress {
		t := time.Now()
		ln, err := listenIngress(c.opts.IngressPort)
		if err != nil {
			return fmt.Errorf("ingress: %w", err)
		}
		egress := c.egress
		s, err := startIngress(ctx, c.RESTConfig(), ln, egress.routes.Load, c.logf)
		if err != nil {
			ln.Close()
			return err
		}
		c.mu.Lock()
		c.ingress, c.IngressAddress = s, s.addr
		stopped := c.stopped
		c.mu.Unlock()
		if stopped {
			s.close()
			return errors.New("cluster stopped")
		}
		c.logf("ingress (class %s) on http://%s ready in %s", IngressClassName, s.addr, time.Since(t).Round(time.Millisecond))
	}
	return nil
}

// IngressURL is the URL of path on the ingress (http://IngressAddress/path),
// or "" without one.
func (c *Cluster) IngressURL(path string) string {
	if c.IngressAddress == "" {
		return ""
	}
	return "http://" + c.IngressAddress + "/" + strings.TrimPrefix(path, "/")
}
