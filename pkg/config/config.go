package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is a flat configuration: dotted keys to string values, the way
// Flink itself holds configuration. Keeping values as strings (not typed
// fields) means one map can carry operator options, Flink options the
// operator reads and options it only passes on to Flink, and it can be
// written back into a Flink config file unchanged.
//
// Getters fall back to the registry's defaults, so a nil or empty Config
// behaves like Defaults(). A blank value counts as unset, except in Raw.
// Getters return a *ValueError naming the key when a value does not parse;
// values that went through Load or Effective have been validated already.
type Config map[string]string

// ValueError reports a value that does not parse or is out of range. Key is
// the name the user actually wrote (a deprecated alias, if that was used), so
// the message points at the line to fix.
type ValueError struct {
	Key   string
	Value string
	Err   error
}

// Error names the key, the value and the reason.
func (e *ValueError) Error() string {
	return fmt.Sprintf("config key %s: invalid value %q: %v", e.Key, e.Value, e.Err)
}

// Unwrap gives the parse error.
func (e *ValueError) Unwrap() error { return e.Err }

// Clone copies the map so an effective config can be built without touching
// the shared operator config.
func (c Config) Clone() Config {
	if c == nil {
		return Config{}
	}
	return maps.Clone(c)
}

// Raw returns the value exactly as set, and whether any name of the key is
// present (blank counts as present; defaults do not). A registered key's
// deprecated names are tried after its current name. Some rules care about
// presence, not value: upstream refuses a periodic savepoint interval that is
// present but blank when no savepoint directory is set.
func (c Config) Raw(key string) (string, bool) {
	_, value, ok := c.raw(key)
	return value, ok
}

// raw also returns which name was found, for error messages.
func (c Config) raw(key string) (name, value string, ok bool) {
	if v, ok := c[key]; ok {
		return key, v, true
	}
	if k, known := byName[key]; known {
		for _, n := range k.names() {
			if v, ok := c[n]; ok {
				return n, v, true
			}
		}
	}
	return "", "", false
}

// lookup returns the trimmed value to parse: the first non-blank value under
// the key's names (blank counts as unset everywhere, so a blank new name
// falls through to an old one), else the registered default. ok is false
// when neither exists.
func (c Config) lookup(key string) (name, value string, ok bool) {
	names := []string{key}
	k, known := byName[key]
	if known {
		names = k.names()
	}
	for _, n := range names {
		if v := strings.TrimSpace(c[n]); v != "" {
			return n, v, true
		}
	}
	if known && k.Default != "" {
		return k.Name, k.Default, true
	}
	return key, "", false
}

// String returns the value (trimmed), or the default, or "".
func (c Config) String(key string) string {
	_, v, _ := c.lookup(key)
	return v
}

// Duration parses the value with ParseDuration; 0 when unset without a
// default (use OptionalDuration when unset must be told apart).
func (c Config) Duration(key string) (time.Duration, error) {
	d, _, err := c.OptionalDuration(key)
	return d, err
}

// OptionalDuration is Duration that also says whether a value (or default)
// exists, for keys such as the history age threshold where unset means "no
// limit" rather than zero.
func (c Config) OptionalDuration(key string) (time.Duration, bool, error) {
	name, v, ok := c.lookup(key)
	if !ok {
		return 0, false, nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		return 0, false, &ValueError{Key: name, Value: v, Err: err}
	}
	return d, true, nil
}

// Int parses a 32-bit integer, like Flink's Integer options; 0 when unset
// without a default.
func (c Config) Int(key string) (int, error) {
	n, _, err := c.OptionalInt(key)
	return n, err
}

// OptionalInt is Int that also says whether a value (or default) exists, for
// keys such as snapshot.max-concurrent where unset means unlimited.
func (c Config) OptionalInt(key string) (int, bool, error) {
	name, v, ok := c.lookup(key)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			err = errors.New("out of the 32-bit integer range")
		} else {
			err = errors.New("not an integer")
		}
		return 0, false, &ValueError{Key: name, Value: v, Err: err}
	}
	return int(n), true, nil
}

// Float parses a Double option (a finite decimal number); 0 when unset
// without a default.
func (c Config) Float(key string) (float64, error) {
	name, v, ok := c.lookup(key)
	if !ok {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, &ValueError{Key: name, Value: v, Err: errors.New("not a number")}
	}
	return f, nil
}

// Bool accepts "true" and "false" in any case and nothing else, exactly like
// Flink; strconv.ParseBool would also take "1" or "T", which Flink rejects,
// and a value must mean the same to the operator and to Flink. false when
// unset without a default.
func (c Config) Bool(key string) (bool, error) {
	name, v, ok := c.lookup(key)
	if !ok {
		return false, nil
	}
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, &ValueError{Key: name, Value: v, Err: errors.New(`must be "true" or "false"`)}
}

// Enum returns the value of a TypeEnum key in its canonical spelling
// (matched case-insensitively, like Flink's enum options), so callers can
// compare with the constants. "" when unset without a default.
func (c Config) Enum(key string) (string, error) {
	name, v, ok := c.lookup(key)
	if !ok {
		return "", nil
	}
	k, known := byName[key]
	if !known || len(k.Enum) == 0 {
		return v, nil
	}
	for _, allowed := range k.Enum {
		if strings.EqualFold(v, allowed) {
			return allowed, nil
		}
	}
	return "", &ValueError{Key: name, Value: v, Err: fmt.Errorf("must be one of %s", strings.Join(k.Enum, ", "))}
}

// List splits a list value. It accepts upstream's comma-separated form
// ("a,b") and the YAML flow form Flatten renders ("[a, b]"); elements are
// trimmed, unquoted, and empty ones dropped. nil when unset. Elements
// containing commas are not supported; no list key needs them.
func (c Config) List(key string) []string {
	_, v, ok := c.lookup(key)
	if !ok {
		return nil
	}
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		v = v[1 : len(v)-1]
	}
	var out []string
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if len(item) >= 2 && (item[0] == '\'' || item[0] == '"') && item[len(item)-1] == item[0] {
			item = item[1 : len(item)-1]
		}
		if item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Map reads a Map value in Flink's syntax, "k1:v1,k2:v2" (entries
// separated by commas, key and value by the first colon, either may be
// quoted). nil when the key is absent or blank.
func (c Config) Map(key string) (map[string]string, error) {
	name, v, ok := c.lookup(key)
	if !ok || strings.TrimSpace(v) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for i, entry := range strings.Split(v, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		k, val, found := strings.Cut(entry, ":")
		k, val = unquoteItem(strings.TrimSpace(k)), unquoteItem(strings.TrimSpace(val))
		if !found || k == "" {
			// Values may be credentials (HTTP headers): not repeated.
			return nil, &ValueError{Key: name, Value: "<redacted>", Err: fmt.Errorf("entry %d is not key:value", i+1)}
		}
		out[k] = val
	}
	return out, nil
}

func unquoteItem(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// Validate checks every registered key present in c, plus the rules that
// span keys. It returns all problems joined, so one start-up shows them all.
func (c Config) Validate() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c)) {
		if k, ok := byName[name]; ok {
			if err := k.Validate(c[name]); err != nil {
				var ve *ValueError
				if errors.As(err, &ve) {
					ve.Key = name // report the alias the user wrote
				}
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		errs = append(errs, c.crossChecks()...)
	}
	return errors.Join(errs...)
}

// crossChecks are rules between keys; they run only when every value parsed.
func (c Config) crossChecks() []error {
	var errs []error
	if on, _ := c.Bool(KeyLeaderElectionEnabled); on && c.String(KeyLeaderElectionLeaseName) == "" {
		errs = append(errs, fmt.Errorf("config key %s must be set when %s is true", KeyLeaderElectionLeaseName, KeyLeaderElectionEnabled))
	}
	lease, _ := c.Duration(KeyLeaderElectionLeaseDuration)
	renew, _ := c.Duration(KeyLeaderElectionRenewDeadline)
	if renew >= lease {
		errs = append(errs, fmt.Errorf("config key %s (%v) must be less than %s (%v)", KeyLeaderElectionRenewDeadline, renew, KeyLeaderElectionLeaseDuration, lease))
	}
	return errs
}
