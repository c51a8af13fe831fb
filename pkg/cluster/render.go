package cluster

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// RenderConfig writes conf as the config file of Flink v: config.yaml (Flink
// ≥ 1.19) or flink-conf.yaml, flat "key: value" lines sorted by key.
func RenderConfig(v Version, conf map[string]string) (string, error) {
	if v.StandardYAML() {
		return renderConfigYAML(conf), nil
	}
	return renderFlinkConf(conf)
}

// renderConfigYAML writes a standard YAML 1.2 mapping whose values read back
// (in YAML 1.2 and 1.1 parsers alike) as exactly the strings in conf.
func renderConfigYAML(conf map[string]string) string {
	var b strings.Builder
	b.WriteString("# Flink configuration written by the operator; edits are overwritten.\n")
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		b.WriteString(yamlKey(k))
		b.WriteString(": ")
		b.WriteString(yamlValue(conf[k]))
		b.WriteByte('\n')
	}
	return b.String()
}

// renderFlinkConf writes Flink's legacy flink-conf.yaml. Its parser cuts each
// line at the first "#", splits at the first ": ", trims both sides and
// never unquotes, so values are written raw and what it cannot carry is an
// error naming the key. Empty values are left out: Flink skips them anyway.
func renderFlinkConf(conf map[string]string) (string, error) {
	var b strings.Builder
	b.WriteString("# Flink configuration written by the operator; edits are overwritten.\n")
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		v := conf[k]
		if k == "" || k != strings.TrimSpace(k) || strings.ContainsAny(k, "#\n\r") || strings.Contains(k, ": ") {
			return "", fmt.Errorf("config key %q cannot be written to %s (Flink < 1.19)", k, LegacyConfigFile)
		}
		if v == "" {
			continue
		}
		if v != strings.TrimSpace(v) || strings.ContainsAny(v, "#\n\r") {
			return "", fmt.Errorf("config key %s: value %q cannot be written to %s (Flink < 1.19 cannot read '#', line breaks or surrounding blanks in values)", k, v, LegacyConfigFile)
		}
		b.WriteString(k)
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

var (
	// canonicalInt and canonicalBool read back as the same text from every
	// YAML schema and from Flink's conversion of Integer/Long/Boolean to
	// String, so they stay unquoted for readability.
	canonicalInt = regexp.MustCompile(`^(0|-?[1-9][0-9]{0,17})$`)
	// numberLike matches what some YAML schema (1.1 or 1.2) may read as a
	// number or timestamp: decimals with exponents or underscores, hex,
	// octal, binary, sexagesimal, .inf/.nan, and anything starting with a
	// date. Such strings are quoted.
	numberLike = regexp.MustCompile(`^[-+]?(` +
		`[0-9][0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?|\.[0-9][0-9_]*([eE][-+]?[0-9]+)?|` +
		`0[xX][0-9a-fA-F_]+|0[oO]?[0-7_]+|0[bB][01_]+|` +
		`[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?|` +
		`\.(inf|Inf|INF|nan|NaN|NAN))$|^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}`)
	// yaml11Special are null and boolean spellings of YAML 1.1 and 1.2.
	yaml11Special = map[string]bool{
		"null": true, "~": true, "true": true, "false": true, "yes": true, "no": true,
		"on": true, "off": true, "y": true, "n": true, "=": true, "<<": true,
	}
)

// yamlValue renders a value: canonical integers and booleans plain, strings
// that are unambiguous plain YAML strings plain, everything else
// double-quoted.
func yamlValue(s string) string {
	if canonicalInt.MatchString(s) || s == "true" || s == "false" {
		return s
	}
	return yamlString(s)
}

// yamlKey renders a key; a key always reads back as a string.
func yamlKey(s string) string { return yamlString(s) }

// yamlString renders s so that it reads back as the string s.
func yamlString(s string) string {
	if plainSafeCached(s) {
		return s
	}
	return quoteYAML(s)
}

// plainSafeVerdicts remembers plainSafe by string: a deployment's sync
// renders its whole configuration to compare it with the cluster's, the same
// keys and values every time, and plainSafe's read-back through yaml.v3 was
// about a third of a steady sync's CPU (a CPU profile of make bench-scale's
// running scenario). Bounded: it starts over when full.
var plainSafeVerdicts = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

const plainSafeVerdictsMax = 8192

func plainSafeCached(s string) bool {
	plainSafeVerdicts.Lock()
	v, ok := plainSafeVerdicts.m[s]
	plainSafeVerdicts.Unlock()
	if ok {
		return v
	}
	v = plainSafe(s)
	plainSafeVerdicts.Lock()
	if len(plainSafeVerdicts.m) >= plainSafeVerdictsMax {
		clear(plainSafeVerdicts.m)
	}
	plainSafeVerdicts.m[strings.Clone(s)] = v
	plainSafeVerdicts.Unlock()
	return v
}

// plainSafe is deliberately conservative: a plain scalar must not start with
// an indicator, contain ": " or " #", look like a number, null or boolean in
// any YAML version, or contain anything but printable characters; and
// yaml.v3 must read it back as the same string.
func plainSafe(s string) bool {
	if s == "" || s != strings.TrimSpace(s) || !utf8.ValidString(s) {
		return false
	}
	if strings.ContainsRune("-?:,[]{}#&*!|>'\"%@`", rune(s[0])) {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	if yaml11Special[strings.ToLower(s)] || numberLike.MatchString(s) {
		return false
	}
	for _, r := range s {
		if r == '\t' || !unicode.IsPrint(r) {
			return false
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("k: "+s), &doc); err != nil || len(doc.Content) != 1 {
		return false
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode || len(m.Content) != 2 {
		return false
	}
	v := m.Content[1]
	return v.Kind == yaml.ScalarNode && v.Tag == "!!str" && v.Value == s
}

// quoteYAML writes a YAML double-quoted scalar on one line.
func quoteYAML(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			switch {
			case r < 0x20 || r == 0x7f:
				fmt.Fprintf(&b, `\x%02X`, r)
			case r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ':
				if r <= 0xFFFF {
					fmt.Fprintf(&b, `\u%04X`, r)
				} else {
					fmt.Fprintf(&b, `\U%08X`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
