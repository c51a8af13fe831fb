package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/flinkops/flink-operator/e2e/localcluster"
)

// DefaultNodeName is the node the agent registers unless told otherwise.
const DefaultNodeName = "local-node"

// Config configures an Agent.
type Config struct {
	// RESTConfig reaches the API server as a user that may manage nodes,
	// leases, pods (binding, status, delete), read and watch services,
	// configmaps and secrets and create service-account tokens (the local
	// cluster's admin). Required. Its Host is what containers get as
	// KUBERNETES_SERVICE_HOST/PORT.
	RESTConfig *rest.Config
	// NodeName is the node to register; default DefaultNodeName.
	NodeName string
	// Dir holds a directory per pod (volumes, hosts file, each container's
	// private /opt/flink and log) and claims/ (persistentVolumeClaim data).
	// Pod directories are removed when their pod is gone or the agent stops.
	// Required.
	Dir string
	// PodRange is where pod IPs come from, a loopback prefix such as
	// 127.100.0.0/16. Default: the first free /16 from 127.100.0.0 on (see
	// LockDir).
	PodRange netip.Prefix
	// LockDir holds the lock files that keep concurrent agents on distinct
	// pod ranges; default <os.TempDir()>/flinkop-nodeagent.
	LockDir string
	// FakeJobManager is the cmd/fake-jobmanager binary. Default: built with
	// `go build` from the operator module (found from the working directory)
	// into <cache>/bin the first time a fake pod starts.
	FakeJobManager string
	// Recorder, when set, records every process the agent starts (so that
	// localcluster's stale cleanup stops them if the agent dies unexpectedly).
	Recorder *localcluster.Recorder
	// MaxGracePeriod caps a pod's termination grace period (SIGTERM, then
	// SIGKILL). Default 10s.
	MaxGracePeriod time.Duration
	// Capacity is the node's capacity and allocatable. Default: cpu 64,
	// memory 256Gi, pods 1000, ephemeral-storage 1Ti; nothing is enforced.
	Capacity corev1.ResourceList
	// JavaOpts are added to every Flink JVM. Default: a one-second address
	// cache (sun.net.inetaddr.ttl / negative.ttl), so JVMs follow the hosts
	// file when a Service's pod changes.
	JavaOpts []string
	// Log receives one line per pod and container event; default discarded.
	Log io.Writer
	// NoMountNamespaces runs containers without their private mount
	// namespaces (which need root): volumes are then not at their mount
	// paths (Flink still finds them through its configuration and
	// arguments) and hostPath sources are as with mount namespaces. By
	// default a container fails to start, saying so, when the agent is not
	// allowed to create mount namespaces.
	NoMountNamespaces bool
	// HostCommands runs containers of image HostCommandImage (their command
	// and args, in their mount namespace); for tests.
	HostCommands bool
	// OperatorBinary is the operator (go build ./cmd/flink-operator) that
	// containers of the operator's image (IsOperatorImage) run, at the
	// image's /flink-operator in their mount namespace. Without it they
	// are not supported (waiting with ReasonImageNotSupported).
	OperatorBinary string
	// Busybox is a static busybox binary (Debian's busybox-static) that
	// containers of the busybox image (IsBusyboxImage) run, in a root of
	// their own like the image's (see busybox.go). Without it they are not
	// supported (waiting with ReasonImageNotSupported).
	Busybox string
	// ContainerPaths starts Flink with the configuration and arguments as
	// the pod spec has them: the paths of its volume mounts are not
	// rewritten to host paths, they resolve in the container's mount
	// namespace (needs mount namespaces). Flink then logs and reports the
	// pod's paths, as on a kubelet, which only a reader inside a pod can
	// follow; by default (off) tests and an operator outside the pods can
	// read the paths Flink reports.
	ContainerPaths bool
	// TLSCertFile and TLSKeyFile are the serving certificate of the agent's
	// kubelet API (GET /containerLogs, where the API server sends
	// `kubectl logs`), for HostIP; ClientCAFile is the CA whose client
	// certificates it accepts (the API server's
	// --kubelet-client-certificate). All three or none: without them there
	// is no kubelet API (the Node's kubelet port is 0).
	TLSCertFile, TLSKeyFile, ClientCAFile string
}

// Agent registers a Node and runs the pods bound to it as local processes.
type Agent struct {
	cfg      Config
	client   kubernetes.Interface
	ips      *ipam
	hostname string

	nodeUID    types.UID
	readySince metav1.Time

	// serviceEnv: the API server's Service variables for every container.
	serviceEnv []EnvVar

	kubeletTLS  *kubeletTLS // nil: no kubelet API
	kubeletPort int32       // published in the Node's status

	podLister corelisters.PodLister
	svcLister corelisters.ServiceLister

	logMu sync.Mutex

	mu           sync.Mutex
	workers      map[types.UID]*podWorker
	seq          int64
	shuttingDown bool
	wg           sync.WaitGroup // pod workers

	bindQueue chan string // namespace/name of pods to bind
	dnsDirty  chan struct{}

	fakeOnce sync.Once
	fakeBin  string
	fakeErr  error

	// busyboxApplets are Config.Busybox's applets (its /bin symlinks).
	busyboxApplets []string
}

// New checks cfg, fills in defaults and returns an Agent; Run starts it.
func New(cfg Config) (*Agent, error) {
	if cfg.RESTConfig == nil || cfg.Dir == "" {
		return nil, errors.New("nodeagent: RESTConfig and Dir are required")
	}
	if cfg.NodeName == "" {
		cfg.NodeName = DefaultNodeName
	}
	if cfg.LockDir == "" {
		cfg.LockDir = filepath.Join(os.TempDir(), "flinkop-nodeagent")
	}
	if cfg.MaxGracePeriod == 0 {
		cfg.MaxGracePeriod = 10 * time.Second
	}
	if cfg.Capacity == nil {
		cfg.Capacity = corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("64"),
			corev1.ResourceMemory:           resource.MustParse("256Gi"),
			corev1.ResourcePods:             resource.MustParse("1000"),
			corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
		}
	}
	if cfg.JavaOpts == nil {
		cfg.JavaOpts = []string{"-Dsun.net.inetaddr.ttl=1", "-Dsun.net.inetaddr.negative.ttl=1"}
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	if cfg.OperatorBinary != "" {
		// A mount source: the helper resolves it after leaving the
		// agent's working directory behind.
		if cfg.OperatorBinary, err = filepath.Abs(cfg.OperatorBinary); err != nil {
			return nil, err
		}
		if st, err := os.Stat(cfg.OperatorBinary); err != nil || st.IsDir() {
			return nil, fmt.Errorf("nodeagent: OperatorBinary %s is not a file (%v)", cfg.OperatorBinary, err)
		}
	}
	var applets []string
	if cfg.Busybox != "" {
		if cfg.Busybox, err = filepath.Abs(cfg.Busybox); err != nil {
			return nil, err
		}
		if applets, err = busyboxApplets(cfg.Busybox); err != nil {
			return nil, fmt.Errorf("nodeagent: Busybox: %w", err)
		}
	}
	var kt *kubeletTLS
	switch {
	case cfg.TLSCertFile != "" && cfg.TLSKeyFile != "" && cfg.ClientCAFile != "":
		if kt, err = loadKubeletTLS(cfg.TLSCertFile, cfg.TLSKeyFile, cfg.ClientCAFile); err != nil {
			return nil, fmt.Errorf("nodeagent: %w", err)
		}
	case cfg.TLSCertFile != "" || cfg.TLSKeyFile != "" || cfg.ClientCAFile != "":
		return nil, errors.New("nodeagent: TLSCertFile, TLSKeyFile and ClientCAFile go together")
	}
	if cfg.ContainerPaths && cfg.NoMountNamespaces {
		return nil, errors.New("nodeagent: ContainerPaths needs mount namespaces: without them the pod's paths do not resolve")
	}
	rc := rest.CopyConfig(cfg.RESTConfig)
	if rc.QPS < 100 {
		rc.QPS, rc.Burst = 100, 200
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	a := &Agent{
		cfg:        cfg,
		client:     client,
		workers:    map[types.UID]*podWorker{},
		bindQueue:  make(chan string, 4096),
		dnsDirty:   make(chan struct{}, 1),
		fakeBin:    cfg.FakeJobManager,
		kubeletTLS: kt,
		serviceEnv: serviceEnv(cfg.RESTConfig.Host),

		busyboxApplets: applets,
	}
	a.hostname, _ = os.Hostname()
	return a, nil
}

// NodeName is the node the agent registers.
func (a *Agent) NodeName() string { return a.cfg.NodeName }

// Run registers the node, then schedules and runs pods until ctx ends. Then
// it stops every process it started (SIGTERM, SIGKILL after the grace
// period, all pods at once), waits for them, removes the pod directories
// and returns. ready, if not nil, is called once the node is registered and
// the agent is running pods.
func (a *Agent) Run(ctx context.Context, ready func()) error {
	if err := os.MkdirAll(filepath.Join(a.cfg.Dir, "pods"), 0o755); err != nil {
		return err
	}
	prefix := a.cfg.PodRange
	if !prefix.IsValid() {
		p, release, err := claimPodRange(a.cfg.LockDir)
		if err != nil {
			return err
		}
		defer release()
		prefix = p
	}
	a.ips = newIPAM(prefix)

	// Before the node is registered: its status names the port. Closed
	// last, when the pods' processes are gone (and follow requests ended).
	if a.kubeletTLS != nil {
		ks, err := a.startKubeletServer()
		if err != nil {
			return err
		}
		defer ks.close()
		a.kubeletPort = int32(ks.port)
		a.logf("kubelet API (containerLogs) on https://%s:%d", HostIP, ks.port)
	}

	if err := a.registerNode(ctx); err != nil {
		return fmt.Errorf("register node %s: %w", a.cfg.NodeName, err)
	}
	a.logf("node %s registered; pod IPs from %s", a.cfg.NodeName, prefix)
	if !a.cfg.NoMountNamespaces && os.Geteuid() != 0 {
		a.logf("warning: not root: containers will fail to start unless this user may create mount namespaces; see --no-mount-namespaces")
	}

	factory := informers.NewSharedInformerFactory(a.client, 0)
	pods := factory.Core().V1().Pods()
	svcs := factory.Core().V1().Services()
	a.podLister, a.svcLister = pods.Lister(), svcs.Lister()
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.podChanged(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { a.podChanged(obj.(*corev1.Pod)) },
		DeleteFunc: a.podDeleted,
	}); err != nil {
		return err
	}
	if _, err := svcs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.markDNS() },
		UpdateFunc: func(any, any) { a.markDNS() },
		DeleteFunc: func(any) { a.markDNS() },
	}); err != nil {
		return err
	}
	// ConfigMap and Secret volumes follow their objects (volumesync.go).
	if _, err := factory.Core().V1().ConfigMaps().Informer().AddEventHandler(a.objectHandler("configmap")); err != nil {
		return err
	}
	if _, err := factory.Core().V1().Secrets().Informer().AddEventHandler(a.objectHandler("secret")); err != nil {
		return err
	}

	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	factory.Start(runCtx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			factory.Shutdown()
			return fmt.Errorf("informer %v did not sync: %w", typ, ctx.Err())
		}
	}

	bindCtx, stopBinding := context.WithCancel(runCtx)
	var loops sync.WaitGroup
	loops.Add(3)
	go func() { defer loops.Done(); a.heartbeat(runCtx) }()
	go func() { defer loops.Done(); a.binder(bindCtx) }()
	go func() { defer loops.Done(); a.dnsLoop(runCtx) }()
	if ready != nil {
		ready()
	}

	<-ctx.Done()
	begin := time.Now()
	stopBinding() // no new pods from here on
	a.mu.Lock()
	a.shuttingDown = true
	n := len(a.workers)
	for _, w := range a.workers {
		w.shutdown()
	}
	a.mu.Unlock()
	a.wg.Wait() // every pod worker stopped its processes and removed its dir
	stopRun()
	factory.Shutdown()
	loops.Wait()
	a.markNodeNotReady()
	a.logf("stopped: %d pods' processes ended in %s", n, time.Since(begin).Round(time.Millisecond))
	return nil
}

// podChanged dispatches an informer event: unscheduled pods go to the
// binder, pods of this node to their worker.
func (a *Agent) podChanged(pod *corev1.Pod) {
	switch pod.Spec.NodeName {
	case "":
		if schedulable(pod) {
			select {
			case a.bindQueue <- pod.Namespace + "/" + pod.Name:
			default: // full: the periodic rescan picks it up
			}
		}
	case a.cfg.NodeName:
		a.mu.Lock()
		defer a.mu.Unlock()
		if w, ok := a.workers[pod.UID]; ok {
			w.update(pod)
			return
		}
		if a.shuttingDown {
			return
		}
		a.seq++
		w := newPodWorker(a, pod, a.seq)
		a.workers[pod.UID] = w
		a.wg.Add(1)
		go w.run()
	}
	a.markDNS()
}

func (a *Agent) podDeleted(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if pod, ok = tomb.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	a.mu.Lock()
	w := a.workers[pod.UID]
	a.mu.Unlock()
	if w != nil {
		w.gone()
	}
	a.markDNS()
}

func (a *Agent) removeWorker(w *podWorker) {
	a.mu.Lock()
	if a.workers[w.uid] == w {
		delete(a.workers, w.uid)
	}
	a.mu.Unlock()
	a.markDNS()
}

// schedulable: pending, not terminating, for the default scheduler (the
// agent is the only scheduler of the local cluster).
func schedulable(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil &&
		(pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == corev1.DefaultSchedulerName) &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// binder binds unscheduled pods to the node (pods/binding), and rescans
// every few seconds for pods it missed or failed to bind.
func (a *Agent) binder(ctx context.Context) {
	rescan := time.NewTicker(5 * time.Second)
	defer rescan.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case key := <-a.bindQueue:
			a.bind(ctx, key)
		case <-rescan.C:
			pods, _ := a.podLister.List(labelsEverything)
			for _, p := range pods {
				if p.Spec.NodeName == "" && schedulable(p) {
					a.bind(ctx, p.Namespace+"/"+p.Name)
				}
			}
		}
	}
}

func (a *Agent) bind(ctx context.Context, key string) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pod, err := a.podLister.Pods(ns).Get(name)
	if err != nil || pod.Spec.NodeName != "" || !schedulable(pod) {
		return
	}
	err = a.client.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: a.cfg.NodeName},
	}, metav1.CreateOptions{})
	switch {
	case err == nil:
		a.logf("pod %s: bound to %s", key, a.cfg.NodeName)
	case apierrors.IsConflict(err), apierrors.IsNotFound(err), ctx.Err() != nil:
	default:
		a.logf("pod %s: bind: %v", key, err)
	}
}

// markDNS asks dnsLoop to rewrite the pods' hosts files.
func (a *Agent) markDNS() {
	select {
	case a.dnsDirty <- struct{}{}:
	default:
	}
}

// dnsLoop rewrites hosts files after changes (batched: at most every 100ms).
func (a *Agent) dnsLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.dnsDirty:
		}
		a.syncHosts()
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// syncHosts writes the hosts file of every pod that has one.
func (a *Agent) syncHosts() {
	a.mu.Lock()
	workers := make([]*podWorker, 0, len(a.workers))
	for _, w := range a.workers {
		workers = append(workers, w)
	}
	a.mu.Unlock()
	endpoints := make([]Endpoint, 0, len(workers))
	for _, w := range workers {
		if ep, ok := w.endpoint(); ok {
			endpoints = append(endpoints, ep)
		}
	}
	services, _ := a.svcLister.List(labelsEverything)
	for _, w := range workers {
		w.writeHosts(endpoints, services)
	}
}

// hostsFor renders the hosts file of pod self from the current state.
func (a *Agent) hostsFor(self Endpoint) []byte {
	a.mu.Lock()
	var endpoints []Endpoint
	for _, w := range a.workers {
		if ep, ok := w.endpoint(); ok {
			endpoints = append(endpoints, ep)
		}
	}
	a.mu.Unlock()
	services, _ := a.svcLister.List(labelsEverything)
	return HostsFile(self, a.hostname, endpoints, services)
}

func (a *Agent) logf(format string, args ...any) {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	fmt.Fprintf(a.cfg.Log, "%s nodeagent: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// configMap and secret implement objectSource with direct reads (quorum
// reads: never older than what a pod saw before; volumes read them when the
// pod starts and again when the informers report a change, see
// volumesync.go).
func (a *Agent) configMap(ns, name string) (*corev1.ConfigMap, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (a *Agent) secret(ns, name string) (*corev1.Secret, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

var labelsEverything = labels.Everything()

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
