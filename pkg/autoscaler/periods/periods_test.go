package periods

import (
	"testing"
	"time"
)

func TestContains(t *testing.T) {
	// 2026-12-07 is a Monday.
	at := func(day, h, m, s int) time.Time { return time.Date(2026, 12, day, h, m, s, 0, time.UTC) }
	tests := []struct {
		expr string
		t    time.Time
		want bool
	}{
		{"9:30:30-10:50:20", at(7, 9, 30, 30), true},
		{"9:30:30-10:50:20", at(7, 10, 50, 20), true},
		{"9:30:30-10:50:20", at(7, 10, 50, 21), false},
		{"9:30:30-10:50:20", at(7, 9, 30, 29), false},
		{"* * 9-11,14-16 * * ?", at(7, 11, 59, 59), true},
		{"* * 9-11,14-16 * * ?", at(7, 12, 0, 0), false},
		{"* * 14-16 * * ?", at(7, 16, 30, 0), true},
		{"* * * ? * 2-6", at(7, 3, 0, 0), true},                       // Monday = 2 in Quartz
		{"* * * ? * 2-6", at(6, 3, 0, 0), false},                      // Sunday
		{"* * * ? * MON-FRI", at(11, 3, 0, 0), true},                  // Friday
		{"* * * ? * mon,wed", at(9, 3, 0, 0), true},                   // Wednesday
		{"0 */15 * * * ?", at(7, 3, 45, 0), true},                     // steps
		{"0 */15 * * * ?", at(7, 3, 46, 0), false},                    //
		{"* * * ? DEC * 2026", at(7, 3, 0, 0), true},                  // year field
		{"* * * ? DEC * 2027", at(7, 3, 0, 0), false},                 //
		{"9:30:30-10:50:20 && * * * ? * 2,5", at(7, 10, 0, 0), true},  // Monday in range
		{"9:30:30-10:50:20 && * * * ? * 2,5", at(8, 10, 0, 0), false}, // Tuesday
		{"9:30:30-10:50:20 && * * * ? * 2,5", at(7, 11, 0, 0), false}, // Monday, out of range
	}
	for _, tt := range tests {
		p, err := Parse(tt.expr)
		if err != nil {
			t.Fatalf("%q: %v", tt.expr, err)
		}
		if got := p.Contains(tt.t); got != tt.want {
			t.Errorf("%q contains %s = %v, want %v", tt.expr, tt.t.Format(time.RFC1123), got, tt.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, expr := range []string{
		"", "10:00-9:00", "9:00-10:00 && 11:00-12:00", "* * * * *", "* * * L * ?", "* * * ? * 6#3",
		"* * 25 * * ?", "* * * ? * 2 && * * * ? * 3", "a && b && c", "9:60-10:00",
	} {
		if _, err := Parse(expr); err == nil {
			t.Errorf("%q parsed, want an error", expr)
		}
	}
}

func TestAny(t *testing.T) {
	ps, err := ParseAll([]string{"1:00-2:00", "* * 5 * * ?"})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := Any(ps, time.Date(2026, 1, 1, 5, 10, 0, 0, time.UTC)); !ok || p.String() != "* * 5 * * ?" {
		t.Errorf("Any = %v %v, want the cron period", p, ok)
	}
	if _, ok := Any(ps, time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)); ok {
		t.Error("3:00 is in no period")
	}
}
