// Package store keeps the job autoscaler's state where upstream's operator
// keeps it: a ConfigMap autoscaler-<resource name> beside the resource,
// labelled app=<name> and component=autoscaler and owned by it, so its
// state goes with the resource and an upstream-made ConfigMap is read.
//
// The parallelism overrides in force are stored under upstream's key and in
// upstream's format (parallelismOverrides: "<vertex>:<parallelism>,..."):
// they are what the job runs with, and a job taken over from upstream's
// operator keeps the parallelism upstream's autoscaler gave it. The rest of
// the state (scaling history, pending scale-downs, the reset nonce) is this
// operator's own (decide.State), gzip-compressed and base64-encoded under a
// key of its own, as upstream compresses its history; upstream's history
// keys (scalingHistory, scalingTracking, collectedMetrics, ...) are left as
// they are and not read (their YAML is upstream's Java types).
//
// The collector's metric history (pkg/autoscaler/collect's graph and
// samples) is kept, as upstream keeps its collectedMetrics, under a key of
// its own (KeyMetrics, see Metrics), so that the metrics window survives a
// restart of the operator. A ConfigMap written before it (or by upstream)
// simply has no history.
package store

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/gob"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/flinkops/flink-operator/pkg/autoscaler/decide"
)

const (
	// KeyParallelismOverrides is upstream's key for the overrides in force.
	KeyParallelismOverrides = "parallelismOverrides"
	// KeyState holds decide.State, gob-encoded, gzipped, base64.
	KeyState = "flinkops.scalingState"

	// LabelComponent is the component label's value on the ConfigMap.
	LabelComponent = "autoscaler"

	// MaxStateBytes bounds the encoded state: the oldest scalings are
	// dropped until it fits (a ConfigMap holds 1 MiB in all).
	MaxStateBytes = 256 << 10
)

// Name is the ConfigMap of the resource called resource.
func Name(resource string) string { return "autoscaler-" + resource }

// Stored is what the ConfigMap holds.
type Stored struct {
	// State is the autoscaler's memory; its Overrides are those in force.
	State decide.State
	// Metrics, when not nil, is the metric history Encode writes under
	// KeyMetrics (bounded: the oldest samples go first; no samples remove
	// the key). Nil leaves what the ConfigMap holds under KeyMetrics as
	// it is. Decode leaves it nil: DecodeMetrics reads it.
	Metrics *Metrics
}

// Decode reads cm (nil: nothing stored yet). Overrides written by
// upstream's autoscaler alone (no state of this operator) become the
// state's overrides.
func Decode(cm *corev1.ConfigMap) (Stored, error) {
	var s Stored
	if cm == nil {
		return s, nil
	}
	if raw := cm.Data[KeyState]; raw != "" {
		if err := decodeState(raw, &s.State); err != nil {
			return Stored{}, fmt.Errorf("ConfigMap %s/%s key %s: %w", cm.Namespace, cm.Name, KeyState, err)
		}
	}
	overrides, err := ParseOverrides(cm.Data[KeyParallelismOverrides])
	if err != nil {
		return Stored{}, fmt.Errorf("ConfigMap %s/%s key %s: %w", cm.Namespace, cm.Name, KeyParallelismOverrides, err)
	}
	// The overrides key is what runs (both keys are written together): it
	// wins over the state's copy, which upstream never writes.
	s.State.Overrides = overrides
	return s, nil
}

// Encode gives the ConfigMap's data for s, dropping the oldest scalings
// while the encoded state is larger than MaxStateBytes, and with s.Metrics
// the oldest samples while the metric history is over its bounds
// (MaxMetricsBytes, and the whole data within MaxDataBytes). Keys of cm's
// data that are not this package's (upstream's history) are kept as they
// are.
func Encode(s Stored, old map[string]string) (map[string]string, error) {
	data := maps.Clone(old)
	if data == nil {
		data = map[string]string{}
	}
	state := s.State
	for {
		raw, err := encodeState(state)
		if err != nil {
			return nil, err
		}
		if len(raw) <= MaxStateBytes || len(state.Scalings) == 0 {
			data[KeyState] = raw
			break
		}
		state.Scalings = state.Scalings[max(1, len(state.Scalings)/4):]
	}
	if len(s.State.Overrides) == 0 {
		delete(data, KeyParallelismOverrides)
	} else {
		data[KeyParallelismOverrides] = decide.OverridesString(s.State.Overrides)
	}
	if s.Metrics != nil {
		// Last: the metrics fit in what the other keys leave.
		if err := putMetrics(data, s.Metrics); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// ParseOverrides reads Flink's map syntax "<vertex>:<n>,<vertex>:<n>".
func ParseOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for _, part := range strings.Split(v, ",") {
		id, n, ok := strings.Cut(strings.TrimSpace(part), ":")
		p, err := strconv.Atoi(strings.TrimSpace(n))
		if !ok || strings.TrimSpace(id) == "" || err != nil || p < 1 {
			return nil, fmt.Errorf("%q is not <vertex id>:<parallelism>", part)
		}
		out[strings.TrimSpace(id)] = p
	}
	return out, nil
}

// gob, not JSON: the state holds NaN rates (a vertex whose rate was not
// measured), which JSON cannot carry.
func encodeState(s decide.State) (string, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := gob.NewEncoder(zw).Encode(s); err != nil {
		return "", fmt.Errorf("encoding the autoscaler state: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

func decodeState(raw string, into *decide.State) error {
	compressed, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		return err
	}
	plain, err := io.ReadAll(io.LimitReader(zr, 16<<20))
	if err != nil {
		return err
	}
	return gob.NewDecoder(bytes.NewReader(plain)).Decode(into)
}
