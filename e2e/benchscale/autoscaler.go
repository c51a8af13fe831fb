package benchscale

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkops/flink-operator/pkg/autoscaler/store"
)

// The autoscaler scenarios (issue 33's cost line): N FlinkDeployments on
// fake JobManagers, each serving a job graph with a steady synthetic load
// (cmd/fake-jobmanager/synthload, asked for by $FAKE_JOBMANAGER_LOAD in the
// JobManager's pod template), on the adaptive scheduler, the job
// autoscaler on (ScenarioAutoscaler) or off (ScenarioAutoscalerOff), the
// operator resyncing every ReconcileInterval. Once every job runs, a window
// of AutoscalerWindow is measured: the operator's RSS, peak RSS and CPU,
// Flink REST calls per minute (by route, and per job), API writes per
// minute (the autoscaler's ConfigMaps among them), the events and the
// rescales.

// AutoscalerWindow is what the autoscaler scenarios measure.
type AutoscalerWindow struct {
	Enabled bool `json:"enabled"`
	Jobs    int  `json:"jobs"`
	// Load is every job's synthetic load (synthload.Parse).
	Load string `json:"load"`
	// FlinkConfiguration is what the scenario sets on every job beyond
	// the running scenario's.
	FlinkConfiguration map[string]string `json:"flinkConfiguration"`
	// OperatorConfig is the operator's --config.
	OperatorConfig map[string]string `json:"operatorConfig"`
	Seconds        float64           `json:"seconds"`
	// REST are the Flink REST calls of the window by "METHOD endpoint".
	REST                map[string]float64 `json:"rest"`
	RESTTotal           float64            `json:"restTotal"`
	RESTPerMinute       float64            `json:"restPerMinute"`
	RESTPerJobPerMinute float64            `json:"restPerJobPerMinute"`
	Writes              []WriteRow         `json:"writes"`
	WritesTotal         int                `json:"writesTotal"`
	WritesPerMinute     float64            `json:"writesPerMinute"`
	// ConfigMapWrites are the writes of configmaps in the window (the
	// autoscaler's state).
	ConfigMapWrites int `json:"configMapWrites"`
	// CPUSeconds is the operator's CPU in the window; CPUPercent of one
	// core.
	CPUSeconds float64 `json:"cpuSeconds"`
	CPUPercent float64 `json:"cpuPercent"`
	// RSSMiBAtStart is the operator's RSS when the window began; Operator
	// its figures at the end (the peak is the process's, since its start).
	RSSMiBAtStart float64     `json:"rssMiBAtStart"`
	Operator      ProcFigures `json:"operator"`
	// Events created in the window by reason.
	Events map[string]int `json:"events,omitempty"`
	// AutoscalerConfigMaps is the number of autoscaler-<name> ConfigMaps
	// at the end; Rescales the scalings they record (in the window or
	// before it).
	AutoscalerConfigMaps int `json:"autoscalerConfigMaps"`
	Rescales             int `json:"rescales"`
	// Parallelism counts the jobs by their vertices' parallelism at the
	// end, as the fake JobManagers run them ("1-1-3": source, map, sink).
	Parallelism map[string]int `json:"parallelism"`
	// Slices are the window in 30 s parts; Steady the per-minute figures
	// of the slices after the last one with a rescale (a resource
	// requirements PUT or a FlinkDeployment status write), the whole
	// window when there is none.
	Slices []Slice `json:"slices"`
	Steady *Rates  `json:"steady,omitempty"`
}

// Slice is a part of the window.
type Slice struct {
	StartSeconds    float64            `json:"startSeconds"`
	Seconds         float64            `json:"seconds"`
	REST            map[string]float64 `json:"rest"`
	RESTTotal       float64            `json:"restTotal"`
	Writes          int                `json:"writes"`
	ConfigMapWrites int                `json:"configMapWrites"`
	CPUSeconds      float64            `json:"cpuSeconds"`
	RSSMiB          float64            `json:"rssMiB"`
	// Rescaling: a resource-requirements PUT or a FlinkDeployment status
	// write happened in it.
	Rescaling bool `json:"rescaling"`
}

// Rates are per-minute figures over some slices.
type Rates struct {
	Seconds                  float64            `json:"seconds"`
	RESTPerMinute            float64            `json:"restPerMinute"`
	RESTPerJobPerMinute      float64            `json:"restPerJobPerMinute"`
	RESTPerMinuteByRoute     map[string]float64 `json:"restPerMinuteByRoute"`
	WritesPerMinute          float64            `json:"writesPerMinute"`
	ConfigMapWritesPerMinute float64            `json:"configMapWritesPerMinute"`
	CPUPercent               float64            `json:"cpuPercent"`
}

// steady sums the slices after the last rescaling one.
func steady(slices []Slice, jobs int) *Rates {
	from := 0
	for i, sl := range slices {
		if sl.Rescaling {
			from = i + 1
		}
	}
	if from >= len(slices) {
		return nil
	}
	r := &Rates{RESTPerMinuteByRoute: map[string]float64{}}
	var rest, cpu float64
	var writes, cms int
	for _, sl := range slices[from:] {
		r.Seconds += sl.Seconds
		rest += sl.RESTTotal
		cpu += sl.CPUSeconds
		writes += sl.Writes
		cms += sl.ConfigMapWrites
		for k, v := range sl.REST {
			r.RESTPerMinuteByRoute[k] += v
		}
	}
	m := r.Seconds / 60
	for k, v := range r.RESTPerMinuteByRoute {
		r.RESTPerMinuteByRoute[k] = round(v / m)
	}
	r.RESTPerMinute = round(rest / m)
	if jobs > 0 {
		r.RESTPerJobPerMinute = math.Round(rest/m/float64(jobs)*100) / 100
	}
	r.WritesPerMinute, r.ConfigMapWritesPerMinute = round(float64(writes)/m), round(float64(cms)/m)
	r.CPUPercent = round(cpu / r.Seconds * 100)
	return r
}

// autoscalerConf is the Flink configuration of the scenario's jobs beyond
// the running scenario's: the adaptive scheduler (in-place rescaling), the
// autoscaler on or off, a short metrics window and no stabilization wait,
// so that collections and decisions happen within the measured window.
func (b *bench) autoscalerConf() map[string]string {
	return map[string]string{
		"jobmanager.scheduler":                  "adaptive",
		"job.autoscaler.enabled":                fmt.Sprint(b.scenario == ScenarioAutoscaler),
		"job.autoscaler.metrics.window":         b.cfg.AutoscalerMetricsWindow,
		"job.autoscaler.stabilization.interval": "0 s",
	}
}

// operatorConfigValues is the operator's --config of the autoscaler
// scenarios.
func (b *bench) operatorConfigValues() map[string]string {
	return map[string]string{"kubernetes.operator.reconcile.interval": b.cfg.ReconcileInterval}
}

// operatorConfig writes the operator's --config file and returns its path.
func (b *bench) operatorConfig() string {
	var s strings.Builder
	for k, v := range b.operatorConfigValues() {
		fmt.Fprintf(&s, "%s: %s\n", k, v)
	}
	path := filepath.Join(b.dir, "operator-config.yaml")
	if err := os.WriteFile(path, []byte(s.String()), 0o644); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// autoscalerQuiet is the quiet that settles the start of the autoscaler
// scenarios' jobs.
const autoscalerQuiet = 5 * time.Second

// autoscaler: N jobs with the synthetic load until all run, then the
// measured window.
func (b *bench) autoscaler() {
	n := b.cfg.AutoscalerDeployments
	// Settled once every job runs and the start's writes are over: with
	// the autoscaler on, its ConfigMap writes (every third of the metrics
	// window) begin soon after, and would never leave a longer quiet.
	b.cfg.Quiet = min(b.cfg.Quiet, autoscalerQuiet)
	b.runDeployments(n)
	w := &AutoscalerWindow{Enabled: b.scenario == ScenarioAutoscaler, Jobs: n, Load: b.cfg.AutoscalerLoad,
		FlinkConfiguration: b.autoscalerConf(), OperatorConfig: b.operatorConfigValues()}
	b.logf("measuring a window of %s (autoscaler enabled: %v)", b.cfg.AutoscalerWindow, w.Enabled)
	mark, rest0, proc0 := b.audit.mark(), b.scrape(), b.proc()
	start := time.Now()
	w.RSSMiBAtStart = round(mib(proc0.RSS))
	sliceMark, sliceRest, sliceProc, sliceStart := mark, rest0, proc0, start
	for end := start.Add(b.cfg.AutoscalerWindow); time.Now().Before(end); {
		b.sleep(min(30*time.Second, time.Until(end)))
		st := b.proc()
		now, rest, m := time.Now(), b.scrape(), b.audit.mark()
		sl := Slice{StartSeconds: math.Round(sliceStart.Sub(start).Seconds()), Seconds: now.Sub(sliceStart).Seconds(),
			CPUSeconds: st.CPU - sliceProc.CPU, RSSMiB: round(mib(st.RSS))}
		sl.REST, sl.RESTTotal = restDelta(sliceRest, rest)
		for _, x := range b.audit.since(sliceMark)[:m-sliceMark] {
			sl.Writes++
			switch x.Resource {
			case "configmaps":
				sl.ConfigMapWrites++
			case "flinkdeployments/status":
				sl.Rescaling = true
			}
		}
		if sl.REST["PUT /jobs/:id/resource-requirements"] > 0 {
			sl.Rescaling = true
		}
		w.Slices = append(w.Slices, sl)
		sliceMark, sliceRest, sliceProc, sliceStart = m, rest, st, now
		b.logf("window: %s of %s; operator RSS %.0f MiB, CPU %.1f s; jobs by parallelism %v",
			time.Since(start).Round(time.Second), b.cfg.AutoscalerWindow, mib(st.RSS), st.CPU-proc0.CPU, b.node.parallelism())
	}
	d := time.Since(start)
	ws := b.audit.since(mark)
	st := b.proc()
	minutes := d.Minutes()
	w.Seconds = math.Round(d.Seconds())
	w.REST, w.RESTTotal = restDelta(rest0, b.scrape())
	w.RESTPerMinute = round(w.RESTTotal / minutes)
	if n > 0 {
		w.RESTPerJobPerMinute = math.Round(w.RESTTotal/minutes/float64(n)*100) / 100
	}
	w.Writes, w.WritesTotal = tally(ws, map[string]int{classDeployment: n}), len(ws)
	w.WritesPerMinute = round(float64(len(ws)) / minutes)
	for _, x := range ws {
		if x.Resource == "configmaps" {
			w.ConfigMapWrites++
		}
	}
	w.CPUSeconds = math.Round((st.CPU-proc0.CPU)*100) / 100
	w.CPUPercent = round((st.CPU - proc0.CPU) / d.Seconds() * 100)
	w.Operator = figures(st)
	w.Events = b.eventsSince(start)
	w.AutoscalerConfigMaps, w.Rescales = b.autoscalerState()
	w.Parallelism = b.node.parallelism()
	w.Steady = steady(w.Slices, n)
	b.res.Autoscaler = w
	b.logf("window done: %.0f REST calls (%.1f/min, %.2f per job per minute), %d writes, CPU %.1f s, RSS %.1f MiB (peak %.1f)",
		w.RESTTotal, w.RESTPerMinute, w.RESTPerJobPerMinute, w.WritesTotal, w.CPUSeconds, w.Operator.RSSMiB, w.Operator.PeakRSSMiB)
}

// eventsSince counts the events of the bench namespaces last seen at or
// after start, by reason (each counted with its count).
func (b *bench) eventsSince(start time.Time) map[string]int {
	out := map[string]int{}
	for _, ns := range b.ns {
		list, err := b.kube.CoreV1().Events(ns).List(b.ctx, metav1.ListOptions{})
		if err != nil {
			b.logf("events of %s: %v", ns, err)
			continue
		}
		for _, e := range list.Items {
			at := e.LastTimestamp.Time
			if at.IsZero() {
				at = e.EventTime.Time
			}
			if at.IsZero() {
				at = e.CreationTimestamp.Time
			}
			if at.Before(start.Truncate(time.Second)) {
				continue
			}
			out[e.Reason] += max(int(e.Count), 1)
		}
	}
	return out
}

// autoscalerState counts the autoscaler ConfigMaps of the bench namespaces
// and the scalings they record.
func (b *bench) autoscalerState() (configMaps, scalings int) {
	for _, ns := range b.ns {
		list, err := b.kube.CoreV1().ConfigMaps(ns).List(b.ctx, metav1.ListOptions{LabelSelector: "component=" + store.LabelComponent})
		if err != nil {
			b.logf("ConfigMaps of %s: %v", ns, err)
			continue
		}
		for i := range list.Items {
			cm := &list.Items[i]
			configMaps++
			s, err := store.Decode(cm)
			if err != nil {
				b.logf("ConfigMap %s/%s: %v", ns, cm.Name, err)
				continue
			}
			scalings += len(s.State.Scalings)
		}
	}
	return configMaps, scalings
}

// reportAutoscaler renders the window.
func reportAutoscaler(f func(string, ...any), w *AutoscalerWindow) {
	f("--- autoscaler window (%.0f s), autoscaler enabled: %v; %d jobs, load %s", w.Seconds, w.Enabled, w.Jobs, w.Load)
	f("  jobs' configuration %s; operator %s", kv(w.FlinkConfiguration), kv(w.OperatorConfig))
	f("  Flink REST calls: %.0f, %.1f per minute, %.2f per job per minute", w.RESTTotal, w.RESTPerMinute, w.RESTPerJobPerMinute)
	keys := make([]string, 0, len(w.REST))
	for k := range w.REST {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f("    %-64s %7.0f  %7.1f/min", k, w.REST[k], w.REST[k]/(w.Seconds/60))
	}
	f("  API writes: %d, %.1f per minute (ConfigMaps %d)", w.WritesTotal, w.WritesPerMinute, w.ConfigMapWrites)
	for _, x := range w.Writes {
		f("    %-20s %-32s %-7s %7d", x.Object, x.Resource, x.Verb, x.Count)
	}
	f("  events %v; autoscaler ConfigMaps %d recording %d rescales; jobs by parallelism %v", w.Events, w.AutoscalerConfigMaps, w.Rescales, w.Parallelism)
	for _, sl := range w.Slices {
		f("    slice at %4.0f s (%2.0f s): %6.0f REST calls, %4d writes (ConfigMaps %4d), CPU %5.2f s, RSS %.1f MiB%s",
			sl.StartSeconds, sl.Seconds, sl.RESTTotal, sl.Writes, sl.ConfigMapWrites, sl.CPUSeconds, sl.RSSMiB, map[bool]string{true: "; rescaling"}[sl.Rescaling])
	}
	if r := w.Steady; r != nil {
		f("  steady (the last %.0f s, after the last rescale): %.1f REST calls per minute (%.2f per job) %v; %.1f writes per minute (ConfigMaps %.1f); CPU %.1f %% of a core",
			r.Seconds, r.RESTPerMinute, r.RESTPerJobPerMinute, r.RESTPerMinuteByRoute, r.WritesPerMinute, r.ConfigMapWritesPerMinute, r.CPUPercent)
	}
	f("  operator: RSS %.1f MiB at the start, %.1f MiB at the end, peak %.1f MiB; heap in use %.1f MiB; CPU %.2f s in the window (%.1f %% of a core)",
		w.RSSMiBAtStart, w.Operator.RSSMiB, w.Operator.PeakRSSMiB, w.Operator.HeapMiB, w.CPUSeconds, w.CPUPercent)
}

func kv(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + m[k]
	}
	return strings.Join(parts, ", ")
}
