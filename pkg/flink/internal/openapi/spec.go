// Package openapi loads Flink's published REST OpenAPI specs for tests: it
// resolves schemas, generates example bodies from response schemas and
// validates JSON against them. It is imported only by tests of package
// flink and fakejm, so the client itself stays dependency-free.
package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/flinkops/flink-operator/pkg/upstreamtest"
)

// Versions are the Flink releases whose specs the tests cover.
var Versions = []string{"1.18", "1.19", "1.20", "2.0"}

// Node is a decoded JSON/YAML schema object.
type Node = map[string]any

// Spec is one rest_v1_dispatcher-<version>.yml.
type Spec struct {
	Version string
	paths   map[string]any
	schemas map[string]any
}

// Load reads the spec of one Flink version ("1.18", "2.0", ...).
func Load(version string) (*Spec, error) {
	file := "flink-rest/rest_v1_dispatcher-" + version + ".yml"
	raw, err := upstreamtest.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", file, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", file, err)
	}
	paths, _ := doc["paths"].(map[string]any)
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	if len(paths) == 0 || len(schemas) == 0 {
		return nil, fmt.Errorf("openapi: %s has no paths or schemas", file)
	}
	return &Spec{Version: version, paths: paths, schemas: schemas}, nil
}

// Schema returns a named component schema.
func (s *Spec) Schema(name string) (Node, bool) {
	n, ok := s.schemas[name].(map[string]any)
	return n, ok
}

// RefName returns the component name of a {$ref: ...} node, or "".
func RefName(n Node) string {
	ref, _ := n["$ref"].(string)
	return strings.TrimPrefix(ref, "#/components/schemas/")
}

// Resolve follows $ref chains.
func (s *Spec) Resolve(n Node) (Node, error) {
	for i := 0; i < 20; i++ {
		name := RefName(n)
		if name == "" {
			return n, nil
		}
		next, ok := s.Schema(name)
		if !ok {
			return nil, fmt.Errorf("openapi %s: unknown schema %q", s.Version, name)
		}
		n = next
	}
	return nil, errors.New("openapi: $ref chain too long")
}

func (s *Spec) operation(method, path string) (Node, error) {
	p, ok := s.paths[path].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi %s: no path %s", s.Version, path)
	}
	op, ok := p[strings.ToLower(method)].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi %s: no %s %s", s.Version, method, path)
	}
	return op, nil
}

// HasOperation reports whether the spec defines method on path.
func (s *Spec) HasOperation(method, path string) bool {
	_, err := s.operation(method, path)
	return err == nil
}

// ResponseStatuses returns the documented response codes of an operation.
func (s *Spec) ResponseStatuses(method, path string) ([]string, error) {
	op, err := s.operation(method, path)
	if err != nil {
		return nil, err
	}
	resp, _ := op["responses"].(map[string]any)
	var out []string
	for code := range resp {
		out = append(out, code)
	}
	sort.Strings(out)
	return out, nil
}

// ResponseSchema returns the JSON schema of the operation's only success
// response.
func (s *Spec) ResponseSchema(method, path string) (Node, error) {
	op, err := s.operation(method, path)
	if err != nil {
		return nil, err
	}
	resp, _ := op["responses"].(map[string]any)
	for _, code := range []string{"200", "201", "202"} {
		r, ok := resp[code].(map[string]any)
		if !ok {
			continue
		}
		return jsonSchemaOf(r, s.Version, method, path)
	}
	return nil, fmt.Errorf("openapi %s: %s %s has no success response", s.Version, method, path)
}

// RequestSchema returns the JSON request-body schema of an operation.
func (s *Spec) RequestSchema(method, path string) (Node, error) {
	op, err := s.operation(method, path)
	if err != nil {
		return nil, err
	}
	rb, ok := op["requestBody"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi %s: %s %s has no request body", s.Version, method, path)
	}
	return jsonSchemaOf(rb, s.Version, method, path)
}

func jsonSchemaOf(n Node, version, method, path string) (Node, error) {
	content, _ := n["content"].(map[string]any)
	for ct, v := range content {
		if strings.Contains(ct, "json") {
			m, _ := v.(map[string]any)
			if sch, ok := m["schema"].(map[string]any); ok {
				return sch, nil
			}
		}
	}
	return nil, fmt.Errorf("openapi %s: %s %s has no JSON schema", version, method, path)
}

// Properties returns the properties of an object schema, merging allOf
// parts and following $refs.
func (s *Spec) Properties(n Node) (map[string]Node, error) {
	n, err := s.Resolve(n)
	if err != nil {
		return nil, err
	}
	out := map[string]Node{}
	if parts, ok := n["allOf"].([]any); ok {
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			sub, err := s.Properties(pm)
			if err != nil {
				return nil, err
			}
			for k, v := range sub {
				out[k] = v
			}
		}
	}
	props, _ := n["properties"].(map[string]any)
	for k, v := range props {
		vm, _ := v.(map[string]any)
		out[k] = vm
	}
	return out, nil
}

// PropertyNames returns the sorted property names of an object schema.
func (s *Spec) PropertyNames(n Node) ([]string, error) {
	props, err := s.Properties(n)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(props))
	for k := range props {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// QueryParams returns the names of an operation's query parameters.
func (s *Spec) QueryParams(method, path string) ([]string, error) {
	op, err := s.operation(method, path)
	if err != nil {
		return nil, err
	}
	params, _ := op["parameters"].([]any)
	var out []string
	for _, p := range params {
		pm, _ := p.(map[string]any)
		if pm["in"] == "query" {
			name, _ := pm["name"].(string)
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// MatchPath reports whether a concrete request path matches a spec path
// template such as /jobs/{jobid}/savepoints.
func MatchPath(template, path string) bool {
	ts := strings.Split(strings.Trim(template, "/"), "/")
	ps := strings.Split(strings.Trim(path, "/"), "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if strings.HasPrefix(ts[i], "{") && strings.HasSuffix(ts[i], "}") {
			if ps[i] == "" {
				return false
			}
			continue
		}
		if ts[i] != ps[i] {
			return false
		}
	}
	return true
}
