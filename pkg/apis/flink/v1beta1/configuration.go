package v1beta1

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Configuration holds a resource's flinkConfiguration exactly as the user wrote
// it. Upstream accepts both flat keys ("a.b.c": "v") and nested YAML
// ({a: {b: {c: v}}}), with any scalar type as value, so the raw JSON is kept
// verbatim: a round trip through our types never changes what was applied.
// Use Values (or pkg/config, which flattens) to read it.
type Configuration struct {
	// Raw is the JSON encoding of the configuration object.
	Raw []byte `json:"-"`
}

// NewConfiguration builds a Configuration from flat string keys, the shape the
// operator itself writes.
func NewConfiguration(values map[string]string) *Configuration {
	raw, _ := json.Marshal(values) // a map[string]string always marshals
	return &Configuration{Raw: raw}
}

// MarshalJSON writes the configuration verbatim ("null" when empty).
func (c Configuration) MarshalJSON() ([]byte, error) {
	if len(c.Raw) == 0 {
		return []byte("null"), nil
	}
	return c.Raw, nil
}

// UnmarshalJSON keeps the configuration verbatim after checking it is a JSON
// object (or null).
func (c *Configuration) UnmarshalJSON(data []byte) error {
	trimmed := bytes.TrimSpace(data)
	if bytes.Equal(trimmed, []byte("null")) {
		c.Raw = nil
		return nil
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("flinkConfiguration must be an object, got %.40s", trimmed)
	}
	c.Raw = append(c.Raw[:0], trimmed...)
	return nil
}

// Values decodes the configuration into a generic map (nested maps kept as
// they were written). An empty configuration gives an empty map.
func (c *Configuration) Values() (map[string]any, error) {
	values := map[string]any{}
	if c == nil || len(c.Raw) == 0 {
		return values, nil
	}
	dec := json.NewDecoder(bytes.NewReader(c.Raw))
	dec.UseNumber() // keep "10" and 10.0 as written, not float64
	if err := dec.Decode(&values); err != nil {
		return nil, fmt.Errorf("decoding flinkConfiguration: %w", err)
	}
	return values, nil
}
