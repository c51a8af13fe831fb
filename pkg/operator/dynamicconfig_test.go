package operator

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
)

// dynamicFixture is a --config file, the operator's options loaded from it
// as main does (in the state of one internal run), and a context whose log
// lines the test can read.
type dynamicFixture struct {
	t    *testing.T
	path string
	opts *runState
	live *controllerctx.LiveConfig
	ctx  context.Context
	logs func() string
}

func newDynamicFixture(t *testing.T, contents string) *dynamicFixture {
	t.Helper()
	f := &dynamicFixture{t: t, path: filepath.Join(t.TempDir(), "config.yaml")}
	f.write(contents)
	cfg, _, err := config.LoadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	f.opts = &runState{Options: DefaultOptions()}
	f.opts.Config, f.opts.ConfigFile = cfg, f.path
	f.opts.Namespaces = config.WatchedNamespaces(cfg)
	f.opts.latest = &latestConfig{cfg: cfg}
	f.live = controllerctx.NewLiveConfig(cfg)
	f.opts.live = f.live
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	f.ctx = klog.NewContext(context.Background(), logger)
	f.logs = func() string { return logger.GetSink().(ktesting.Underlier).GetBuffer().String() }
	return f
}

func (f *dynamicFixture) write(contents string) {
	f.t.Helper()
	if err := os.WriteFile(f.path, []byte(contents), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// watcher is newConfigWatcher with a counter of namespace restarts.
func (f *dynamicFixture) watcher(restarts *int) *configWatcher {
	f.t.Helper()
	w := newConfigWatcher(f.ctx, f.opts, func() { *restarts++ })
	if w == nil {
		f.t.Fatal("no watcher for an enabled dynamic configuration")
	}
	return w
}

func (f *dynamicFixture) liveValue(key string) string {
	return f.live.Load().String(key)
}

// A changed file applies within one check interval (5 min by default),
// measured on a fake clock, and not before.
func TestDynamicConfigAppliesChangedFile(t *testing.T) {
	f := newDynamicFixture(t, "kubernetes.operator.savepoint.history.max.count: 3\n")
	var restarts int
	w := f.watcher(&restarts)
	if w.interval != 5*time.Minute {
		t.Fatalf("interval %v, want upstream's default 5 min", w.interval)
	}
	reads := 0
	w.load = func(path string) (config.Config, []config.Warning, error) {
		reads++
		return config.LoadFile(path)
	}
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx, clk) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	defer stop()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}

	f.write("kubernetes.operator.savepoint.history.max.count: 7\nkubernetes.operator.reconcile.interval: 30 s\n")
	clk.Step(w.interval - time.Second)
	time.Sleep(20 * time.Millisecond)
	if got := f.liveValue(config.KeySavepointHistoryMaxCount); got != "3" || reads != 0 {
		t.Fatalf("before the interval: max.count %q after %d reads, want 3 and no read", got, reads)
	}
	clk.Step(time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for f.liveValue(config.KeySavepointHistoryMaxCount) != "7" {
		if time.Now().After(deadline) {
			t.Fatalf("changed file not applied after one interval; logs:\n%s", f.logs())
		}
		time.Sleep(time.Millisecond)
	}
	stop() // the check may still be logging
	if got := f.liveValue(config.KeyReconcileInterval); got != "30 s" {
		t.Errorf("reconcile.interval %q, want the file's 30 s", got)
	}
	if got := f.opts.latest.get().String(config.KeySavepointHistoryMaxCount); got != "7" {
		t.Errorf("latest config for the next internal run has max.count %q, want 7", got)
	}
	if restarts != 0 {
		t.Errorf("%d namespace restarts for a change that keeps the namespaces", restarts)
	}
	if logs := f.logs(); !strings.Contains(logs, "Applied the changed operator configuration") || strings.Contains(logs, "needs a restart") {
		t.Errorf("logs:\n%s", logs)
	}
	// Upstream's line (its test_dynamic_config.sh greps it): what the
	// file sets, no defaults.
	if logs := f.logs(); !strings.Contains(logs, "Setting default configuration to {kubernetes.operator.reconcile.interval=30 s, kubernetes.operator.savepoint.history.max.count=7}") {
		t.Errorf("no upstream-style line with the changed value; logs:\n%s", logs)
	}
}

// The changed keys as a Java Map prints them, sensitive values hidden.
func TestJavaMapHidesSecrets(t *testing.T) {
	c := config.Config{"kubernetes.operator.watched.namespaces": "default,flink,dynamic", "s3.secret-key": "hunter2", "a.password": "pw"}
	got := javaMap(c, []string{"a.password", "kubernetes.operator.watched.namespaces", "gone", "s3.secret-key"})
	want := "{a.password=******, kubernetes.operator.watched.namespaces=default,flink,dynamic, gone=<removed>, s3.secret-key=******}"
	if got != want {
		t.Errorf("javaMap = %s, want %s", got, want)
	}
}

// An invalid file (a bad value, bad YAML, a missing file) is not applied:
// the configuration in use stays, the error is logged once per problem,
// and the operator keeps checking.
func TestDynamicConfigInvalidFileKeepsConfigInUse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		invalid string // "" removes the file
	}{
		{"bad value", "kubernetes.operator.savepoint.history.max.count: lots\n"},
		{"bad YAML", "kubernetes.operator: [unclosed\n"},
		{"missing file", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDynamicFixture(t, "kubernetes.operator.savepoint.history.max.count: 3\n")
			var restarts int
			w := f.watcher(&restarts)
			if tc.invalid == "" {
				if err := os.Remove(f.path); err != nil {
					t.Fatal(err)
				}
			} else {
				f.write(tc.invalid)
			}
			before := f.live.Load()
			for range 3 {
				if w.check(f.ctx) {
					t.Fatal("an invalid file ended the run")
				}
			}
			if got := f.liveValue(config.KeySavepointHistoryMaxCount); got != "3" || !sameConfig(f.live.Load(), before) {
				t.Errorf("config in use changed to %v", f.live.Load())
			}
			if got := f.opts.latest.get().String(config.KeySavepointHistoryMaxCount); got != "3" {
				t.Errorf("latest config %q, want the old 3", got)
			}
			if n := strings.Count(f.logs(), "is invalid: it is not applied"); n != 1 {
				t.Errorf("invalid file logged %d times in 3 checks, want once; logs:\n%s", n, f.logs())
			}
			// Fixed: applied at the next check.
			f.write("kubernetes.operator.savepoint.history.max.count: 4\n")
			w.check(f.ctx)
			if got := f.liveValue(config.KeySavepointHistoryMaxCount); got != "4" {
				t.Errorf("fixed file not applied: max.count %q", got)
			}
		})
	}
}

var restartLine = regexp.MustCompile(`needs a restart of the operator to apply: the value in use stays until then .*key="([^"]+)"`)

func sameConfig(a, b config.Config) bool {
	return len(changedKeys(a, b)) == 0
}

// Disabled (or no --config file): nothing watches the file, whatever the
// file says later.
func TestDynamicConfigDisabled(t *testing.T) {
	f := newDynamicFixture(t, "kubernetes.operator.dynamic.config.enabled: false\n")
	if w := newConfigWatcher(f.ctx, f.opts, func() {}); w != nil {
		t.Errorf("watcher %+v with dynamic.config.enabled false", w)
	}
	f = newDynamicFixture(t, "kubernetes.operator.savepoint.history.max.count: 3\n")
	f.opts.ConfigFile = ""
	if w := newConfigWatcher(f.ctx, f.opts, func() {}); w != nil {
		t.Errorf("watcher %+v without a --config file", w)
	}
}

// A changed restart-only key is logged as needing a restart and keeps the
// value in use; the other changed keys apply. The change is reported once.
func TestDynamicConfigRestartOnlyKeyWarned(t *testing.T) {
	f := newDynamicFixture(t, "kubernetes.operator.reconcile.parallelism: 10\nkubernetes.operator.savepoint.history.max.count: 3\n")
	var restarts int
	w := f.watcher(&restarts)
	f.write("kubernetes.operator.reconcile.parallelism: 50\nkubernetes.operator.savepoint.history.max.count: 4\nkubernetes.operator.dynamic.config.check.interval: 1 min\n")
	w.check(f.ctx)
	if got := f.liveValue(config.KeyReconcileParallelism); got != "10" {
		t.Errorf("reconcile.parallelism in use %q, want 10 until a restart", got)
	}
	if got := f.liveValue(config.KeyDynamicConfigCheckInterval); got != "5 min" {
		t.Errorf("check.interval in use %q, want 5 min until a restart", got)
	}
	if got := f.liveValue(config.KeySavepointHistoryMaxCount); got != "4" {
		t.Errorf("savepoint.history.max.count %q, want the new 4", got)
	}
	var warned []string
	for _, line := range strings.Split(f.logs(), "\n") {
		if m := restartLine.FindStringSubmatch(line); m != nil {
			warned = append(warned, m[1])
		}
	}
	if want := []string{config.KeyReconcileParallelism, config.KeyDynamicConfigCheckInterval}; !slices.Equal(warned, want) {
		t.Errorf("needs-a-restart lines for %v, want %v; logs:\n%s", warned, want, f.logs())
	}
	// The next internal run starts from the whole file.
	if got := withLatestConfig(f.opts.Options, f.opts.latest).Config.String(config.KeyReconcileParallelism); got != "50" {
		t.Errorf("next run's parallelism %q, want 50", got)
	}
	// Unchanged file: nothing more is logged.
	n := strings.Count(f.logs(), "needs a restart")
	w.check(f.ctx)
	if m := strings.Count(f.logs(), "needs a restart"); m != n {
		t.Errorf("needs-a-restart logged again for an unchanged file (%d, then %d)", n, m)
	}
}

// Watched namespaces: with dynamic.namespaces.enabled a change ends the run
// (Run starts over on the new namespaces); without it, or with
// --namespaces, it is only logged.
func TestDynamicConfigWatchedNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dynamic  bool
		fromFlag bool
		next     string
		restart  bool
		log      string
	}{
		{"dynamic, namespace added", true, false, "a,b,c", true, "restarting the informers"},
		{"dynamic, same set reordered", true, false, "b, a", false, ""},
		{"dynamic, to all namespaces", true, false, "", true, "restarting the informers"},
		{"not dynamic", false, false, "a,b,c", false, "needs a restart"},
		{"from --namespaces", true, true, "a,b,c", false, "--namespaces sets them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := "kubernetes.operator.dynamic.namespaces.enabled: " + map[bool]string{true: "true", false: "false"}[tc.dynamic] + "\n"
			f := newDynamicFixture(t, dyn+"kubernetes.operator.watched.namespaces: a,b\n")
			f.opts.NamespacesFromFlag = tc.fromFlag
			var restarts int
			w := f.watcher(&restarts)
			f.write(dyn + "kubernetes.operator.watched.namespaces: " + tc.next + "\nkubernetes.operator.savepoint.history.max.count: 9\n")
			ending := w.check(f.ctx)
			if ending != tc.restart || restarts != map[bool]int{true: 1, false: 0}[tc.restart] {
				t.Errorf("run ending %v after %d namespace restarts, want %v", ending, restarts, tc.restart)
			}
			if got := f.liveValue(config.KeySavepointHistoryMaxCount); got != "9" {
				t.Errorf("other keys not applied: max.count %q", got)
			}
			if tc.log != "" && !strings.Contains(f.logs(), tc.log) {
				t.Errorf("no %q in logs:\n%s", tc.log, f.logs())
			}
			next := withLatestConfig(f.opts.Options, f.opts.latest).Namespaces
			want := f.opts.Namespaces
			if tc.dynamic && !tc.fromFlag {
				want = config.WatchedNamespaces(f.opts.latest.get())
			}
			if !slices.Equal(next, want) {
				t.Errorf("next run watches %v, want %v", next, want)
			}
		})
	}
}

// Without the FlinkStateSnapshot CRD a reloaded file keeps snapshot
// resources off, as at start (legacyConfig).
func TestDynamicConfigLegacyMode(t *testing.T) {
	f := newDynamicFixture(t, "kubernetes.operator.savepoint.history.max.count: 3\n")
	f.opts.snapshotCRDMissing = true
	f.live.Store(legacyConfig(f.opts.Config))
	var restarts int
	w := f.watcher(&restarts)
	f.write("kubernetes.operator.savepoint.history.max.count: 5\n")
	w.check(f.ctx)
	if got := f.liveValue(config.KeySnapshotResourceEnabled); got != "false" {
		t.Errorf("snapshot.resource.enabled %q after a reload in legacy mode, want false", got)
	}
	if got := f.liveValue(config.KeySavepointHistoryMaxCount); got != "5" {
		t.Errorf("max.count %q, want 5", got)
	}
}

func TestChangedKeysAndNamespaces(t *testing.T) {
	got := changedKeys(config.Config{"a": "1", "b": "2", "c": "3"}, config.Config{"a": "1", "b": "x", "d": "4"})
	if want := []string{"b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("changedKeys %v, want %v", got, want)
	}
	for _, tc := range []struct {
		a, b []string
		same bool
	}{
		{nil, nil, true},
		{nil, []string{}, true},
		{[]string{"a", "b"}, []string{"b", "a"}, true},
		{[]string{"a"}, nil, false},
		{[]string{"a"}, []string{"a", "b"}, false},
	} {
		if got := sameNamespaces(tc.a, tc.b); got != tc.same {
			t.Errorf("sameNamespaces(%v, %v) = %v", tc.a, tc.b, got)
		}
	}
}

// A namespace change made while dynamic namespaces were off is logged once,
// and applied when dynamic namespaces are turned on later.
func TestDynamicNamespacesEnabledLater(t *testing.T) {
	f := newDynamicFixture(t, "kubernetes.operator.watched.namespaces: a\n")
	var restarts int
	w := f.watcher(&restarts)
	f.write("kubernetes.operator.watched.namespaces: a,b\n")
	if w.check(f.ctx) || restarts != 0 {
		t.Fatal("namespaces changed without dynamic.namespaces.enabled")
	}
	f.write("kubernetes.operator.watched.namespaces: a,b\nkubernetes.operator.savepoint.history.max.count: 2\n")
	w.check(f.ctx)
	if n := strings.Count(f.logs(), "changed the watched namespaces, but it needs a restart"); n != 1 {
		t.Errorf("namespace change logged %d times, want once; logs:\n%s", n, f.logs())
	}
	f.write("kubernetes.operator.watched.namespaces: a,b\nkubernetes.operator.dynamic.namespaces.enabled: true\n")
	if !w.check(f.ctx) || restarts != 1 {
		t.Errorf("turning dynamic namespaces on did not apply the changed namespaces (%d restarts)", restarts)
	}
	if got := withLatestConfig(f.opts.Options, f.opts.latest).Namespaces; !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("next run watches %v, want [a b]", got)
	}
}

// The kubernetes.operator.exception.* keys apply without a restart: the job
// engine renders status.error with the configuration in use at each sync.
func TestDynamicConfigExceptionKeysApplyLive(t *testing.T) {
	f := newDynamicFixture(t, "kubernetes.operator.exception.field.max.length: 100\n")
	var restarts int
	w := f.watcher(&restarts)
	f.write("kubernetes.operator.exception.field.max.length: 20\n" +
		"kubernetes.operator.exception.stacktrace.enabled: true\n" +
		"kubernetes.operator.exception.stacktrace.max.length: 50\n" +
		"kubernetes.operator.exception.throwable.list.max.count: 1\n" +
		"kubernetes.operator.exception.label.mapper: 'timeout:TIMEOUT'\n")
	w.check(f.ctx)
	for key, want := range map[string]string{
		config.KeyExceptionFieldMaxLength:        "20",
		config.KeyExceptionStackTraceEnabled:     "true",
		config.KeyExceptionStackTraceMaxLength:   "50",
		config.KeyExceptionThrowableListMaxCount: "1",
		config.KeyExceptionLabelMapper:           "timeout:TIMEOUT",
	} {
		if got := f.liveValue(key); got != want {
			t.Errorf("%s in use %q, want the new %q", key, got, want)
		}
	}
	if strings.Contains(f.logs(), "needs a restart") {
		t.Errorf("an exception key was logged as needing a restart:\n%s", f.logs())
	}
}
