// Package periods reads job.autoscaler.excluded.periods: times at which the
// autoscaler must not rescale a job. Each period is, as upstream's
// CalendarUtils, a daily time range ("9:30:30-10:50:20"), a Quartz cron
// expression with 6 or 7 fields ("* * 9-11,14-16 * * ?" = 9:00:00 to
// 11:59:59 and 14:00:00 to 16:59:59 every day), or one of each joined by
// "&&" (both must hold). Times are read in the location of the time given to
// Contains, so the caller chooses the time zone (upstream uses the
// operator's default zone).
package periods

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Period is one parsed expression.
type Period struct {
	text  string
	daily *daily
	cron  *cron
}

// String is the expression as written.
func (p Period) String() string { return p.text }

// Parse reads one expression.
func Parse(expr string) (Period, error) {
	parts := strings.Split(expr, "&&")
	if len(parts) > 2 {
		return Period{}, fmt.Errorf("excluded period %q: at most one daily range and one cron expression joined by &&", expr)
	}
	p := Period{text: expr}
	for _, part := range parts {
		part = strings.TrimSpace(part)
		if d, err := parseDaily(part); err == nil {
			if p.daily != nil {
				return Period{}, fmt.Errorf("excluded period %q: two daily ranges; join a daily range with a cron expression", expr)
			}
			p.daily = &d
			continue
		}
		c, err := parseCron(part)
		if err != nil {
			return Period{}, fmt.Errorf("excluded period %q: %q is neither a daily range (9:30-10:45:30) nor a cron expression: %v", expr, part, err)
		}
		if p.cron != nil {
			return Period{}, fmt.Errorf("excluded period %q: two cron expressions; join a daily range with a cron expression", expr)
		}
		p.cron = &c
	}
	return p, nil
}

// ParseAll reads every expression, failing on the first bad one.
func ParseAll(exprs []string) ([]Period, error) {
	out := make([]Period, 0, len(exprs))
	for _, e := range exprs {
		p, err := Parse(e)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Contains says whether t falls in the period.
func (p Period) Contains(t time.Time) bool {
	if p.daily != nil && !p.daily.contains(t) {
		return false
	}
	if p.cron != nil && !p.cron.contains(t) {
		return false
	}
	return p.daily != nil || p.cron != nil
}

// Any returns the first period containing t.
func Any(ps []Period, t time.Time) (Period, bool) {
	for _, p := range ps {
		if p.Contains(t) {
			return p, true
		}
	}
	return Period{}, false
}

// daily is a range of the day, both ends included, in milliseconds.
type daily struct{ from, to time.Duration }

func parseDaily(s string) (daily, error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok || strings.Contains(b, "-") {
		return daily{}, fmt.Errorf("not start-end")
	}
	from, err := parseTimeOfDay(a)
	if err != nil {
		return daily{}, err
	}
	to, err := parseTimeOfDay(b)
	if err != nil {
		return daily{}, err
	}
	if from >= to {
		// Quartz's DailyCalendar refuses a range ending before it starts; a
		// range over midnight is two periods.
		return daily{}, fmt.Errorf("range %q ends before it starts", s)
	}
	return daily{from, to}, nil
}

// parseTimeOfDay reads H:MM[:SS[:mmm]] as Quartz's DailyCalendar.
func parseTimeOfDay(s string) (time.Duration, error) {
	fields := strings.Split(strings.TrimSpace(s), ":")
	if len(fields) < 2 || len(fields) > 4 {
		return 0, fmt.Errorf("time %q is not H:MM[:SS[:mmm]]", s)
	}
	units := []time.Duration{time.Hour, time.Minute, time.Second, time.Millisecond}
	limits := []int{23, 59, 59, 999}
	var d time.Duration
	for n, f := range fields {
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 || v > limits[n] {
			return 0, fmt.Errorf("time %q: bad field %q", s, f)
		}
		d += time.Duration(v) * units[n]
	}
	return d, nil
}

func (d daily) contains(t time.Time) bool {
	y, m, day := t.Date()
	since := t.Sub(time.Date(y, m, day, 0, 0, 0, 0, t.Location())).Truncate(time.Millisecond)
	return since >= d.from && since <= d.to
}

// cron is a Quartz cron expression: second minute hour day-of-month month
// day-of-week [year]. Supported per field: *, ?, numbers, names (JAN-DEC,
// SUN-SAT; day-of-week 1 = Sunday as in Quartz), ranges a-b, lists and steps
// (*/n, a/n, a-b/n). Quartz's L, W and # are rejected (as bad values)
// rather than misread.
type cron struct {
	fields [7]map[int]bool // nil = any
}

var cronFields = []struct {
	name     string
	min, max int
	names    []string // index 0 = value min
}{
	{"second", 0, 59, nil},
	{"minute", 0, 59, nil},
	{"hour", 0, 23, nil},
	{"day-of-month", 1, 31, nil},
	{"month", 1, 12, []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{"day-of-week", 1, 7, []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
	{"year", 1970, 2199, nil},
}

func parseCron(s string) (cron, error) {
	parts := strings.Fields(s)
	if len(parts) != 6 && len(parts) != 7 {
		return cron{}, fmt.Errorf("%d fields, a Quartz cron expression has 6 or 7", len(parts))
	}
	var c cron
	for n, part := range parts {
		set, err := parseCronField(strings.ToUpper(part), n)
		if err != nil {
			return cron{}, fmt.Errorf("%s field %q: %v", cronFields[n].name, part, err)
		}
		c.fields[n] = set
	}
	return c, nil
}

func parseCronField(s string, n int) (map[int]bool, error) {
	f := cronFields[n]
	if s == "*" || s == "?" {
		return nil, nil
	}
	set := map[int]bool{}
	for _, item := range strings.Split(s, ",") {
		rng, step := item, 1
		if r, st, ok := strings.Cut(item, "/"); ok {
			v, err := strconv.Atoi(st)
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("bad step %q", st)
			}
			rng, step = r, v
		}
		lo, hi := f.min, f.max
		switch {
		case rng == "*" || rng == "?":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var ok1, ok2 bool
			lo, ok1 = value(f.names, f.min, a)
			hi, ok2 = value(f.names, f.min, b)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("bad range %q", rng)
			}
		default:
			v, ok := value(f.names, f.min, rng)
			if !ok {
				return nil, fmt.Errorf("bad value %q", rng)
			}
			lo = v
			if !strings.Contains(item, "/") {
				hi = v
			}
		}
		if lo < f.min || hi > f.max || lo > hi {
			return nil, fmt.Errorf("%q outside %d-%d", item, f.min, f.max)
		}
		for v := lo; v <= hi; v += step {
			set[v] = true
		}
	}
	return set, nil
}

func value(names []string, base int, s string) (int, bool) {
	if v, err := strconv.Atoi(s); err == nil {
		return v, true
	}
	return nameValue(names, base, s)
}

func nameValue(names []string, base int, s string) (int, bool) {
	for n, name := range names {
		if s == name {
			return base + n, true
		}
	}
	return 0, false
}

func (c cron) contains(t time.Time) bool {
	values := [7]int{t.Second(), t.Minute(), t.Hour(), t.Day(), int(t.Month()), int(t.Weekday()) + 1, t.Year()}
	for n, set := range c.fields {
		if set != nil && !set[values[n]] {
			return false
		}
	}
	return true
}
