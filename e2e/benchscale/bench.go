package benchscale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/flinkops/flink-operator/cmd/fake-jobmanager/synthload"
	"github.com/flinkops/flink-operator/e2e/framework"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	"github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	clientset "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned"
	informers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
)

// Names of the load: writes are attributed to objects by them (classify).
const (
	deploymentPrefix = "fd-"
	snapshotPrefix   = "sp-"
	namespacePrefix  = "bench-"
)

// Result is what a scenario measured (results.json).
type Result struct {
	Scenario string `json:"scenario"`
	Name     string `json:"name"`
	Commit   string `json:"commit"`
	// Dirty lists uncommitted changes under cmd/ and pkg/ when measured.
	Dirty       []string `json:"dirty,omitempty"`
	OperatorBin string   `json:"operatorBin"`
	Date        string   `json:"date"`
	Machine     string   `json:"machine"`
	Config      struct {
		Deployments   int      `json:"deployments"`
		Snapshots     int      `json:"snapshots"`
		Namespaces    int      `json:"namespaces"`
		Quiet         string   `json:"quiet"`
		Idle          string   `json:"idle"`
		RestartWindow string   `json:"restartWindow"`
		OperatorArgs  []string `json:"operatorArgs"`
		OperatorEnv   []string `json:"operatorEnv,omitempty"`
	} `json:"config"`
	Phases []*Phase `json:"phases"`
	// Idle is the window after the last phase settled.
	Idle *Window `json:"idle,omitempty"`
	// Restart is the window after the operator restarted.
	Restart *Window `json:"restart,omitempty"`
	// Autoscaler is the measured window of the autoscaler scenarios.
	Autoscaler *AutoscalerWindow `json:"autoscaler,omitempty"`
	// Operator is the first operator process over the whole run, up to the
	// restart.
	Operator ProcFigures `json:"operator"`
	Notes    []string    `json:"notes,omitempty"`
}

// ProcFigures are the operator process's figures at one moment.
type ProcFigures struct {
	RSSMiB     float64 `json:"rssMiB"`
	PeakRSSMiB float64 `json:"peakRssMiB"`
	// HeapMiB is the Go heap in use (go_memstats_heap_inuse_bytes);
	// PeakHeapMiB the largest sampled (once a second while settling).
	HeapMiB     float64 `json:"heapMiB,omitempty"`
	PeakHeapMiB float64 `json:"peakHeapMiB,omitempty"`
	CPUSeconds  float64 `json:"cpuSeconds"`
}

// Phase is one load: created, then waited for until settled.
type Phase struct {
	Name    string         `json:"name"`
	Objects map[string]int `json:"objects"`
	// CreateSeconds: first create → last create (the harness's clock).
	CreateSeconds float64 `json:"createSeconds"`
	Settled       bool    `json:"settled"`
	// SettleSeconds: first create → the operator's last write of the
	// phase (or, not settled, → the timeout).
	SettleSeconds float64 `json:"settleSeconds"`
	// AfterLastCreateSeconds: last create → the operator's last write.
	AfterLastCreateSeconds float64        `json:"afterLastCreateSeconds"`
	States                 map[string]int `json:"states,omitempty"`
	Writes                 []WriteRow     `json:"writes"`
	WritesTotal            int            `json:"writesTotal"`
	WritesByObject         map[string]int `json:"writesByObject"`
	// WritesPerSnapshot is every write of the phase over its snapshots
	// (events and deployment writes included).
	WritesPerSnapshot float64      `json:"writesPerSnapshot,omitempty"`
	CreateToTrigger   *Percentiles `json:"createToTrigger,omitempty"`
	CreateToResult    *Percentiles `json:"createToResult,omitempty"`
	// REST are the Flink REST calls during the phase by "METHOD endpoint".
	REST            map[string]float64 `json:"rest"`
	RESTTotal       float64            `json:"restTotal"`
	RESTPerSnapshot float64            `json:"restPerSnapshot,omitempty"`
	Operator        ProcFigures        `json:"operator"`
	// CPUSecondsPerObject is the operator's CPU over the phase per object
	// created in it.
	CPUSecondsPerObject float64 `json:"cpuSecondsPerObject"`
}

// Percentiles of durations, in seconds.
type Percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Window counts what the operator did in a period of no load.
type Window struct {
	Seconds     float64            `json:"seconds"`
	Writes      []WriteRow         `json:"writes"`
	WritesTotal int                `json:"writesTotal"`
	REST        map[string]float64 `json:"rest"`
	RESTTotal   float64            `json:"restTotal"`
	Operator    ProcFigures        `json:"operator"`
}

// bench is one scenario on its own control plane.
type bench struct {
	t        *testing.T
	ctx      context.Context
	cfg      Config
	scenario string
	dir      string
	opBin    string
	opArgs   []string
	opLog    string
	cluster  *localcluster.Cluster
	kube     kubernetes.Interface
	flink    clientset.Interface
	audit    *auditLog
	op       *framework.Operator
	metrics  string
	ns       []string
	res      *Result
	node     *fakeNode // running scenario
	firstOp  *framework.Operator
	peak     int64 // the first operator process's peak RSS seen
	peakHeap int64 // and its peak heap in use

	mu      sync.Mutex
	created map[string]time.Time // ns/name of a snapshot → create returned
	snaps   map[string]*v1beta1.FlinkStateSnapshot
	seenEnd map[string]time.Time // ns/name → first seen terminal
	deps    map[string]*v1beta1.FlinkDeployment
}

// Run runs cfg's scenarios one after the other, each on a fresh control
// plane, and returns their results (also written to
// <ResultsDir>/<name>-<scenario>/results.json).
func Run(t *testing.T, ctx context.Context, cfg Config) []*Result {
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ResultsDir == "" {
		cfg.ResultsDir = filepath.Join(root, ".cache", "bench-scale")
	}
	opBin, commit, dirty := cfg.OperatorBin, "", []string(nil)
	switch {
	case opBin != "":
		commit = "(prebuilt " + opBin + ")"
	case cfg.OperatorRev != "":
		if opBin, commit, err = buildRev(ctx, t, root, cfg.OperatorRev); err != nil {
			t.Fatal(err)
		}
	default:
		dir, err := localcluster.BuildCommands(ctx, "./cmd/flink-operator")
		if err != nil {
			t.Fatal(err)
		}
		opBin = filepath.Join(dir, "flink-operator")
		commit, dirty = gitCommit(root, "HEAD")
	}
	var out []*Result
	for _, sc := range cfg.Scenarios {
		t.Run(sc, func(t *testing.T) {
			b := &bench{t: t, ctx: ctx, cfg: cfg, scenario: sc, opBin: opBin,
				dir:     filepath.Join(cfg.ResultsDir, cfg.Name+"-"+sc),
				created: map[string]time.Time{}, snaps: map[string]*v1beta1.FlinkStateSnapshot{},
				seenEnd: map[string]time.Time{}, deps: map[string]*v1beta1.FlinkDeployment{}}
			b.res = b.newResult()
			b.res.Commit, b.res.Dirty = commit, dirty
			b.start()
			switch sc {
			case ScenarioSuspended:
				b.suspended()
			case ScenarioRunning:
				b.running()
			case ScenarioAutoscaler, ScenarioAutoscalerOff:
				b.autoscaler()
			}
			b.windows()
			b.finish()
			out = append(out, b.res)
		})
	}
	return out
}

func (b *bench) logf(format string, args ...any) {
	b.t.Helper()
	b.t.Logf("[%s %s] "+format, append([]any{time.Now().UTC().Format("15:04:05"), b.scenario}, args...)...)
}

func (b *bench) newResult() *Result {
	r := &Result{Scenario: b.scenario, Name: b.cfg.Name, OperatorBin: b.opBin, Date: time.Now().UTC().Format(time.RFC3339)}
	r.Machine = machine()
	n, m := b.cfg.Deployments, b.cfg.Snapshots
	switch {
	case b.scenario == ScenarioRunning:
		n, m = b.cfg.RunningDeployments, b.cfg.RunningSnapshots
	case isAutoscaler(b.scenario):
		n, m = b.cfg.AutoscalerDeployments, 0
	}
	r.Config.Deployments, r.Config.Snapshots, r.Config.Namespaces = n, m, b.cfg.Namespaces
	r.Config.Quiet, r.Config.Idle, r.Config.RestartWindow = b.cfg.Quiet.String(), b.cfg.Idle.String(), b.cfg.RestartWindow.String()
	return r
}

// gitCommit is rev's short hash, and for HEAD the uncommitted changes
// under cmd/ and pkg/ (what the operator binary is built from).
func gitCommit(root, rev string) (string, []string) {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", rev).Output()
	if err != nil {
		return rev, nil
	}
	commit := strings.TrimSpace(string(out))
	var dirty []string
	if rev == "HEAD" {
		if out, err := exec.Command("git", "-C", root, "status", "--porcelain", "--", "cmd", "pkg").Output(); err == nil {
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if l != "" {
					dirty = append(dirty, strings.TrimSpace(l))
				}
			}
		}
	}
	return commit, dirty
}

// buildRev builds the operator of a git revision: git archive into a
// temporary directory, go build there.
func buildRev(ctx context.Context, t *testing.T, root, rev string) (bin, commit string, err error) {
	commit, _ = gitCommit(root, rev)
	dir := t.TempDir()
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", rev)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	if untar.Stdin, err = archive.StdoutPipe(); err != nil {
		return "", "", err
	}
	if err := untar.Start(); err != nil {
		return "", "", err
	}
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Run(); err != nil {
		return "", "", fmt.Errorf("git archive %s: %v: %s", rev, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", "", fmt.Errorf("tar: %v", err)
	}
	bin = filepath.Join(dir, "flink-operator")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/flink-operator")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build (revision %s): %v: %s", rev, err, out)
	}
	t.Logf("operator built from revision %s (%s)", rev, commit)
	return bin, commit + " (" + rev + ")", nil
}

// machine describes this machine: CPUs and memory.
func machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				if f := strings.Fields(v); len(f) == 2 {
					kb, _ := strconv.ParseFloat(f[0], 64)
					mem = fmt.Sprintf(", %.1f GiB", kb/(1<<20))
				}
			}
		}
	}
	return fmt.Sprintf("%d CPUs%s, %s/%s", runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH)
}

// start brings up the control plane with the audit log, the CRDs, the
// namespaces, the harness's informers and the operator.
func (b *bench) start() {
	t := b.t
	if err := os.RemoveAll(b.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(b.dir, "audit.log")
	b.audit = &auditLog{path: auditPath}
	c, err := localcluster.Start(b.ctx, localcluster.Options{
		Out:   framework.TestWriter{T: t},
		Audit: &localcluster.AuditOptions{Path: auditPath, Users: []string{localcluster.OperatorUser}},
		// A running FlinkDeployment has a ClusterIP Service (<name>-rest):
		// the default /24 holds about 250.
		ServiceCIDR: "10.0.0.0/16",
		// The Deployment and ReplicaSet controllers make 2 Deployments'
		// pods per running FlinkDeployment: not at their default 20/s.
		ControllerManagerArgs: []string{"--kube-api-qps=300", "--kube-api-burst=600"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the local cluster: %v", err)
		}
	})
	b.cluster = c
	root, _ := localcluster.ModuleRoot()
	if _, err := c.InstallCRDs(b.ctx, filepath.Join(root, "manifests", "crds")); err != nil {
		t.Fatal(err)
	}
	if err := c.GrantClusterAdmin(b.ctx, localcluster.OperatorUser); err != nil {
		t.Fatal(err)
	}
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 10000, 10000
	b.kube = kubernetes.NewForConfigOrDie(cfg)
	b.flink = clientset.NewForConfigOrDie(cfg)
	for i := range b.cfg.Namespaces {
		ns := fmt.Sprintf("%s%02d", namespacePrefix, i)
		if _, err := b.kube.CoreV1().Namespaces().Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b.ns = append(b.ns, ns)
	}
	if runsJobs(b.scenario) { // pods are admitted once the default ServiceAccount exists
		for _, ns := range b.ns {
			b.waitFor(time.Minute, "ServiceAccount default in "+ns, func() bool {
				_, err := b.kube.CoreV1().ServiceAccounts(ns).Get(b.ctx, "default", metav1.GetOptions{})
				return err == nil
			})
		}
	}
	b.informers()
	if runsJobs(b.scenario) {
		spDir := filepath.Join(b.dir, "savepoints")
		if err := os.MkdirAll(spDir, 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(b.ctx)
		t.Cleanup(cancel)
		b.node = startFakeNode(ctx, b.kube, spDir, 4)
	}

	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	b.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	b.opArgs = append([]string{"--namespaces=" + strings.Join(b.ns, ","),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port)}, b.cfg.OperatorArgs...)
	if !b.cfg.NoWebhook {
		b.opArgs = append(b.opArgs, b.webhook()...)
	}
	if isAutoscaler(b.scenario) {
		b.opArgs = append(b.opArgs, "--config="+b.operatorConfig())
	}
	b.res.Config.OperatorArgs = b.opArgs
	b.res.Config.OperatorEnv = b.cfg.OperatorEnv
	b.opLog = filepath.Join(b.dir, "operator.log")
	b.startOperator()
}

func (b *bench) startOperator() {
	b.op = framework.StartOperatorWithEnv(b.t, b.cfg.OperatorEnv, b.opBin, b.cluster.OperatorKubeconfig, b.opLog, b.opArgs...)
	op := b.op
	b.t.Cleanup(op.Stop)
	if b.firstOp == nil {
		b.firstOp = op
	}
	b.waitFor(time.Minute, "the operator's /metrics", func() bool {
		_, err := restCalls(b.ctx, b.metrics)
		return err == nil
	})
	if b.cfg.NoWebhook {
		return
	}
	// The webhook is up once the API server gets its answer: a snapshot of
	// a missing job is refused.
	probe := b.savepoint(0, 0)
	probe.Name, probe.Spec.JobReference.Name = "webhook-probe", "does-not-exist"
	b.waitFor(time.Minute, "the API server calling the operator's webhook", func() bool {
		_, err := b.flink.FlinkV1beta1().FlinkStateSnapshots(probe.Namespace).Create(b.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "was not found")
	})
}

// webhookNamespace holds the webhook's self-managed certificate Secret.
const webhookNamespace = "flink-operator"

// webhook installs manifests/base/webhook.yaml (validating and mutating
// configurations) pointed at the operator's local port, and returns the
// operator's webhook flags.
func (b *bench) webhook() []string {
	t := b.t
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.kube.CoreV1().Namespaces().Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: webhookNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	root, _ := localcluster.ModuleRoot()
	if out, err := b.cluster.Kubectl("apply", "-f", filepath.Join(root, "manifests", "base", "webhook.yaml")); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	for kind, path := range map[string]string{"validatingwebhookconfiguration": "/validate", "mutatingwebhookconfiguration": "/mutate"} {
		if out, err := b.cluster.Kubectl("patch", kind, "flink-operator", "--type=json",
			"-p", `[{"op":"replace","path":"/webhooks/0/clientConfig","value":{"url":"`+url+path+`"}}]`); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	return []string{"--webhook-bind-address=127.0.0.1:" + strconv.Itoa(port), "--webhook-namespace=" + webhookNamespace,
		"--webhook-extra-hosts=127.0.0.1"}
}

// informers keep the harness's view of the snapshots and deployments.
func (b *bench) informers() {
	f := informers.NewSharedInformerFactory(b.flink, 0)
	snaps := f.Flink().V1beta1().FlinkStateSnapshots().Informer()
	deps := f.Flink().V1beta1().FlinkDeployments().Informer()
	onSnap := func(obj any) {
		s, ok := obj.(*v1beta1.FlinkStateSnapshot)
		if !ok {
			return
		}
		k := s.Namespace + "/" + s.Name
		b.mu.Lock()
		b.snaps[k] = s
		if s.Status.State.IsTerminal() {
			if _, ok := b.seenEnd[k]; !ok {
				b.seenEnd[k] = time.Now()
			}
		}
		b.mu.Unlock()
	}
	onDep := func(obj any) {
		if d, ok := obj.(*v1beta1.FlinkDeployment); ok {
			b.mu.Lock()
			b.deps[d.Namespace+"/"+d.Name] = d
			b.mu.Unlock()
		}
	}
	_, _ = snaps.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onSnap, UpdateFunc: func(_, o any) { onSnap(o) }})
	_, _ = deps.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onDep, UpdateFunc: func(_, o any) { onDep(o) }})
	stop := make(chan struct{})
	b.t.Cleanup(func() { close(stop) })
	f.Start(stop)
	f.WaitForCacheSync(stop)
}

func (b *bench) waitFor(timeout time.Duration, what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if b.op != nil {
			if err := b.op.Exited(); err != nil {
				framework.DumpTail(b.t, b.opLog, 50)
				b.t.Fatalf("waiting for %s: %v", what, err)
			}
		}
		if time.Now().After(deadline) || b.ctx.Err() != nil {
			b.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func depName(i int) string           { return fmt.Sprintf("%s%05d", deploymentPrefix, i) }
func snapName(dep, k int) string     { return fmt.Sprintf("%s%05d-%02d", snapshotPrefix, dep, k) }
func (b *bench) nsOf(dep int) string { return b.ns[dep%len(b.ns)] }

func (b *bench) deployment(i int, running bool) *v1beta1.FlinkDeployment {
	image, state := "flink:1.20", v1beta1.JobStateSuspended
	if running {
		image, state = "flinkops/fake-jobmanager:1.20", v1beta1.JobStateRunning
	}
	res := &v1beta1.ResourceSpec{Memory: "1024m", CPU: ptr.To(0.1)}
	conf := map[string]string{
		"taskmanager.numberOfTaskSlots":         "1",
		"execution.checkpointing.savepoint-dir": "file://" + filepath.Join(b.dir, "savepoints"),
	}
	jm := &v1beta1.JobManagerSpec{Resource: res}
	if isAutoscaler(b.scenario) {
		maps.Copy(conf, b.autoscalerConf())
		jm.PodTemplate = &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "flink-main-container", Env: []corev1.EnvVar{{Name: synthload.EnvVar, Value: b.cfg.AutoscalerLoad}},
		}}}}
	}
	return &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: depName(i), Namespace: b.nsOf(i)},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image:              image,
			FlinkVersion:       v1beta1.FlinkVersion1_20,
			Mode:               v1beta1.DeploymentModeStandalone,
			ServiceAccount:     "default",
			FlinkConfiguration: v1beta1.NewConfiguration(conf),
			JobManager:         jm,
			TaskManager:        &v1beta1.TaskManagerSpec{Resource: res},
			Job: &v1beta1.JobSpec{
				JarURI:      "local:///opt/flink/usrlib/testjob.jar",
				Parallelism: ptr.To[int32](1),
				UpgradeMode: v1beta1.UpgradeModeStateless,
				State:       state,
			},
		},
	}
}

func (b *bench) savepoint(dep, k int) *v1beta1.FlinkStateSnapshot {
	return &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: snapName(dep, k), Namespace: b.nsOf(dep)},
		Spec: v1beta1.FlinkStateSnapshotSpec{
			JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: depName(dep)},
			Savepoint:    &v1beta1.SavepointSpec{},
		},
	}
}

// createAll calls create(i) for i in [0, n) from the configured number of
// workers, retrying what the API server refuses for load, and returns the
// time of the first and the last create.
func (b *bench) createAll(what string, n int, create func(ctx context.Context, i int) error) (first, last time.Time) {
	b.t.Helper()
	var (
		next    atomic.Int64
		mu      sync.Mutex
		errs    []error
		wg      sync.WaitGroup
		created atomic.Int64
	)
	first = time.Now()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(15 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				b.logf("creating %s: %d/%d", what, created.Load(), n)
			}
		}
	}()
	for range b.cfg.CreateWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				var err error
				for attempt := 0; attempt < 10; attempt++ {
					if err = create(b.ctx, i); err == nil || apierrors.IsAlreadyExists(err) && attempt > 0 {
						err = nil
						break
					}
					if !apierrors.IsTooManyRequests(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsTimeout(err) &&
						!apierrors.IsInternalError(err) && !errors.Is(err, io.EOF) {
						break
					}
					time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				created.Add(1)
			}
		})
	}
	wg.Wait()
	close(done)
	last = time.Now()
	if len(errs) > 0 {
		b.t.Fatalf("creating %s: %d errors, first: %v", what, len(errs), errs[0])
	}
	b.logf("created %d %s in %s", n, what, last.Sub(first).Round(time.Millisecond))
	return first, last
}

// createDeployments creates n FlinkDeployments.
func (b *bench) createDeployments(n int, running bool) (first, last time.Time) {
	return b.createAll("FlinkDeployments", n, func(ctx context.Context, i int) error {
		d := b.deployment(i, running)
		_, err := b.flink.FlinkV1beta1().FlinkDeployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
		return err
	})
}

// createSnapshots creates m savepoints spread round-robin over n
// deployments.
func (b *bench) createSnapshots(n, m int) (first, last time.Time, keys []string) {
	for i := range m {
		keys = append(keys, b.nsOf(i%n)+"/"+snapName(i%n, i/n))
	}
	first, last = b.createAll("FlinkStateSnapshots", m, func(ctx context.Context, i int) error {
		s := b.savepoint(i%n, i/n)
		_, err := b.flink.FlinkV1beta1().FlinkStateSnapshots(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
		if err == nil {
			b.mu.Lock()
			b.created[s.Namespace+"/"+s.Name] = time.Now()
			b.mu.Unlock()
		}
		return err
	})
	return first, last, keys
}

// phase measures one load: begin (marks taken before the first create),
// load, then settle.
type phaseRun struct {
	p          *Phase
	mark       int
	rest0      map[string]float64
	proc0      procStats
	first      time.Time
	lastCreate time.Time
	objects    int // created in the phase
}

// beginPhase starts a phase that creates created objects; objects are the
// objects its writes are attributed to (divisors of the per-object
// figures).
func (b *bench) beginPhase(name string, objects map[string]int, created int) *phaseRun {
	pr := &phaseRun{p: &Phase{Name: name, Objects: objects}, mark: b.audit.mark(), objects: created}
	pr.rest0 = b.scrape()
	pr.proc0 = b.proc()
	return pr
}

func (b *bench) scrape() map[string]float64 {
	m, err := restCalls(b.ctx, b.metrics)
	if err != nil {
		b.t.Fatalf("scraping the operator's metrics: %v", err)
	}
	return m
}

func (b *bench) proc() procStats {
	st, err := readProc(b.op.Pid())
	if err != nil {
		b.t.Fatalf("operator process: %v", err)
	}
	// The kernel updates VmHWM lazily: a reading of VmRSS can exceed it.
	st.HWM = max(st.HWM, st.RSS)
	if _, heap, err := scrapeMetrics(b.ctx, b.metrics); err == nil {
		st.Heap = int64(heap)
	}
	st.PeakHeap = st.Heap
	if b.op == b.firstOp {
		b.peak = max(b.peak, st.HWM)
		st.HWM = b.peak
		b.peakHeap = max(b.peakHeap, st.Heap)
		st.PeakHeap = b.peakHeap
	}
	return st
}

// settle waits until done() holds and the operator made no write for
// cfg.Quiet (or the settle timeout from the phase's first create passes),
// then fills in the phase's figures.
func (b *bench) settle(pr *phaseRun, what string, done func() (bool, string)) {
	t := b.t
	deadline := pr.first.Add(b.cfg.SettleTimeout)
	lastLog := time.Now()
	var (
		ok       bool
		progress string
	)
	for {
		if err := b.audit.poll(); err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if err := b.op.Exited(); err != nil {
			framework.DumpTail(t, b.opLog, 50)
			t.Fatal(err)
		}
		ok, progress = done()
		b.proc() // samples the peak
		lastAt, n := b.audit.lastWrite()
		quietSince := pr.lastCreate
		if n > pr.mark && lastAt.After(quietSince) {
			quietSince = lastAt
		}
		if ok && time.Since(quietSince) >= b.cfg.Quiet {
			pr.p.Settled = true
			break
		}
		if time.Now().After(deadline) {
			b.logf("%s: NOT settled %s after the first create: %s", what, b.cfg.SettleTimeout, progress)
			b.res.Notes = append(b.res.Notes, fmt.Sprintf("%s: not settled within %s of the first create: %s", pr.p.Name, b.cfg.SettleTimeout, progress))
			break
		}
		if time.Since(lastLog) >= 15*time.Second {
			st := b.proc()
			b.logf("%s: %s; %d operator writes so far (last %s ago); operator RSS %.0f MiB, CPU %.1f s",
				what, progress, n-pr.mark, time.Since(lastAt).Round(time.Second), mib(st.RSS), st.CPU)
			lastLog = time.Now()
		}
		time.Sleep(time.Second)
	}
	ws := b.audit.since(pr.mark)
	end := time.Now()
	if pr.p.Settled {
		end = pr.lastCreate
		if len(ws) > 0 && ws[len(ws)-1].At.After(end) {
			end = ws[len(ws)-1].At
		}
	}
	p := pr.p
	p.CreateSeconds = pr.lastCreate.Sub(pr.first).Seconds()
	p.SettleSeconds = end.Sub(pr.first).Seconds()
	p.AfterLastCreateSeconds = end.Sub(pr.lastCreate).Seconds()
	p.Writes = tally(ws, p.Objects)
	p.WritesTotal = len(ws)
	p.WritesByObject = perClass(p.Writes)
	rest := b.scrape()
	p.REST, p.RESTTotal = restDelta(pr.rest0, rest)
	st := b.proc()
	p.Operator = figures(st)
	if pr.objects > 0 {
		p.CPUSecondsPerObject = (st.CPU - pr.proc0.CPU) / float64(pr.objects)
	}
	if m := p.Objects[classSnapshot]; m > 0 {
		p.WritesPerSnapshot = float64(p.WritesTotal) / float64(m)
		p.RESTPerSnapshot = p.RESTTotal / float64(m)
	}
	b.logf("%s: settled=%v in %.1f s from the first create (%.1f s after the last); %s", what, p.Settled, p.SettleSeconds, p.AfterLastCreateSeconds, progress)
	b.res.Phases = append(b.res.Phases, p)
	b.heapProfile("heap-" + strings.ReplaceAll(what, " ", "-") + ".pb.gz")
}

// heapProfile saves the operator's heap profile into the run's directory
// when it serves one (--profiling among the operator's flags), for `go tool
// pprof`.
func (b *bench) heapProfile(name string) {
	if !slices.Contains(b.opArgs, "--profiling") {
		return
	}
	url := strings.TrimSuffix(b.metrics, "/metrics") + "/debug/pprof/heap"
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.logf("heap profile: %v", err)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(b.dir, name), data, 0o644)
	}
	if err != nil {
		b.logf("heap profile: %v", err)
		return
	}
	b.logf("heap profile: %s", filepath.Join(b.dir, name))
}

func figures(st procStats) ProcFigures {
	return ProcFigures{RSSMiB: round(mib(st.RSS)), PeakRSSMiB: round(mib(st.HWM)), CPUSeconds: st.CPU,
		HeapMiB: round(mib(st.Heap)), PeakHeapMiB: round(mib(st.PeakHeap))}
}

func round(f float64) float64 { return math.Round(f*10) / 10 }

// snapshotProgress reports whether every snapshot of keys is terminal, and
// the counts by state.
func (b *bench) snapshotProgress(keys []string) (bool, string, map[string]int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	states := map[string]int{}
	terminal := 0
	for _, k := range keys {
		s := b.snaps[k]
		st := "(not seen)"
		if s != nil {
			st = string(s.Status.State)
			if st == "" {
				st = "(no state)"
			}
			if s.Status.State.IsTerminal() {
				terminal++
			}
		}
		states[st]++
	}
	return terminal == len(keys), fmt.Sprintf("%d/%d snapshots terminal %v", terminal, len(keys), states), states
}

// latencies computes create→trigger and create→result of keys from the
// status timestamps (result: resultTimestamp, else when the harness saw
// the snapshot terminal).
func (b *bench) latencies(p *Phase, keys []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var trig, res []float64
	for _, k := range keys {
		c, ok := b.created[k]
		s := b.snaps[k]
		if !ok || s == nil {
			continue
		}
		if ts, err := time.Parse(time.RFC3339Nano, s.Status.TriggerTimestamp); err == nil {
			trig = append(trig, ts.Sub(c).Seconds())
		}
		if s.Status.State.IsTerminal() {
			if ts, err := time.Parse(time.RFC3339Nano, s.Status.ResultTimestamp); err == nil {
				res = append(res, ts.Sub(c).Seconds())
			} else if seen, ok := b.seenEnd[k]; ok {
				res = append(res, seen.Sub(c).Seconds())
			}
		}
	}
	p.CreateToTrigger, p.CreateToResult = percentiles(trig), percentiles(res)
}

func percentiles(xs []float64) *Percentiles {
	if len(xs) == 0 {
		return nil
	}
	sort.Float64s(xs)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(xs)))) - 1
		return math.Round(xs[max(i, 0)]*1000) / 1000
	}
	return &Percentiles{N: len(xs), P50: at(0.5), P99: at(0.99), Max: at(1)}
}

// suspended: N suspended deployments, then M savepoints of them.
func (b *bench) suspended() {
	n, m := b.cfg.Deployments, b.cfg.Snapshots
	pr := b.beginPhase("suspended deployments + savepoints", map[string]int{classDeployment: n, classSnapshot: m}, n+m)
	first, _ := b.createDeployments(n, false)
	_, last, keys := b.createSnapshots(n, m)
	pr.first, pr.lastCreate = first, last
	b.settle(pr, "suspended", func() (bool, string) {
		ok, s, _ := b.snapshotProgress(keys)
		return ok, s
	})
	_, _, pr.p.States = b.snapshotProgress(keys)
	b.latencies(pr.p, keys)
}

// running: N deployments on fake JobManagers until all run, then M
// savepoints at once.
func (b *bench) running() {
	n, m := b.cfg.RunningDeployments, b.cfg.RunningSnapshots
	b.runDeployments(n)
	pr := b.beginPhase("savepoints of running jobs", map[string]int{classDeployment: n, classSnapshot: m}, m)
	var keys []string
	pr.first, pr.lastCreate, keys = b.createSnapshots(n, m)
	b.settle(pr, "savepoints", func() (bool, string) {
		ok, s, _ := b.snapshotProgress(keys)
		return ok, s
	})
	_, _, pr.p.States = b.snapshotProgress(keys)
	b.latencies(pr.p, keys)
}

// runDeployments creates n deployments on fake JobManagers and waits until
// every job runs (the phase "running deployments").
func (b *bench) runDeployments(n int) {
	pr := b.beginPhase("running deployments", map[string]int{classDeployment: n}, n)
	pr.first, pr.lastCreate = b.createDeployments(n, true)
	b.settle(pr, "deployments", func() (bool, string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		states := map[string]int{}
		running := 0
		for i := range n {
			st := "(not seen)"
			if d := b.deps[b.nsOf(i)+"/"+depName(i)]; d != nil {
				st = string(d.Status.JobStatus.State) + "/" + string(d.Status.LifecycleState)
				if d.Status.JobStatus.State == v1beta1.JobStatusRunning {
					running++
				}
			}
			states[st]++
		}
		return running == n, fmt.Sprintf("%d/%d jobs RUNNING %v", running, n, states)
	})
	if !pr.p.Settled {
		b.res.Operator = figures(b.proc())
		b.finish()
		b.t.Fatalf("the jobs did not all run within %s", b.cfg.SettleTimeout)
	}
}

// windows: the idle window, then a restart of the operator.
func (b *bench) windows() {
	b.res.Operator = figures(b.proc())
	if isAutoscaler(b.scenario) {
		return // its window is the measurement
	}
	for _, p := range b.res.Phases {
		if !p.Settled {
			b.res.Notes = append(b.res.Notes, "idle and restart windows skipped: not settled")
			return
		}
	}
	if b.cfg.Idle > 0 {
		b.logf("idle window of %s", b.cfg.Idle)
		mark, rest0 := b.audit.mark(), b.scrape()
		start := time.Now()
		b.sleep(b.cfg.Idle)
		b.res.Idle = b.window(mark, rest0, time.Since(start))
		b.res.Operator = figures(b.proc())
	}
	if b.cfg.RestartWindow > 0 {
		b.logf("restarting the operator; window of %s", b.cfg.RestartWindow)
		b.op.Stop()
		mark := b.audit.mark()
		start := time.Now()
		b.startOperator()
		b.sleep(b.cfg.RestartWindow - time.Since(start))
		b.res.Restart = b.window(mark, map[string]float64{}, time.Since(start))
	}
}

func (b *bench) sleep(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if err := b.op.Exited(); err != nil {
			b.t.Fatal(err)
		}
		time.Sleep(min(time.Second, time.Until(end)))
		_ = b.audit.poll()
		b.proc() // samples the peak
	}
}

func (b *bench) window(mark int, rest0 map[string]float64, d time.Duration) *Window {
	ws := b.audit.since(mark)
	w := &Window{Seconds: math.Round(d.Seconds()), Writes: tally(ws, nil), WritesTotal: len(ws), Operator: figures(b.proc())}
	w.REST, w.RESTTotal = restDelta(rest0, b.scrape())
	return w
}

// finish writes results.json and prints the report.
func (b *bench) finish() {
	path := filepath.Join(b.dir, "results.json")
	data, err := json.MarshalIndent(b.res, "", "  ")
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		b.t.Fatal(err)
	}
	report := Report(b.res)
	fmt.Fprint(os.Stdout, report)
	_ = os.WriteFile(filepath.Join(b.dir, "report.txt"), []byte(report), 0o644)
	b.logf("results: %s (audit log, operator log beside it)", path)
}

// Report renders a result for people.
func Report(r *Result) string {
	var s strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&s, format+"\n", args...) }
	f("=== bench-scale %s/%s: commit %s, %s, %s", r.Name, r.Scenario, r.Commit, r.Date, r.Machine)
	if len(r.Dirty) > 0 {
		f("    uncommitted changes under cmd/ pkg/: %s", strings.Join(r.Dirty, "; "))
	}
	f("    %d FlinkDeployments, %d snapshots, %d namespaces; quiet %s, idle %s, restart window %s; operator %s",
		r.Config.Deployments, r.Config.Snapshots, r.Config.Namespaces, r.Config.Quiet, r.Config.Idle, r.Config.RestartWindow, strings.Join(append(slices.Clone(r.Config.OperatorEnv), r.Config.OperatorArgs...), " "))
	for _, p := range r.Phases {
		f("--- %s %v", p.Name, p.Objects)
		f("  created in %.1f s; settled=%v: %.1f s from the first create, %.1f s after the last", p.CreateSeconds, p.Settled, p.SettleSeconds, p.AfterLastCreateSeconds)
		if len(p.States) > 0 {
			f("  snapshot states: %v", p.States)
		}
		f("  operator writes: %d in all %v", p.WritesTotal, p.WritesByObject)
		if p.WritesPerSnapshot > 0 {
			f("  writes per snapshot, everything included: %.2f", p.WritesPerSnapshot)
		}
		for _, w := range p.Writes {
			failed := ""
			if w.Failed > 0 {
				failed = fmt.Sprintf(" (%d failed)", w.Failed)
			}
			f("    %-20s %-32s %-7s %7d  %6.2f per object%s", w.Object, w.Resource, w.Verb, w.Count, w.PerObject, failed)
		}
		if p.CreateToTrigger != nil {
			f("  create→trigger: p50 %.3f s, p99 %.3f s, max %.3f s (n=%d)", p.CreateToTrigger.P50, p.CreateToTrigger.P99, p.CreateToTrigger.Max, p.CreateToTrigger.N)
		}
		if p.CreateToResult != nil {
			f("  create→result:  p50 %.3f s, p99 %.3f s, max %.3f s (n=%d)", p.CreateToResult.P50, p.CreateToResult.P99, p.CreateToResult.Max, p.CreateToResult.N)
		}
		f("  Flink REST calls: %.0f (%.2f per snapshot) %v", p.RESTTotal, p.RESTPerSnapshot, p.REST)
		f("  operator at the end: RSS %.1f MiB, peak %.1f MiB; heap in use %.1f MiB, peak %.1f MiB; CPU %.1f s (%.2f ms per object)", p.Operator.RSSMiB, p.Operator.PeakRSSMiB, p.Operator.HeapMiB, p.Operator.PeakHeapMiB, p.Operator.CPUSeconds, p.CPUSecondsPerObject*1000)
	}
	if r.Autoscaler != nil {
		reportAutoscaler(f, r.Autoscaler)
	}
	for _, w := range []struct {
		name string
		w    *Window
	}{{"idle window", r.Idle}, {"after a restart", r.Restart}} {
		if w.w == nil {
			continue
		}
		f("--- %s (%.0f s): %d writes, %.0f Flink REST calls %v; operator RSS %.1f MiB, peak %.1f MiB, heap in use %.1f MiB, CPU %.1f s",
			w.name, w.w.Seconds, w.w.WritesTotal, w.w.RESTTotal, w.w.REST, w.w.Operator.RSSMiB, w.w.Operator.PeakRSSMiB, w.w.Operator.HeapMiB, w.w.Operator.CPUSeconds)
		for _, x := range w.w.Writes {
			f("    %-20s %-32s %-7s %7d", x.Object, x.Resource, x.Verb, x.Count)
		}
	}
	f("--- operator (first process, up to the restart): RSS %.1f MiB, peak %.1f MiB; heap in use %.1f MiB, peak %.1f MiB; CPU %.1f s", r.Operator.RSSMiB, r.Operator.PeakRSSMiB, r.Operator.HeapMiB, r.Operator.PeakHeapMiB, r.Operator.CPUSeconds)
	for _, n := range r.Notes {
		f("  note: %s", n)
	}
	return s.String()
}
