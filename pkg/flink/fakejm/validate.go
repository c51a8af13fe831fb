package fakejm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Request bodies are checked the way Flink's Jackson mapper checks them:
// up to 1.19 an unknown field is an error (400), from 1.20 it is ignored
// (FLINK-35302); a wrong JSON type or an unknown enum value is an error in
// every version. The field tables below are the request schemas of Flink's
// OpenAPI specs; a test compares them with the spec files.

type fieldKind int

const (
	kindString fieldKind = iota
	kindBool
	kindInt
	kindStringList
	kindStringMap
)

// fieldSpec describes one request field and the versions that have it.
type fieldSpec struct {
	kind  fieldKind
	since flink.Version // zero: all supported versions
	until flink.Version // exclusive; zero: still present
	enum  []string
	hexID bool // must be a 32-char lowercase hex id
}

func (f fieldSpec) existsIn(v flink.Version) bool {
	if !f.since.IsZero() && v.Before(f.since) {
		return false
	}
	if !f.until.IsZero() && !v.Before(f.until) {
		return false
	}
	return true
}

// requestSchema is one Flink request class.
type requestSchema struct {
	class  string // Java simple name, used in error messages
	fields map[string]fieldSpec
}

var (
	savepointFormats = []string{"CANONICAL", "NATIVE"}
	claimModes       = []string{"CLAIM", "NO_CLAIM", "LEGACY"}
)

var savepointTriggerSchema = requestSchema{class: "SavepointTriggerRequestBody", fields: map[string]fieldSpec{
	"target-directory": {kind: kindString},
	"cancel-job":       {kind: kindBool},
	"formatType":       {kind: kindString, enum: savepointFormats},
	"triggerId":        {kind: kindString, hexID: true},
}}

var stopWithSavepointSchema = requestSchema{class: "StopWithSavepointRequestBody", fields: map[string]fieldSpec{
	"targetDirectory": {kind: kindString},
	"drain":           {kind: kindBool},
	"formatType":      {kind: kindString, enum: savepointFormats},
	"triggerId":       {kind: kindString, hexID: true},
}}

var checkpointTriggerSchema = requestSchema{class: "CheckpointTriggerRequestBody", fields: map[string]fieldSpec{
	"checkpointType": {kind: kindString, enum: []string{"CONFIGURED", "FULL", "INCREMENTAL"}},
	"triggerId":      {kind: kindString, hexID: true},
}}

var savepointDisposalSchema = requestSchema{class: "SavepointDisposalRequest", fields: map[string]fieldSpec{
	"savepoint-path": {kind: kindString},
}}

var jarRunSchema = requestSchema{class: "JarRunRequestBody", fields: map[string]fieldSpec{
	"entryClass":            {kind: kindString},
	"programArgs":           {kind: kindString, until: flink.V2_0},
	"programArgsList":       {kind: kindStringList},
	"parallelism":           {kind: kindInt},
	"jobId":                 {kind: kindString, hexID: true},
	"allowNonRestoredState": {kind: kindBool},
	"savepointPath":         {kind: kindString},
	"restoreMode":           {kind: kindString, enum: claimModes},
	"claimMode":             {kind: kindString, enum: claimModes, since: flink.V1_20},
	"flinkConfiguration":    {kind: kindStringMap, since: flink.V1_17},
}}

// RequestFields lists the request fields the fake accepts for a request
// class (e.g. "JarRunRequestBody") at version v, sorted. Exposed so tests
// can compare the fake against Flink's specs.
func RequestFields(class string, v flink.Version) []string {
	for _, s := range allRequestSchemas {
		if s.class != class {
			continue
		}
		var out []string
		for name, f := range s.fields {
			if f.existsIn(v) {
				out = append(out, name)
			}
		}
		sort.Strings(out)
		return out
	}
	return nil
}

var allRequestSchemas = []requestSchema{
	savepointTriggerSchema, stopWithSavepointSchema, checkpointTriggerSchema,
	savepointDisposalSchema, jarRunSchema,
}

// body is a validated request body.
type body map[string]any

func (b body) str(k string) string {
	s, _ := b[k].(string)
	return s
}

func (b body) boolean(k string) bool {
	v, _ := b[k].(bool)
	return v
}

func (b body) integer(k string) int {
	n, _ := b[k].(json.Number)
	i, _ := n.Int64()
	return int(i)
}

func (b body) strings(k string) []string {
	raw, _ := b[k].([]any)
	out := make([]string, 0, len(raw))
	for _, x := range raw {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func (b body) stringMap(k string) map[string]string {
	raw, _ := b[k].(map[string]any)
	out := make(map[string]string, len(raw))
	for key, x := range raw {
		s, _ := x.(string)
		out[key] = s
	}
	return out
}

func (b body) has(k string) bool {
	v, ok := b[k]
	return ok && v != nil
}

// parseBody decodes and validates raw against schema for version v. An
// empty body counts as "{}", as in Flink.
func parseBody(raw []byte, schema requestSchema, v flink.Version) (body, *reply) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return body{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		r := badFormat(schema.class, fmt.Sprintf("com.fasterxml.jackson.core.JsonParseException: %v", err))
		return nil, &r
	}
	strict := v.StrictRequestParsing()
	for name, val := range m {
		spec, ok := schema.fields[name]
		if !ok || !spec.existsIn(v) {
			if strict {
				r := badFormat(schema.class, fmt.Sprintf(
					"org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException: Unrecognized field %q (class org.apache.flink.runtime.rest.messages.%s), not marked as ignorable",
					name, schema.class))
				return nil, &r
			}
			delete(m, name) // 1.20+ ignores unknown fields
			continue
		}
		if msg := checkValue(spec, val); msg != "" {
			r := badFormat(schema.class, fmt.Sprintf(
				"org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.exc.MismatchedInputException: field %q: %s", name, msg))
			return nil, &r
		}
	}
	return body(m), nil
}

// checkValue returns "" when val fits spec, else a reason.
func checkValue(spec fieldSpec, val any) string {
	if val == nil {
		return "" // Jackson maps null to the field's default
	}
	switch spec.kind {
	case kindString:
		s, ok := val.(string)
		if !ok {
			return fmt.Sprintf("expected a string, got %T", val)
		}
		if spec.hexID && !flink.IsValidID(s) {
			return fmt.Sprintf("cannot parse %q as a 32-character hex id", s)
		}
		if len(spec.enum) > 0 && !contains(spec.enum, s) {
			return fmt.Sprintf("value %q not one of [%s]", s, strings.Join(spec.enum, ", "))
		}
	case kindBool:
		if _, ok := val.(bool); !ok {
			return fmt.Sprintf("expected a boolean, got %T", val)
		}
	case kindInt:
		n, ok := val.(json.Number)
		if !ok {
			return fmt.Sprintf("expected an integer, got %T", val)
		}
		if _, err := n.Int64(); err != nil {
			return fmt.Sprintf("expected an integer, got %s", n)
		}
	case kindStringList:
		list, ok := val.([]any)
		if !ok {
			return fmt.Sprintf("expected an array of strings, got %T", val)
		}
		for _, x := range list {
			if _, ok := x.(string); !ok {
				return fmt.Sprintf("expected an array of strings, got element %T", x)
			}
		}
	case kindStringMap:
		m, ok := val.(map[string]any)
		if !ok {
			return fmt.Sprintf("expected an object of strings, got %T", val)
		}
		for k, x := range m {
			if _, ok := x.(string); !ok {
				return fmt.Sprintf("key %q: expected a string, got %T", k, x)
			}
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
