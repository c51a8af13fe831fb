package options

import (
	"bufio"
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/config"
)

// upstreamRow is one line of upstream 1.15.0's generated option list.
type upstreamRow struct{ key, def, typ string }

func readUpstream(t *testing.T) []upstreamRow {
	t.Helper()
	// Upstream 1.15.0's option list, kept with the other upstream references
	// (its SOURCES.md says where it comes from).
	f, err := os.Open("../../upstreamtest/testdata/config/autoscaler-options.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []upstreamRow
	s := bufio.NewScanner(f)
	for first := true; s.Scan(); first = false {
		if first {
			continue // header
		}
		cols := strings.Split(s.Text(), "\t")
		if len(cols) != 3 {
			t.Fatalf("bad row %q", s.Text())
		}
		rows = append(rows, upstreamRow{cols[0], cols[1], cols[2]})
	}
	if len(rows) != 41 {
		t.Fatalf("upstream list has %d rows, want 41", len(rows))
	}
	return rows
}

// expectedDefault converts upstream's printed default to the Go value the
// option's getter returns, independently of the parsing code under test.
func expectedDefault(t *testing.T, r upstreamRow) any {
	t.Helper()
	if r.def == "(none)" {
		return nil
	}
	switch r.typ {
	case "Duration":
		parts := strings.Fields(r.def)
		n, _ := strconv.Atoi(parts[0])
		unit := map[string]time.Duration{"s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[parts[1]]
		if unit == 0 {
			t.Fatalf("%s: unit of %q not handled by the test", r.key, r.def)
		}
		return time.Duration(n) * unit
	case "Boolean":
		return r.def == "true"
	case "Double":
		f, err := strconv.ParseFloat(r.def, 64)
		if err != nil {
			t.Fatal(err)
		}
		return f
	case "Integer":
		n, err := strconv.Atoi(r.def)
		if err != nil {
			t.Fatal(err)
		}
		return n
	case "Enum":
		return r.def
	case "List<String>":
		if r.def != "" {
			t.Fatalf("%s: non-empty list default %q not handled by the test", r.key, r.def)
		}
		return []string(nil)
	}
	t.Fatalf("%s: type %s not handled by the test", r.key, r.typ)
	return nil
}

func optionByKey(key string) (option, bool) {
	for _, op := range all {
		if Prefix+op.key == key {
			return op, true
		}
	}
	return option{}, false
}

func TestEveryUpstreamKeyHasItsDefaultAndType(t *testing.T) {
	defaults := Defaults()
	for _, r := range readUpstream(t) {
		op, ok := optionByKey(r.key)
		if !ok {
			t.Errorf("%s: not parsed", r.key)
			continue
		}
		if op.typ != r.typ {
			t.Errorf("%s: type %s, upstream %s", r.key, op.typ, r.typ)
		}
		got, want := op.get(&defaults), expectedDefault(t, r)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: default %#v, upstream %q (%#v)", r.key, got, r.def, want)
		}
	}
}

func TestNoKeyUpstreamLacks(t *testing.T) {
	listed := map[string]bool{Deprecated: true} // the one hidden deprecated key upstream still reads
	for _, r := range readUpstream(t) {
		listed[r.key] = true
	}
	for _, k := range Keys() {
		if !listed[k] {
			t.Errorf("%s: parsed but not in upstream's list", k)
		}
	}
	if got := len(Keys()); got != 42 {
		t.Errorf("%d keys, want upstream's 41 plus %s", got, Deprecated)
	}
}

// TestEveryKeyIsRead sets each key to a value other than its default and
// checks that the value, and only that key's field, changed.
func TestEveryKeyIsRead(t *testing.T) {
	samples := map[string]string{
		typeDuration: "7 min", typeBool: "", typeDouble: "0.85", typeInt: "7", typeList: "a;b",
		typeMemory: "2g", typeEnum: "",
	}
	base := Defaults()
	for _, op := range all {
		v := samples[op.typ]
		switch {
		case op.typ == typeBool:
			v = strconv.FormatBool(!op.get(&base).(bool))
		case op.key == "metrics.busy-time.aggregator":
			v = "avg" // enums are case-insensitive
		case op.key == "scaling.key-group.partitions.adjust.mode":
			v = "maximize_utilisation"
		case op.key == "vertex.max-parallelism":
			v = "300"
		case op.key == "utilization.min":
			v = "0.5"
		case op.key == "excluded.periods":
			v = "9:00-10:00;* * 1 * * ?"
		}
		o, err := Parse(map[string]string{Prefix + op.key: v})
		if err != nil {
			t.Errorf("%s=%s: %v", op.key, v, err)
			continue
		}
		if reflect.DeepEqual(op.get(&o), op.get(&base)) {
			t.Errorf("%s=%s: value not read (still %v)", op.key, v, op.get(&o))
		}
		for _, other := range all {
			if other.key != op.key && !reflect.DeepEqual(other.get(&o), other.get(&base)) {
				t.Errorf("%s=%s also changed %s", op.key, v, other.key)
			}
		}
	}
}

func TestParse(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		name  string
		conf  map[string]string
		check func(o Options) bool
		// errKey, when set, is the key the error must name.
		errKey string
	}{
		{"Flink durations", map[string]string{"job.autoscaler.metrics.window": "10m", "job.autoscaler.restart.time": "PT90S"},
			func(o Options) bool { return o.MetricsWindow == 10*time.Minute && o.RestartTime == 90*time.Second }, ""},
		{"semicolon lists keep commas inside an item", map[string]string{"job.autoscaler.excluded.periods": "9:00-10:00 && * * * ? * 2,5 ; * * 1-2 * * ?"},
			func(o Options) bool {
				return reflect.DeepEqual(o.ExcludedPeriods, []string{"9:00-10:00 && * * * ? * 2,5", "* * 1-2 * * ?"})
			}, ""},
		{"old operator prefix is a fallback", map[string]string{"kubernetes.operator.job.autoscaler.enabled": "true"},
			func(o Options) bool { return o.Enabled }, ""},
		{"the new key wins over the old prefix", map[string]string{"kubernetes.operator.job.autoscaler.catch-up.duration": "1 h", "job.autoscaler.catch-up.duration": "10 min"},
			func(o Options) bool { return o.CatchUpDuration == 10*time.Minute }, ""},
		{"deprecated target.utilization", map[string]string{"job.autoscaler.target.utilization": "0.5"},
			func(o Options) bool { return o.UtilizationTarget == 0.5 }, ""},
		{"deprecated scale-up.grace-period is the scale-down interval", map[string]string{"job.autoscaler.scale-up.grace-period": "2 h"},
			func(o Options) bool { return o.ScaleDownInterval == 2*time.Hour }, ""},
		{"bounds default to target ± boundary", map[string]string{"job.autoscaler.target.utilization.boundary": "0.1"},
			func(o Options) bool { lo, hi := o.UtilizationBounds(); return approx(lo, 0.6) && approx(hi, 0.8) }, ""},
		{"explicit min and max win over the boundary", map[string]string{"job.autoscaler.utilization.min": "0.5", "job.autoscaler.utilization.max": "0.9"},
			func(o Options) bool {
				lo, hi := o.UtilizationBounds()
				return reflect.DeepEqual(o.UtilizationMin, f(0.5)) && lo == 0.5 && hi == 0.9
			}, ""},
		{"bad duration names the key", map[string]string{"job.autoscaler.stabilization.interval": "5 fortnights"}, nil, "job.autoscaler.stabilization.interval"},
		{"bad enum names the key it was written under", map[string]string{"kubernetes.operator.job.autoscaler.metrics.busy-time.aggregator": "median"}, nil, "kubernetes.operator.job.autoscaler.metrics.busy-time.aggregator"},
		{"bad boolean", map[string]string{"job.autoscaler.scaling.enabled": "yes"}, nil, "job.autoscaler.scaling.enabled"},
		{"bad memory", map[string]string{"job.autoscaler.quota.memory": "lots"}, nil, "job.autoscaler.quota.memory"},
		{"target out of range", map[string]string{"job.autoscaler.utilization.target": "1.5"}, nil, "job.autoscaler.utilization.target"},
		{"a period that is neither a daily range nor cron", map[string]string{"job.autoscaler.excluded.periods": "9:00-10:00;weekends"}, nil, "job.autoscaler.excluded.periods"},
		{"min parallelism above max", map[string]string{"job.autoscaler.vertex.min-parallelism": "300"}, nil, "job.autoscaler.vertex.max-parallelism"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse(tt.conf)
			if tt.errKey != "" {
				if err == nil || !strings.Contains(err.Error(), "config key "+tt.errKey+":") {
					t.Fatalf("error %v, want one naming %s", err, tt.errKey)
				}
				var ve *config.ValueError
				if !errors.As(err, &ve) {
					t.Errorf("error %v is not a *config.ValueError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(o) {
				t.Errorf("unexpected options %+v", o)
			}
		})
	}
}

func approx(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
