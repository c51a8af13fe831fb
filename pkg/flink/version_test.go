package flink_test

import (
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
)

func TestParseVersion(t *testing.T) {
	good := map[string]flink.Version{
		"1.20":             {Major: 1, Minor: 20},
		"v1_20":            {Major: 1, Minor: 20},
		"V1_18":            {Major: 1, Minor: 18},
		"2.0":              {Major: 2, Minor: 0},
		"v2_0":             {Major: 2, Minor: 0},
		"1.19.2":           {Major: 1, Minor: 19},
		"2.0-SNAPSHOT":     {Major: 2, Minor: 0},
		"v1/1.18-SNAPSHOT": {Major: 1, Minor: 18},
		" 1.17 ":           {Major: 1, Minor: 17},
	}
	for in, want := range good {
		got, err := flink.ParseVersion(in)
		if err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1", "v1", "abc", "1.x", "x.1", "-1.2", "1.-2"} {
		if v, err := flink.ParseVersion(in); err == nil {
			t.Errorf("ParseVersion(%q) = %v, want an error", in, v)
		}
	}
}

func TestVersionOrderingAndGates(t *testing.T) {
	if !flink.V1_20.AtLeast(flink.V1_19) || flink.V1_19.AtLeast(flink.V1_20) || !flink.V2_0.AtLeast(flink.V1_20) {
		t.Error("AtLeast ordering is wrong")
	}
	if v19 := (flink.Version{Major: 1, Minor: 9}); !v19.Before(flink.V1_18) {
		t.Error("1.9 must sort before 1.18 (numeric, not lexical)")
	}
	if flink.V1_20.String() != "1.20" || flink.V2_0.String() != "2.0" {
		t.Error("String()")
	}
	cases := []struct {
		v                                     flink.Version
		strict, claim, checkpoint, rejectsInc bool
	}{
		{flink.V1_16, true, false, false, false},
		{flink.V1_17, true, false, true, false},
		{flink.V1_18, true, false, true, false},
		{flink.V1_19, true, false, true, true},
		{flink.V1_20, false, true, true, true},
		{flink.V2_0, false, true, true, true},
	}
	for _, c := range cases {
		if c.v.StrictRequestParsing() != c.strict || c.v.UsesClaimMode() != c.claim ||
			c.v.SupportsCheckpointTrigger() != c.checkpoint || c.v.RejectsIncrementalCheckpointTrigger() != c.rejectsInc {
			t.Errorf("gates for %s wrong", c.v)
		}
	}
}

func TestNewValidatesConfig(t *testing.T) {
	for name, cfg := range map[string]flink.Config{
		"no version":  {BaseURL: "http://jm:8081"},
		"too old":     {BaseURL: "http://jm:8081", Version: flink.Version{Major: 1, Minor: 14}},
		"no scheme":   {BaseURL: "jm:8081", Version: flink.V1_20},
		"ftp":         {BaseURL: "ftp://jm", Version: flink.V1_20},
		"unparseable": {BaseURL: "http://[::1", Version: flink.V1_20},
	} {
		if _, err := flink.New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	c, err := flink.New(flink.Config{BaseURL: "https://proxy.example/flink/ns/cluster/", Version: flink.V1_20})
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != "https://proxy.example/flink/ns/cluster" || c.Version() != flink.V1_20 {
		t.Errorf("BaseURL %q version %v", c.BaseURL(), c.Version())
	}
}

func TestIDs(t *testing.T) {
	a, b := flink.NewTriggerID(), flink.NewTriggerID()
	if !flink.IsValidID(a) || a == b {
		t.Errorf("NewTriggerID: %q %q", a, b)
	}
	for _, bad := range []string{"", "0123", "0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef0123456789abcdeg", "../../../../../../../../etc/passwd"} {
		if flink.IsValidID(bad) {
			t.Errorf("IsValidID(%q) = true", bad)
		}
	}
}
