package snapshotrules

import (
	"strings"
	"testing"
	"time"
)

// TestZeroDurationScheduleIsOff pins that any zero interval turns periodic
// snapshots off, however it is spelled ("0 min", "0 s"), not only "0".
func TestZeroDurationScheduleIsOff(t *testing.T) {
	for _, off := range []string{"0 min", "0 s", "0ms"} {
		if s, err := ParseSchedule(off); err != nil || s != nil {
			t.Errorf("%q: schedule %v, err %v; want off", off, s, err)
		}
	}
}

// TestCronYearField pins the optional seventh field of a Quartz cron
// expression: the schedule fires only in the listed years (ranges and steps
// included) and has no next time after the last of them.
func TestCronYearField(t *testing.T) {
	from := at(10, 0) // 2026-12-01 10:00 UTC
	for _, tc := range []struct {
		expr string
		want time.Time // zero: no next time
	}{
		{"0 0 12 * * ? 2026", at(12, 0)},
		{"0 0 0 1 1 ? 2028", time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"0 0 0 1 1 ? 2027-2028", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"0 0 0 1 6 ? 2020/4", time.Date(2028, 6, 1, 0, 0, 0, 0, time.UTC)},
		{"0 0 0 1 1 ? 2025,2026", time.Time{}},
		{"0 0 0 1 1 ? *", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		c, err := ParseCron(tc.expr)
		if err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		got, ok := c.Next(from)
		if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
			t.Errorf("%q from %v: next %v (%v), want %v", tc.expr, from, got, ok, tc.want)
		}
	}
	// The last year of a range is included.
	c, err := ParseCron("0 0 0 1 1 ? 2027-2028")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Next(time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC)); !ok || !got.Equal(time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("2027-2028 from mid-2027: next %v (%v), want 2028-01-01", got, ok)
	}
}

// TestCronSteps pins steps: "/1" is every value, and a step that is not a
// positive number is refused with a message naming it.
func TestCronSteps(t *testing.T) {
	c, err := ParseCron("0 0/1 * * * ?")
	if err != nil {
		t.Fatalf("step 1: %v", err)
	}
	if got, ok := c.Next(at(10, 7)); !ok || !got.Equal(at(10, 8)) {
		t.Errorf("every minute from 10:07: %v", got)
	}
	for expr, want := range map[string]string{
		"0 0/x * * * ?":  `bad step "x"`,
		"0 0/0 * * * ?":  `bad step "0"`,
		"0 */-5 * * * ?": `bad step "-5"`,
	} {
		if _, err := ParseCron(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %s", expr, err, want)
		}
	}
}

// TestCronErrorNamesField pins that a refused expression says which field
// (1-based, as Quartz counts) is wrong.
func TestCronErrorNamesField(t *testing.T) {
	for expr, want := range map[string]string{
		"61 0 * * * ?":     `field 1 "61"`,
		"0 61 * * * ?":     `field 2 "61"`,
		"0 0 24 * * ?":     `field 3 "24"`,
		"0 0 0 32 * ?":     `field 4 "32"`,
		"0 0 0 ? 13 *":     `field 5 "13"`,
		"0 0 0 ? * 8":      `field 6 "8"`,
		"0 0 0 1 1 ? 1900": `year "1900"`,
	} {
		if _, err := ParseCron(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one naming %s", expr, err, want)
		}
	}
}
