package flink

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Log4jConsoleFile is the log4j2 configuration the image's scripts pass to every
// Flink process (-Dlog4j.configurationFile=file:<conf>/log4j-console.properties).
const Log4jConsoleFile = "log4j-console.properties"

//go:embed log4j-console.properties
var defaultLog4jConsole []byte

// DefaultLog4jConsole is a log4j-console.properties like the distribution's: INFO
// to stdout and to ${sys:log.file}. Prepare writes it into the process's conf
// directory when the mounted one has none.
func DefaultLog4jConsole() []byte { return append([]byte(nil), defaultLog4jConsole...) }

// WriteConfDir writes conf as the configuration file for version (see
// ConfigFileName), with flat keys, plus DefaultLog4jConsole, into dir, as the
// operator's ConfigMap would provide them. It is a helper for tests.
func WriteConfDir(dir, version string, conf map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	legacy := ConfigFileName(version) == "flink-conf.yaml"
	for _, k := range keys {
		v := conf[k]
		if legacy {
			// The legacy parser takes everything after "key: " verbatim.
			fmt.Fprintf(&b, "%s: %s\n", k, v)
			continue
		}
		out, err := yaml.Marshal(map[string]string{k: v})
		if err != nil {
			return err
		}
		b.Write(out)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFileName(version)), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, Log4jConsoleFile), defaultLog4jConsole, 0o644)
}

// configFileIn returns the configuration file that version reads from dir
// (1.19 and 1.20 prefer a present flink-conf.yaml, 2.x reads only config.yaml).
func configFileIn(dir, version string) string {
	legacy := filepath.Join(dir, "flink-conf.yaml")
	if !atLeast(version, 1, 19) {
		return legacy
	}
	if !atLeast(version, 2, 0) {
		if _, err := os.Stat(legacy); err == nil {
			return legacy
		}
	}
	return filepath.Join(dir, "config.yaml")
}

// ReadConfig reads the Flink configuration that version would read from dir, as
// flat dotted keys (nested config.yaml maps are flattened; lists are joined with
// ";" as Flink's own flattening does). A missing file is an empty configuration.
func ReadConfig(dir, version string) (map[string]string, error) {
	path := configFileIn(dir, version)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	if filepath.Base(path) == "flink-conf.yaml" {
		return parseLegacyConfig(string(data)), nil
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]string{}
	flattenConfig("", doc, out)
	return out, nil
}

func flattenConfig(prefix string, m map[string]any, out map[string]string) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		switch v := v.(type) {
		case map[string]any:
			flattenConfig(key, v, out)
		case []any:
			parts := make([]string, len(v))
			for i, e := range v {
				parts[i] = fmt.Sprint(e)
			}
			out[key] = strings.Join(parts, ";")
		case nil:
			out[key] = ""
		default:
			out[key] = fmt.Sprint(v)
		}
	}
}

// parseLegacyConfig parses flink-conf.yaml as GlobalConfiguration's legacy
// parser does: one "key: value" per line, '#' starts a comment.
func parseLegacyConfig(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k != "" && v != "" {
			out[k] = v
		}
	}
	return out
}
