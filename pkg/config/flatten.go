package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FlattenYAML reads a YAML mapping (a config.yaml, flink-conf.yaml or the
// operator's config file) into flat keys. Flat "a.b.c: v" keys and nested
// maps may be mixed, as in Flink's config.yaml.
//
// It parses YAML 1.2 (go.yaml.in/yaml/v3), like Flink 1.19+: "yes", "on" and
// "off" stay strings. sigs.k8s.io/yaml is not used here because it follows
// YAML 1.1 and would turn `on` into `true`. Rendering rules are Flatten's.
func FlattenYAML(data []byte) (map[string]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	out := map[string]string{}
	if doc.Kind == 0 || len(doc.Content) == 0 { // empty document
		return out, nil
	}
	root := resolveAlias(doc.Content[0])
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return out, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the configuration must be a mapping of keys to values", root.Line)
	}
	if err := flattenNode("", root, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Flatten turns a generic map (a decoded flinkConfiguration, see
// v1beta1.Configuration.Values) into flat keys, joining nested map keys with
// ".". Values are rendered as strings the way Flink reads them back:
//
//   - strings as they are; bools as "true"/"false"; null as "";
//   - numbers as written when they are json.Number (what
//     Configuration.Values gives), else in plain decimal (1e6 → "1000000");
//   - lists in YAML flow style, "[a, b]", quoting elements only where YAML
//     needs it: that is how Flink's config.yaml (Flink ≥ 1.19, the only
//     format of 2.x) writes lists; the legacy "a;b" form is not produced;
//   - an empty nested map sets nothing.
//
// The same key given twice (flat and nested) is an error naming it, since
// silently picking one would hide a mistake.
func Flatten(values map[string]any) (map[string]string, error) {
	root, err := toNode("", values)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if err := flattenNode("", root, out); err != nil {
		return nil, err
	}
	return out, nil
}

// flattenNode writes the leaves under n into out with dotted keys.
func flattenNode(prefix string, n *yaml.Node, out map[string]string) error {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			keyNode, valueNode := resolveAlias(n.Content[i]), n.Content[i+1]
			if keyNode.Kind != yaml.ScalarNode || keyNode.Tag == "!!merge" {
				return fmt.Errorf("line %d: unsupported key under %q: keys must be plain scalars", keyNode.Line, prefix)
			}
			name := strings.TrimSpace(keyNode.Value)
			if name == "" {
				return fmt.Errorf("line %d: empty key under %q", keyNode.Line, prefix)
			}
			if prefix != "" {
				name = prefix + "." + name
			}
			if err := flattenNode(name, valueNode, out); err != nil {
				return err
			}
		}
		return nil
	case yaml.SequenceNode:
		rendered, err := renderFlow(n)
		if err != nil {
			return fmt.Errorf("config key %s: %w", prefix, err)
		}
		return set(out, prefix, rendered, n.Line)
	case yaml.ScalarNode:
		value := n.Value
		if n.Tag == "!!null" {
			value = ""
		}
		return set(out, prefix, value, n.Line)
	}
	return fmt.Errorf("config key %s: unsupported YAML node", prefix)
}

// set refuses a key that is already there: "a.b: 1" next to "a: {b: 2}".
func set(out map[string]string, key, value string, line int) error {
	if _, dup := out[key]; dup {
		if line > 0 {
			return fmt.Errorf("line %d: config key %s is set twice (flat and nested?)", line, key)
		}
		return fmt.Errorf("config key %s is set twice (flat and nested?)", key)
	}
	out[key] = value
	return nil
}

// renderFlow writes a sequence in YAML flow style on one line.
func renderFlow(n *yaml.Node) (string, error) {
	b, err := yaml.Marshal(flowCopy(n))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// flowCopy deep-copies a node with every collection in flow style and
// comments dropped, so the rendering fits on one line.
func flowCopy(n *yaml.Node) *yaml.Node {
	n = resolveAlias(n)
	c := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value, Style: n.Style}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		c.Style = yaml.FlowStyle
		for _, child := range n.Content {
			c.Content = append(c.Content, flowCopy(child))
		}
	}
	return c
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// toNode builds a YAML node tree from decoded JSON/YAML values, so that maps
// from the API and YAML files share one flattening and rendering path.
func toNode(path string, v any) (*yaml.Node, error) {
	scalar := func(tag, value string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
	}
	switch t := v.(type) {
	case nil:
		return scalar("!!null", "null"), nil
	case string:
		return scalar("!!str", t), nil
	case bool:
		return scalar("!!bool", strconv.FormatBool(t)), nil
	case json.Number:
		if _, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return scalar("!!int", string(t)), nil
		}
		return scalar("!!float", string(t)), nil
	case float64:
		return scalar("!!float", strconv.FormatFloat(t, 'f', -1, 64)), nil
	case float32:
		return scalar("!!float", strconv.FormatFloat(float64(t), 'f', -1, 32)), nil
	case int:
		return scalar("!!int", strconv.Itoa(t)), nil
	case int32:
		return scalar("!!int", strconv.FormatInt(int64(t), 10)), nil
	case int64:
		return scalar("!!int", strconv.FormatInt(t, 10)), nil
	case uint64:
		return scalar("!!int", strconv.FormatUint(t, 10)), nil
	case []string:
		items := make([]any, len(t))
		for i, s := range t {
			items[i] = s
		}
		return toNode(path, items)
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, item := range t {
			c, err := toNode(path, item)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	case map[string]string:
		m := make(map[string]any, len(t))
		for k, s := range t {
			m[k] = s
		}
		return toNode(path, m)
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, k := range slices.Sorted(maps.Keys(t)) { // stable errors
			child := k
			if path != "" {
				child = path + "." + k
			}
			c, err := toNode(child, t[k])
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, scalar("!!str", k), c)
		}
		return n, nil
	}
	return nil, fmt.Errorf("config key %s: unsupported value type %T", path, v)
}
