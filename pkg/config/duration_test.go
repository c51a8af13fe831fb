package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseDurationUnits(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		labels []string
		unit   time.Duration
	}{
		{[]string{"ns", "nano", "nanos", "nanosecond", "nanoseconds"}, time.Nanosecond},
		{[]string{"us", "µs", "μs", "micro", "micros", "microsecond", "microseconds"}, time.Microsecond},
		{[]string{"ms", "milli", "millis", "millisecond", "milliseconds"}, time.Millisecond},
		{[]string{"s", "sec", "secs", "second", "seconds"}, time.Second},
		{[]string{"m", "min", "mins", "minute", "minutes"}, time.Minute},
		{[]string{"h", "hour", "hours"}, time.Hour},
		{[]string{"d", "day", "days"}, day},
	}
	for _, tt := range tests {
		for _, label := range tt.labels {
			// Both with and without a space, as Flink accepts both.
			for _, text := range []string{"7" + label, "7 " + label} {
				got, err := ParseDuration(text)
				if err != nil {
					t.Errorf("ParseDuration(%q): %v", text, err)
					continue
				}
				if want := 7 * tt.unit; got != want {
					t.Errorf("ParseDuration(%q) = %v, want %v", text, got, want)
				}
			}
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		// Values from the upstream docs and the specs.
		{"60 s", time.Minute},
		{"10 s", 10 * time.Second},
		{"1 min", time.Minute},
		{"24 h", 24 * time.Hour},
		{"10m", 10 * time.Minute},
		{"6h", 6 * time.Hour},
		{"60s", time.Minute},
		// No unit means milliseconds, as in Flink.
		{"500", 500 * time.Millisecond},
		{"0", 0},
		{"007", 7 * time.Millisecond},
		// Whitespace around and between, and unit case.
		{"  10 s  ", 10 * time.Second},
		{"10\t s", 10 * time.Second},
		{"10   min", 10 * time.Minute},
		{"10 S", 10 * time.Second},
		{"1 MIN", time.Minute},
		{"2 Hours", 2 * time.Hour},
		{"3 µS", 3 * time.Microsecond},
		// ISO-8601, which Flink 2.x accepts.
		{"PT1M", time.Minute},
		{"pt10s", 10 * time.Second},
		{"P1D", 24 * time.Hour},
		{"P1DT2H3M4S", 26*time.Hour + 3*time.Minute + 4*time.Second},
		{"PT1.5S", 1500 * time.Millisecond},
		{"PT0.000000001S", time.Nanosecond},
		// Go-style extension.
		{"1h30m", 90 * time.Minute},
		{"2h45m30s", 2*time.Hour + 45*time.Minute + 30*time.Second},
		{"1.5h", 90 * time.Minute},
		{"300ms", 300 * time.Millisecond},
		// Largest representable values.
		{"106751 d", 106751 * 24 * time.Hour},
		{"9223372036854775807 ns", time.Duration(1<<63 - 1)},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil {
			t.Errorf("ParseDuration(%q): unexpected error %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseDurationErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantMsg string
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"abc", "does not start with a number"},
		{"s", "does not start with a number"},
		{"10 x", `unknown unit "x"`},
		{"10 mn", `unknown unit "mn"`},
		{"10 s s", `unknown unit "s s"`},
		{"1.5 s", "unknown unit"}, // Flink rejects fractions; Go-style needs no space
		{"10 weeks", "unknown unit"},
		{"-5s", "signs are not allowed"},
		{"-5", "signs are not allowed"},
		{"+5s", "signs are not allowed"},
		{"P", "does not start with a number"},
		{"PT", "does not start with a number"},
		{"P1DT", "does not start with a number"},
		{"PT-1S", "does not start with a number"},
		{"106752 d", "too large"},
		{"9223372036854775808", "too large"},
		{"99999999999999999999 ms", "too large"},
		{"P999999999999D", "too large"},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", tt.in, got)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.wantMsg) {
			t.Errorf("ParseDuration(%q) error %q, want it to contain %q", tt.in, msg, tt.wantMsg)
		}
		if !strings.Contains(msg, `"`+tt.in+`"`) {
			t.Errorf("ParseDuration(%q) error %q does not quote the value", tt.in, msg)
		}
	}
}

func TestUnknownUnitErrorListsUnits(t *testing.T) {
	_, err := ParseDuration("10 x")
	if err == nil || !strings.Contains(err.Error(), "min(s)") || !strings.Contains(err.Error(), "1h30m") {
		t.Fatalf("error should list the recognized units, got %v", err)
	}
}
