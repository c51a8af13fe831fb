// Package options reads the job autoscaler's `job.autoscaler.*` keys from a
// flat Flink configuration into a typed Options value, with the defaults,
// types and fallback keys of the Apache Flink Kubernetes Operator 1.15.0
// (AutoScalerOptions.java), so a FlinkDeployment written for upstream means
// the same here.
//
// Every key is described once, in the table `all`: its name, its default as
// upstream's documentation prints it, its type, its older names, and where it
// lands in Options. Parse walks that table; the tests compare it with
// upstream's generated option list (pkg/upstreamtest/testdata/config).
package options

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flinkops/flink-operator/pkg/autoscaler/periods"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Prefix is the prefix of every autoscaler key.
const Prefix = "job.autoscaler."

// oldPrefix is the prefix upstream used before the autoscaler became a
// module of its own (1.7); upstream still reads every key under it as a
// fallback, so old configurations keep working.
const oldPrefix = "kubernetes.operator." + Prefix

// Busy time aggregators (metrics.busy-time.aggregator): how the collector
// combines the busy time of a vertex's subtasks.
const (
	AggregatorMax = "MAX"
	AggregatorAvg = "AVG"
	AggregatorMin = "MIN"
)

// Key group / partition alignment modes
// (scaling.key-group.partitions.adjust.mode), spelled as upstream's enum.
const (
	// EvenlySpread looks for a parallelism that divides the number of key
	// groups (or source partitions), so every subtask gets the same share.
	EvenlySpread = "EVENLY_SPREAD"
	// MaximizeUtilisation accepts any parallelism that lowers the largest
	// share per subtask, without requiring a divisor.
	MaximizeUtilisation = "MAXIMIZE_UTILISATION"
)

// Options holds every autoscaler option. Optional options without a default
// are pointers (nil = unset), as upstream tells unset apart from any value.
type Options struct {
	Enabled        bool // enabled
	ScalingEnabled bool // scaling.enabled: false = evaluate and report only

	MetricsWindow         time.Duration // metrics.window
	StabilizationInterval time.Duration // stabilization.interval
	ExcludedPeriods       []string      // excluded.periods

	UtilizationTarget float64 // utilization.target
	// UtilizationBoundary is the deprecated target.utilization.boundary
	// (not in upstream's generated list, still read by upstream): the bounds
	// default to target ± boundary when utilization.min/max are unset.
	UtilizationBoundary float64
	UtilizationMax      *float64 // utilization.max
	UtilizationMin      *float64 // utilization.min

	ScaleDownInterval    time.Duration // scale-down.interval
	ScaleDownMaxFactor   float64       // scale-down.max-factor
	ScaleUpMaxFactor     float64       // scale-up.max-factor
	VertexMinParallelism int           // vertex.min-parallelism
	VertexMaxParallelism int           // vertex.max-parallelism
	VertexExcludeIDs     []string      // vertex.exclude.ids

	CatchUpDuration            time.Duration // catch-up.duration
	RestartTime                time.Duration // restart.time
	RestartTimeTrackingEnabled bool          // restart.time-tracking.enabled
	RestartTimeTrackingLimit   time.Duration // restart.time-tracking.limit
	BacklogLagThreshold        time.Duration // backlog-processing.lag-threshold

	ObservedTPRLagThreshold     time.Duration // observed-true-processing-rate.lag-threshold
	ObservedTPRSwitchThreshold  float64       // observed-true-processing-rate.switch-threshold
	ObservedTPRMinObservations  int           // observed-true-processing-rate.min-observations
	ObservedScalabilityEnabled  bool          // observed-scalability.enabled
	ObservedScalabilityMinObs   int           // observed-scalability.min-observations
	ObservedScalabilityCoeffMin float64       // observed-scalability.coefficient-min

	EffectivenessDetectionEnabled bool    // scaling.effectiveness.detection.enabled
	EffectivenessThreshold        float64 // scaling.effectiveness.threshold

	GCPressureThreshold         float64 // memory.gc-pressure.threshold
	HeapUsageThreshold          float64 // memory.heap-usage.threshold
	MemoryTuningEnabled         bool    // memory.tuning.enabled
	MemoryTuningMaximizeManaged bool    // memory.tuning.maximize-managed-memory
	MemoryTuningOverhead        float64 // memory.tuning.overhead
	MemoryScaleDownCompensation bool    // memory.tuning.scale-down-compensation.enabled

	HistoryMaxCount      int           // history.max.count
	HistoryMaxAge        time.Duration // history.max.age
	BusyTimeAggregator   string        // metrics.busy-time.aggregator: AggregatorMax, Avg or Min
	KeyGroupAdjustMode   string        // scaling.key-group.partitions.adjust.mode
	ScalingEventInterval time.Duration // scaling.event.interval
	RestClientTimeout    time.Duration // flink.rest-client.timeout
	QuotaCPU             *float64      // quota.cpu
	QuotaMemoryBytes     *int64        // quota.memory, in bytes
}

// UtilizationBounds returns the utilization band inside which no vertex is
// rescaled: utilization.min/max when set, else target ∓ boundary, as
// upstream's ScalingMetricEvaluator.computeProcessingRateThresholds.
func (o Options) UtilizationBounds() (lower, upper float64) {
	lower, upper = o.UtilizationTarget-o.UtilizationBoundary, o.UtilizationTarget+o.UtilizationBoundary
	if o.UtilizationMin != nil {
		lower = *o.UtilizationMin
	}
	if o.UtilizationMax != nil {
		upper = *o.UtilizationMax
	}
	return lower, upper
}

// Type names, as upstream's generated documentation prints them.
const (
	typeBool     = "Boolean"
	typeDuration = "Duration"
	typeDouble   = "Double"
	typeInt      = "Integer"
	typeEnum     = "Enum"
	typeList     = "List<String>"
	typeMemory   = "MemorySize"
)

// option describes one key. def is the default in upstream's printed form
// ("" for none); set parses a value and stores it; get returns the stored
// value, for the tests that compare defaults with upstream's list.
type option struct {
	key        string // without Prefix
	def        string
	typ        string
	deprecated []string // older full key names, tried after key and before the old-prefix fallback
	set        func(o *Options, v value) error
	get        func(o *Options) any
}

// Deprecated is the one key upstream still reads that its generated list
// leaves out (it is marked @Deprecated there); it is parsed like the others.
const Deprecated = "job.autoscaler.target.utilization.boundary"

// field parses a value into one field of Options and reads it back.
type field struct {
	set func(o *Options, v value) error
	get func(o *Options) any
}

// value is a raw configuration value with the name it was found under.
type value struct{ name, text string }

func (v value) cfg() config.Config { return config.Config{v.name: v.text} }

func durationField(f func(*Options) *time.Duration) field {
	return field{func(o *Options, v value) error {
		d, err := v.cfg().Duration(v.name)
		*f(o) = d
		return err
	}, func(o *Options) any {
		return *f(o)
	}}
}

func boolField(f func(*Options) *bool) field {
	return field{func(o *Options, v value) error {
		b, err := v.cfg().Bool(v.name)
		*f(o) = b
		return err
	}, func(o *Options) any {
		return *f(o)
	}}
}

func floatField(f func(*Options) *float64) field {
	return field{func(o *Options, v value) error {
		x, err := v.cfg().Float(v.name)
		*f(o) = x
		return err
	}, func(o *Options) any {
		return *f(o)
	}}
}

func optionalFloatField(f func(*Options) **float64) field {
	return field{func(o *Options, v value) error {
		x, err := v.cfg().Float(v.name)
		if err == nil {
			*f(o) = &x
		}
		return err
	}, func(o *Options) any {
		if p := *f(o); p != nil {
			return *p
		}
		return nil
	}}
}

func intField(f func(*Options) *int) field {
	return field{func(o *Options, v value) error {
		n, err := v.cfg().Int(v.name)
		*f(o) = n
		return err
	}, func(o *Options) any {
		return *f(o)
	}}
}

// listField splits like Flink's List<String> options: items separated by
// semicolons (a cron expression in excluded.periods contains commas, so a
// comma cannot be the separator), blanks trimmed, empty items dropped.
func listField(f func(*Options) *[]string) field {
	return field{func(o *Options, v value) error {
		var items []string
		for _, item := range strings.Split(v.text, ";") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		*f(o) = items
		return nil
	}, func(o *Options) any {
		return *f(o)
	}}
}

func enumField(allowed []string, f func(*Options) *string) field {
	return field{func(o *Options, v value) error {
		for _, a := range allowed {
			if strings.EqualFold(strings.TrimSpace(v.text), a) {
				*f(o) = a
				return nil
			}
		}
		return &config.ValueError{Key: v.name, Value: v.text,
			Err: fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))}
	}, func(o *Options) any {
		return *f(o)
	}}
}

// memoryField reads a size with the repo's one memory parser (Flink's
// MemorySize syntax, "8g", "1024 mb"; Kubernetes quantities are accepted too).
func memoryField(f func(*Options) **int64) field {
	return field{func(o *Options, v value) error {
		n, err := cluster.ParseMemory(v.text)
		if err != nil {
			return &config.ValueError{Key: v.name, Value: v.text, Err: err}
		}
		*f(o) = &n
		return nil
	}, func(o *Options) any {
		if p := *f(o); p != nil {
			return *p
		}
		return nil
	}}
}

func opt(key, def, typ string, f field, deprecated ...string) option {
	return option{key: key, def: def, typ: typ, set: f.set, get: f.get, deprecated: deprecated}
}

var (
	aggregators = []string{AggregatorAvg, AggregatorMax, AggregatorMin}
	adjustModes = []string{EvenlySpread, MaximizeUtilisation}
)

// all is every option upstream 1.15.0 reads, in upstream's documented order,
// plus the deprecated utilization boundary. The extra names are upstream's
// withDeprecatedKeys; every key also falls back to oldPrefix+key.
var all = []option{
	opt("backlog-processing.lag-threshold", "5 min", typeDuration, durationField(func(o *Options) *time.Duration { return &o.BacklogLagThreshold })),
	opt("catch-up.duration", "30 min", typeDuration, durationField(func(o *Options) *time.Duration { return &o.CatchUpDuration })),
	opt("enabled", "false", typeBool, boolField(func(o *Options) *bool { return &o.Enabled })),
	opt("excluded.periods", "", typeList, listField(func(o *Options) *[]string { return &o.ExcludedPeriods })),
	opt("flink.rest-client.timeout", "10 s", typeDuration, durationField(func(o *Options) *time.Duration { return &o.RestClientTimeout })),
	opt("history.max.age", "1 d", typeDuration, durationField(func(o *Options) *time.Duration { return &o.HistoryMaxAge })),
	opt("history.max.count", "3", typeInt, intField(func(o *Options) *int { return &o.HistoryMaxCount })),
	opt("memory.gc-pressure.threshold", "1.0", typeDouble, floatField(func(o *Options) *float64 { return &o.GCPressureThreshold })),
	opt("memory.heap-usage.threshold", "1.0", typeDouble, floatField(func(o *Options) *float64 { return &o.HeapUsageThreshold })),
	opt("memory.tuning.enabled", "false", typeBool, boolField(func(o *Options) *bool { return &o.MemoryTuningEnabled })),
	opt("memory.tuning.maximize-managed-memory", "false", typeBool, boolField(func(o *Options) *bool { return &o.MemoryTuningMaximizeManaged })),
	opt("memory.tuning.overhead", "0.2", typeDouble, floatField(func(o *Options) *float64 { return &o.MemoryTuningOverhead })),
	opt("memory.tuning.scale-down-compensation.enabled", "true", typeBool, boolField(func(o *Options) *bool { return &o.MemoryScaleDownCompensation })),
	opt("metrics.busy-time.aggregator", AggregatorMax, typeEnum, enumField(aggregators, func(o *Options) *string { return &o.BusyTimeAggregator })),
	opt("metrics.window", "15 min", typeDuration, durationField(func(o *Options) *time.Duration { return &o.MetricsWindow })),
	opt("observed-scalability.coefficient-min", "0.5", typeDouble, floatField(func(o *Options) *float64 { return &o.ObservedScalabilityCoeffMin })),
	opt("observed-scalability.enabled", "false", typeBool, boolField(func(o *Options) *bool { return &o.ObservedScalabilityEnabled })),
	opt("observed-scalability.min-observations", "3", typeInt, intField(func(o *Options) *int { return &o.ObservedScalabilityMinObs })),
	opt("observed-true-processing-rate.lag-threshold", "30 s", typeDuration, durationField(func(o *Options) *time.Duration { return &o.ObservedTPRLagThreshold })),
	opt("observed-true-processing-rate.min-observations", "2", typeInt, intField(func(o *Options) *int { return &o.ObservedTPRMinObservations })),
	opt("observed-true-processing-rate.switch-threshold", "0.15", typeDouble, floatField(func(o *Options) *float64 { return &o.ObservedTPRSwitchThreshold })),
	opt("quota.cpu", "", typeDouble, optionalFloatField(func(o *Options) **float64 { return &o.QuotaCPU })),
	opt("quota.memory", "", typeMemory, memoryField(func(o *Options) **int64 { return &o.QuotaMemoryBytes })),
	opt("restart.time", "5 min", typeDuration, durationField(func(o *Options) *time.Duration { return &o.RestartTime })),
	opt("restart.time-tracking.enabled", "false", typeBool, boolField(func(o *Options) *bool { return &o.RestartTimeTrackingEnabled })),
	opt("restart.time-tracking.limit", "15 min", typeDuration, durationField(func(o *Options) *time.Duration { return &o.RestartTimeTrackingLimit })),
	opt("scale-down.interval", "1 h", typeDuration, durationField(func(o *Options) *time.Duration { return &o.ScaleDownInterval }),
		Prefix+"scale-up.grace-period", oldPrefix+"scale-up.grace-period"),
	opt("scale-down.max-factor", "0.6", typeDouble, floatField(func(o *Options) *float64 { return &o.ScaleDownMaxFactor })),
	opt("scale-up.max-factor", "100000.0", typeDouble, floatField(func(o *Options) *float64 { return &o.ScaleUpMaxFactor })),
	opt("scaling.effectiveness.detection.enabled", "false", typeBool, boolField(func(o *Options) *bool { return &o.EffectivenessDetectionEnabled })),
	opt("scaling.effectiveness.threshold", "0.1", typeDouble, floatField(func(o *Options) *float64 { return &o.EffectivenessThreshold })),
	opt("scaling.enabled", "true", typeBool, boolField(func(o *Options) *bool { return &o.ScalingEnabled })),
	opt("scaling.event.interval", "30 min", typeDuration, durationField(func(o *Options) *time.Duration { return &o.ScalingEventInterval })),
	opt("scaling.key-group.partitions.adjust.mode", EvenlySpread, typeEnum, enumField(adjustModes, func(o *Options) *string { return &o.KeyGroupAdjustMode })),
	opt("stabilization.interval", "5 min", typeDuration, durationField(func(o *Options) *time.Duration { return &o.StabilizationInterval })),
	opt("utilization.max", "", typeDouble, optionalFloatField(func(o *Options) **float64 { return &o.UtilizationMax })),
	opt("utilization.min", "", typeDouble, optionalFloatField(func(o *Options) **float64 { return &o.UtilizationMin })),
	opt("utilization.target", "0.7", typeDouble, floatField(func(o *Options) *float64 { return &o.UtilizationTarget }),
		Prefix+"target.utilization", oldPrefix+"target.utilization"),
	opt("vertex.exclude.ids", "", typeList, listField(func(o *Options) *[]string { return &o.VertexExcludeIDs })),
	opt("vertex.max-parallelism", "200", typeInt, intField(func(o *Options) *int { return &o.VertexMaxParallelism })),
	opt("vertex.min-parallelism", "1", typeInt, intField(func(o *Options) *int { return &o.VertexMinParallelism })),

	opt("target.utilization.boundary", "0.3", typeDouble, floatField(func(o *Options) *float64 { return &o.UtilizationBoundary })),
}

// names lists the keys a value may be under, in the order Flink tries them:
// the key, its deprecated names, then the old operator prefix.
func (op option) names() []string {
	return append(append([]string{Prefix + op.key}, op.deprecated...), oldPrefix+op.key)
}

// Keys returns the full name of every option Parse reads (not their
// fallback names), in upstream's documented order.
func Keys() []string {
	keys := make([]string, 0, len(all))
	for _, op := range all {
		keys = append(keys, Prefix+op.key)
	}
	return keys
}

// Defaults returns the options of an empty configuration.
func Defaults() Options {
	o, err := Parse(nil)
	if err != nil {
		panic("autoscaler option defaults do not parse: " + err.Error())
	}
	return o
}

// Parse reads every autoscaler option from a flat Flink configuration. A
// blank value counts as unset (as in pkg/config). All bad values are
// reported together, each naming the key it was written under.
func Parse(conf map[string]string) (Options, error) {
	var o Options
	var errs []error
	for _, op := range all {
		v, ok := lookup(conf, op)
		if !ok {
			if op.def == "" && op.typ != typeList {
				continue // optional without default: stays nil
			}
			v = value{name: Prefix + op.key, text: op.def}
		}
		if err := op.set(&o, v); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// The range checks would only add noise about the zero values
		// the bad ones left.
		return o, errors.Join(errs...)
	}
	return o, errors.Join(o.check()...)
}

func lookup(conf map[string]string, op option) (value, bool) {
	for _, name := range op.names() {
		if t := strings.TrimSpace(conf[name]); t != "" {
			return value{name: name, text: t}, true
		}
	}
	return value{}, false
}

// check rejects values that parse but cannot work, with the key to fix.
// Upstream accepts some of these and fails later in the algorithm (for
// example a min parallelism above the max); refusing them up front gives
// the user one clear message instead.
func (o Options) check() []error {
	var errs []error
	bad := func(key string, v any, why string) {
		errs = append(errs, &config.ValueError{Key: Prefix + key, Value: fmt.Sprint(v), Err: errors.New(why)})
	}
	if o.UtilizationTarget <= 0 || o.UtilizationTarget > 1 {
		bad("utilization.target", o.UtilizationTarget, "must be in (0, 1]")
	}
	if o.UtilizationMin != nil && (*o.UtilizationMin < 0 || *o.UtilizationMin > o.UtilizationTarget) {
		bad("utilization.min", *o.UtilizationMin, "must be in [0, utilization.target]")
	}
	if o.UtilizationMax != nil && (*o.UtilizationMax < o.UtilizationTarget || *o.UtilizationMax > 1) {
		bad("utilization.max", *o.UtilizationMax, "must be in [utilization.target, 1]")
	}
	if o.ScaleDownMaxFactor < 0 || o.ScaleDownMaxFactor > 1 {
		bad("scale-down.max-factor", o.ScaleDownMaxFactor, "must be in [0, 1]")
	}
	if o.ScaleUpMaxFactor < 0 {
		bad("scale-up.max-factor", o.ScaleUpMaxFactor, "must not be negative")
	}
	if o.VertexMinParallelism < 1 {
		bad("vertex.min-parallelism", o.VertexMinParallelism, "must be at least 1")
	}
	if o.VertexMaxParallelism < o.VertexMinParallelism {
		bad("vertex.max-parallelism", o.VertexMaxParallelism, "must not be below vertex.min-parallelism")
	}
	if o.MetricsWindow <= 0 {
		bad("metrics.window", o.MetricsWindow, "must be positive")
	}
	if _, err := periods.ParseAll(o.ExcludedPeriods); err != nil {
		bad("excluded.periods", strings.Join(o.ExcludedPeriods, ";"), err.Error())
	}
	return errs
}
