package openapi

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Example bodies are generated so that every field carries a distinct,
// non-zero value: integers count up, strings name their property, booleans
// are true. A decoder that maps a field to the wrong Go field, or misses
// it, then shows up as a zero or mismatched value.

// checkpointVariants maps CheckpointStatistics subtypes to their Jackson
// discriminator value; 1.18's spec lacks the mapping that later specs have.
var checkpointVariants = map[string]string{
	"CompletedCheckpointStatistics": "completed",
	"FailedCheckpointStatistics":    "failed",
	"PendingCheckpointStatistics":   "in_progress",
}

// Generator builds example JSON values from a spec.
type Generator struct {
	Spec *Spec
	// Substitute replaces a referenced schema by another, e.g.
	// "CheckpointStatistics" -> "CompletedCheckpointStatistics", to pick a
	// subtype where the spec names only the base type.
	Substitute map[string]string
	// Prefer picks oneOf alternatives: the first alternative whose schema
	// name is listed wins; otherwise the first alternative is used.
	Prefer []string
	// Omit drops these property names everywhere (for fields a real Flink
	// never sends together, e.g. location and failure-cause).
	Omit map[string]bool

	counter int
}

const maxDepth = 16

// Example returns an example value for schema n.
func (g *Generator) Example(n Node) (any, error) {
	return g.example(n, "value", 0)
}

func (g *Generator) next() int {
	g.counter++
	return g.counter
}

func (g *Generator) example(n Node, prop string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, nil
	}
	if name := RefName(n); name != "" {
		if sub, ok := g.Substitute[name]; ok {
			name = sub
		}
		target, ok := g.Spec.Schema(name)
		if !ok {
			return nil, fmt.Errorf("openapi %s: unknown schema %q", g.Spec.Version, name)
		}
		v, err := g.example(target, prop, depth+1)
		if err != nil {
			return nil, err
		}
		if obj, ok := v.(map[string]any); ok {
			if disc, ok := checkpointVariants[name]; ok {
				obj["className"] = disc
			}
		}
		return v, nil
	}
	if alts, ok := n["oneOf"].([]any); ok && len(alts) > 0 {
		return g.example(g.pickOneOf(alts), prop, depth+1)
	}
	if parts, ok := n["allOf"].([]any); ok {
		out := map[string]any{}
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			if base := RefName(pm); base != "" {
				// A subtype's allOf names its base type: never substitute
				// that, or the subtype would turn into another subtype.
				target, ok := g.Spec.Schema(base)
				if !ok {
					return nil, fmt.Errorf("openapi %s: unknown schema %q", g.Spec.Version, base)
				}
				pm = target
			}
			v, err := g.example(pm, prop, depth+1)
			if err != nil {
				return nil, err
			}
			if obj, ok := v.(map[string]any); ok {
				for k, x := range obj {
					out[k] = x
				}
			}
		}
		return out, nil
	}
	typ, _ := n["type"].(string)
	switch typ {
	case "object", "":
		return g.object(n, depth)
	case "array":
		items, _ := n["items"].(map[string]any)
		v, err := g.example(items, prop, depth+1)
		if err != nil {
			return nil, err
		}
		return []any{v}, nil
	case "string":
		return g.str(n, prop), nil
	case "integer":
		return g.next(), nil
	case "number":
		return float64(g.next()) + 0.5, nil
	case "boolean":
		return true, nil
	}
	return nil, fmt.Errorf("openapi %s: unsupported schema type %q", g.Spec.Version, typ)
}

// pickOneOf returns the preferred alternative of a oneOf list.
func (g *Generator) pickOneOf(alts []any) Node {
	for _, want := range g.Prefer {
		for _, a := range alts {
			if am, _ := a.(map[string]any); RefName(am) == want {
				return am
			}
		}
	}
	first, _ := alts[0].(map[string]any)
	return first
}

func (g *Generator) object(n Node, depth int) (any, error) {
	out := map[string]any{}
	props, _ := n["properties"].(map[string]any)
	for k, v := range props {
		if g.Omit[k] {
			continue
		}
		vm, _ := v.(map[string]any)
		x, err := g.example(vm, k, depth+1)
		if err != nil {
			return nil, err
		}
		out[k] = x
	}
	if ap, ok := n["additionalProperties"].(map[string]any); ok {
		for i := 1; i <= 2; i++ {
			x, err := g.example(ap, "entry", depth+1)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprintf("key-%d", g.next())] = x
		}
	}
	if len(props) == 0 && n["additionalProperties"] == nil {
		// A free-form object (RawJson): any JSON object will do.
		out["raw"] = g.next()
	}
	return out, nil
}

func (g *Generator) str(n Node, prop string) string {
	if enum, ok := n["enum"].([]any); ok && len(enum) > 0 {
		s, _ := enum[0].(string)
		return s
	}
	if pat, _ := n["pattern"].(string); strings.Contains(pat, "0-9a-f") {
		return fmt.Sprintf("%032x", g.next())
	}
	if f, _ := n["format"].(string); f == "binary" || f == "byte" {
		return base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("%s-%d", prop, g.next())))
	}
	return fmt.Sprintf("%s-%d", prop, g.next())
}
