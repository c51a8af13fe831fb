package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Warning is a problem in a configuration that does not stop it from being
// used: an unknown kubernetes.operator.* key (most likely a typo), a
// deprecated name, or an operator-wide key set in a resource, which is
// ignored. Callers log them (operator file) or turn them into an event
// (resource), so a setting that does nothing never goes unnoticed.
type Warning struct {
	Key     string
	Message string
}

// String renders "key: message".
func (w Warning) String() string { return w.Key + ": " + w.Message }

// Defaults returns the operator's defaults as an explicit map: every
// kubernetes.operator.* key that has a default. Getters fall back to the
// same defaults anyway; the explicit map exists so the configuration in use
// can be logged and shown in full. Flink's own options are left out: Flink
// applies its defaults itself, and writing them would pin values (and
// Flink-1.20-only key names) into every cluster's config.
func Defaults() Config {
	c := Config{}
	for _, k := range registry {
		if !k.Flink && k.Default != "" {
			c[k.Name] = k.Default
		}
	}
	return c
}

// Load reads the operator's config file contents (flat or nested YAML, like
// upstream's flink-conf.yaml/config.yaml in its ConfigMap) on top of
// Defaults(). Keys other than kubernetes.operator.* are kept: as upstream,
// they are the default Flink configuration of every resource, which a
// resource may override.
//
// An invalid value of a registered key is an error: the operator should not
// start with a setting it cannot honour. Unknown kubernetes.operator.* keys
// are only warnings, since upstream has keys we do not implement and a file
// shared with upstream should still load.
func Load(data []byte) (Config, []Warning, error) {
	flat, err := FlattenYAML(data)
	if err != nil {
		return nil, nil, err
	}
	cfg := merge(Defaults(), flat)
	var warnings []Warning
	for _, name := range slices.Sorted(maps.Keys(flat)) {
		if w, ok := nameWarning(name); ok {
			warnings = append(warnings, w)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, warnings, err
	}
	return cfg, warnings, nil
}

// LoadFile is Load on a file; errors name the file.
func LoadFile(path string) (Config, []Warning, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading operator config: %w", err)
	}
	cfg, warnings, err := Load(data)
	if err != nil {
		return nil, warnings, fmt.Errorf("operator config %s: %w", path, err)
	}
	return cfg, warnings, nil
}

// FlinkConfiguration is what Effective accepts as a resource's
// flinkConfiguration: flat strings, or the decoded object (nested maps,
// numbers, lists; see Flatten) as v1beta1.Configuration.Values returns it.
type FlinkConfiguration interface {
	map[string]string | map[string]any
}

// Effective is the configuration that applies to one resource: the operator
// config with the resource's flinkConfiguration on top. Chain it for a
// session job (operator → session cluster → job).
//
//   - Overridable kubernetes.operator.* keys and all Flink keys from the
//     resource win.
//   - Operator-wide keys (Key.Overridable false) in the resource are ignored
//     and reported as warnings: a resource must not weaken a limit or grant
//     itself a privilege the admin set.
//   - Unknown kubernetes.operator.* keys are kept (Flink ignores them) and
//     reported as warnings.
//   - An invalid value of a registered key is an error naming the key, for
//     the controller to put in the resource's status; no config is returned
//     then, so nothing acts on half a configuration.
//
// Aliases: when the resource sets any name of a key (say the old
// state.savepoints.dir), the operator's values under all its names are
// dropped, so the resource's value wins even though Flink would prefer the
// new name when both are in one map. Upstream lets the operator's new-name
// value win there, which put per-job savepoints in the wrong directory
// (user-pains E4). Within one layer the new name wins, as in Flink.
//
// The operator config is not modified.
func Effective[M FlinkConfiguration](operator Config, resource M) (Config, []Warning, error) {
	var flat map[string]string
	switch r := any(resource).(type) {
	case map[string]string:
		flat = make(map[string]string, len(r))
		for _, k := range slices.Sorted(maps.Keys(r)) {
			if err := set(flat, strings.TrimSpace(k), r[k], 0); err != nil {
				return nil, nil, fmt.Errorf("flinkConfiguration: %w", err)
			}
		}
	case map[string]any:
		var err error
		if flat, err = Flatten(r); err != nil {
			return nil, nil, fmt.Errorf("flinkConfiguration: %w", err)
		}
	}

	accepted := make(map[string]string, len(flat))
	var warnings []Warning
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(flat)) {
		value := flat[name]
		k, known := byName[name]
		if known && !k.Overridable {
			warnings = append(warnings, Warning{Key: name,
				Message: "operator-wide setting, ignored in flinkConfiguration (set it in the operator config)"})
			continue
		}
		if w, ok := nameWarning(name); ok {
			warnings = append(warnings, w)
		}
		if known {
			if err := k.Validate(value); err != nil {
				var ve *ValueError
				if errors.As(err, &ve) {
					ve.Key = name
				}
				errs = append(errs, err)
			}
		}
		accepted[name] = value
	}
	if len(errs) > 0 {
		return nil, warnings, errors.Join(errs...)
	}
	return merge(operator, accepted), warnings, nil
}

// SnapshotResourcesEnabled tells whether a job uses FlinkStateSnapshot
// resources: only if both the operator-wide and the job's value are true, as
// upstream (the operator-wide value also decides whether the snapshot
// controller runs at all, so a job cannot turn it on alone).
func SnapshotResourcesEnabled(operator, effective Config) (bool, error) {
	op, err := operator.Bool(KeySnapshotResourceEnabled)
	if err != nil || !op {
		return false, err
	}
	return effective.Bool(KeySnapshotResourceEnabled)
}

// merge puts overlay on top of base (a copy). Setting any name of a
// registered key in overlay removes base's values under its other names; see
// Effective for why.
func merge(base Config, overlay map[string]string) Config {
	out := base.Clone()
	for name := range overlay {
		if k, ok := byName[name]; ok {
			for _, alias := range k.names() {
				if _, inOverlay := overlay[alias]; !inOverlay {
					delete(out, alias)
				}
			}
		}
	}
	maps.Copy(out, overlay)
	return out
}

// nameWarning reports a deprecated operator key name or an unknown
// kubernetes.operator.* key, with a suggestion when one is close.
func nameWarning(name string) (Warning, bool) {
	if k, known := byName[name]; known {
		if name != k.Name && !k.Flink {
			// Flink's old names are not flagged: they are the only names
			// Flink 1.18/1.19 understand.
			return Warning{Key: name, Message: "deprecated name, use " + k.Name}, true
		}
		return upstreamWarning(name) // registered, but not implemented yet
	}
	if !strings.HasPrefix(name, OperatorPrefix) {
		return Warning{}, false
	}
	if w, ok := upstreamWarning(name); ok {
		return w, true
	}
	msg := "unknown operator key, it has no effect"
	if s := suggest(name); s != "" {
		msg += "; did you mean " + s + "?"
	}
	return Warning{Key: name, Message: msg}, true
}

// suggest finds the registered operator key closest to name, if it is close
// enough to be a typo.
func suggest(name string) string {
	best, bestDist := "", 4 // at most 3 edits
	for candidate, k := range byName {
		if k.Flink {
			continue
		}
		if d := editDistance(name, candidate); d < bestDist || (d == bestDist && candidate < best) {
			best, bestDist = candidate, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance in bytes; keys are ASCII.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
