package openapi

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
)

// Validate checks a decoded JSON value (from json.Unmarshal into any)
// against schema n and returns one message per violation. It is strict
// about names and types (an unknown property is a violation) and lenient
// about presence (absent and null values are fine), which is how a
// response from a real Flink relates to its spec.
func (s *Spec) Validate(n Node, v any) []string {
	var errs []string
	s.validate(n, v, "$", &errs, 0)
	return errs
}

// ValidateJSON is Validate for raw JSON.
func (s *Spec) ValidateJSON(n Node, raw []byte) []string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return []string{"invalid JSON: " + err.Error()}
	}
	return s.Validate(n, v)
}

// SpecGaps lists properties real Flink sends that its generated spec
// omits. SerializedThrowable has a custom serializer that writes "class"
// and "stack-trace" next to the documented "serialized-throwable".
var SpecGaps = map[string][]string{
	"SerializedThrowable": {"class", "stack-trace"},
}

// idPatterns are the ids whose format clients rely on; other patterns in
// the spec (e.g. ResourceID) are not what real Flink sends.
var idPatterns = map[string]bool{"JobID": true, "TriggerId": true, "JobVertexID": true}

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func (s *Spec) validate(n Node, v any, at string, errs *[]string, depth int) {
	if v == nil || depth > maxDepth {
		return
	}
	fail := func(format string, args ...any) {
		*errs = append(*errs, at+": "+fmt.Sprintf(format, args...))
	}
	if name := RefName(n); name != "" {
		target, ok := s.Schema(name)
		if !ok {
			fail("unknown schema %q", name)
			return
		}
		if idPatterns[name] {
			if str, ok := v.(string); !ok || !hexID.MatchString(str) {
				fail("%s must be 32 lowercase hex characters, got %v", name, v)
				return
			}
		}
		if gaps := SpecGaps[name]; len(gaps) > 0 {
			target = withStringProps(target, gaps)
		}
		s.validate(target, v, at, errs, depth+1)
		return
	}
	if alts, ok := n["oneOf"].([]any); ok {
		var all []string
		for _, a := range alts {
			am, _ := a.(map[string]any)
			var sub []string
			s.validate(am, v, at, &sub, depth+1)
			if len(sub) == 0 {
				return
			}
			all = append(all, sub...)
		}
		fail("matches no oneOf alternative: %s", strings.Join(all, "; "))
		return
	}
	if _, ok := n["allOf"]; ok || n["properties"] != nil {
		s.validateObject(n, v, at, errs, depth)
		return
	}
	typ, _ := n["type"].(string)
	switch typ {
	case "object", "":
		s.validateObject(n, v, at, errs, depth)
	case "array":
		arr, ok := v.([]any)
		if !ok {
			fail("want array, got %T", v)
			return
		}
		items, _ := n["items"].(map[string]any)
		for i, x := range arr {
			s.validate(items, x, fmt.Sprintf("%s[%d]", at, i), errs, depth+1)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			fail("want string, got %T", v)
			return
		}
		if enum, ok := n["enum"].([]any); ok && !inEnum(enum, str) {
			fail("%q is not one of %v", str, enum)
		}
	case "integer":
		f, ok := asFloat(v)
		if !ok || f != math.Trunc(f) {
			fail("want integer, got %v", v)
		}
	case "number":
		if _, ok := asFloat(v); !ok {
			fail("want number, got %T", v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			fail("want boolean, got %T", v)
		}
	default:
		fail("unsupported schema type %q", typ)
	}
}

func (s *Spec) validateObject(n Node, v any, at string, errs *[]string, depth int) {
	obj, ok := v.(map[string]any)
	if !ok {
		*errs = append(*errs, fmt.Sprintf("%s: want object, got %T", at, v))
		return
	}
	n = s.variantFor(n, obj)
	props, err := s.Properties(n)
	if err != nil {
		*errs = append(*errs, at+": "+err.Error())
		return
	}
	ap, hasAP := n["additionalProperties"].(map[string]any)
	if len(props) == 0 && !hasAP {
		return // free-form object
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sub := at + "." + k
		if p, ok := props[k]; ok {
			s.validate(p, obj[k], sub, errs, depth+1)
			continue
		}
		if hasAP {
			s.validate(ap, obj[k], sub, errs, depth+1)
			continue
		}
		*errs = append(*errs, sub+": property not in the spec")
	}
}

// variantFor picks the subtype schema named by a className discriminator,
// so that e.g. a completed checkpoint may carry external_path.
func (s *Spec) variantFor(n Node, obj map[string]any) Node {
	disc, _ := n["discriminator"].(map[string]any)
	if disc == nil {
		return n
	}
	prop, _ := disc["propertyName"].(string)
	val, _ := obj[prop].(string)
	for name, d := range checkpointVariants {
		if d == val {
			if sub, ok := s.Schema(name); ok {
				return sub
			}
		}
	}
	return n
}

// withStringProps returns a copy of an object schema with extra string
// properties.
func withStringProps(n Node, names []string) Node {
	props := map[string]any{}
	if p, ok := n["properties"].(map[string]any); ok {
		for k, v := range p {
			props[k] = v
		}
	}
	for _, name := range names {
		props[name] = map[string]any{"type": "string"}
	}
	out := Node{}
	for k, v := range n {
		out[k] = v
	}
	out["properties"] = props
	return out
}

// asFloat accepts the number types of json.Unmarshal and of Generator.
func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func inEnum(enum []any, s string) bool {
	for _, e := range enum {
		if e == s {
			return true
		}
	}
	return false
}
