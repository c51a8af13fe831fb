package snapshotrules

import (
	"testing"
	"time"
)

func at(h, m int) time.Time { return time.Date(2026, 12, 1, h, m, 0, 0, time.UTC) }

// Cases from upstream's SnapshotUtilsTest (duration and cron parsing).
func TestParseScheduleDurations(t *testing.T) {
	for _, off := range []string{"", " ", "0", "-1", "-5m"} {
		s, err := ParseSchedule(off)
		if err != nil || s != nil {
			t.Errorf("%q: schedule %v, err %v; want off", off, s, err)
		}
	}
	s, err := ParseSchedule("10M")
	if err != nil || s == nil {
		t.Fatalf("10M: %v %v", s, err)
	}
	last := at(10, 0)
	if due, _, _ := Due(s, last, last.Add(5*time.Minute)); due {
		t.Error("10 min interval due after 5 min")
	}
	if due, next, _ := Due(s, last, last.Add(11*time.Minute)); !due || !next.Equal(last.Add(10*time.Minute)) {
		t.Errorf("10 min interval not due after 11 min (next %v)", next)
	}
	if _, err := ParseSchedule("every now and then"); err == nil {
		t.Error("invalid interval accepted")
	}
}

func TestCronSchedule(t *testing.T) {
	s, err := ParseSchedule("0 */10 * * * ?")
	if err != nil {
		t.Fatal(err)
	}
	if due, _, _ := Due(s, at(10, 5), at(11, 5)); !due {
		t.Error("last 10:05, now 11:05: want due")
	}
	if due, next, _ := Due(s, at(11, 1), at(11, 5)); due || !next.Equal(at(11, 10)) {
		t.Errorf("last 11:01, now 11:05: want not due until 11:10, next %v", next)
	}
	impossible, err := ParseSchedule("0 0 0 29 2 ? 1999")
	if err != nil {
		t.Fatal(err)
	}
	if due, _, ok := Due(impossible, at(10, 0).AddDate(-1, 0, 0), at(10, 0)); due || ok {
		t.Error("impossible cron is due")
	}
	for _, bad := range []string{"0 0 * * *", "0 0 0 L * ?", "0 0 0 * * 6#3", "0 61 * * * ?", "0 0 0 1 * MON"} {
		if _, err := ParseCron(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCronNext(t *testing.T) {
	cases := []struct {
		expr string
		from time.Time
		want time.Time
	}{
		{"0 0 12 * * ?", at(13, 0), time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)},
		{"30 15 10 ? * MON-FRI", at(11, 0), time.Date(2026, 12, 2, 10, 15, 30, 0, time.UTC)}, // 2026-12-01 is a Tuesday
		{"0 0 0 1 JAN ?", at(0, 0), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"0 0/15 * * * ?", at(10, 7), at(10, 15)},
		{"0 5,35 9-10 * * ?", at(9, 6), at(9, 35)},
		{"0 0 0 ? * SUN", at(0, 0), time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		cron, err := ParseCron(c.expr)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		if got, ok := cron.Next(c.from); !ok || !got.Equal(c.want) {
			t.Errorf("%q from %v: next %v, want %v", c.expr, c.from, got, c.want)
		}
	}
}
