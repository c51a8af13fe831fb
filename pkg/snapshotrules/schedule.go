package snapshotrules

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flinkops/flink-operator/pkg/config"
)

// Schedule says when periodic snapshots are due.
type Schedule interface {
	// Next returns the first due time strictly after t; false if there is
	// none (an impossible cron expression).
	Next(t time.Time) (time.Time, bool)
}

// ParseSchedule reads kubernetes.operator.periodic.{savepoint,checkpoint}
// .interval: blank, "0" or a negative duration mean off (nil schedule); a
// Flink duration ("10m", "1 h") means every interval; anything else must be a
// Quartz cron expression ("0 */10 * * * ?").
func ParseSchedule(value string) (Schedule, error) {
	value = strings.TrimSpace(value)
	if value == "" || value == "0" || strings.HasPrefix(value, "-") {
		return nil, nil
	}
	if d, err := config.ParseDuration(value); err == nil {
		if d <= 0 {
			return nil, nil
		}
		return every(d), nil
	}
	c, err := ParseCron(value)
	if err != nil {
		return nil, fmt.Errorf("%q is neither a duration nor a Quartz cron expression: %w", value, err)
	}
	return c, nil
}

type every time.Duration

func (e every) Next(t time.Time) (time.Time, bool) { return t.Add(time.Duration(e)), true }

// Due reports whether a snapshot is due at now when the last one was
// triggered at last, and returns the next due time (for AddAfter).
func Due(s Schedule, last, now time.Time) (due bool, next time.Time, ok bool) {
	next, ok = s.Next(last)
	if !ok {
		return false, time.Time{}, false
	}
	return !next.After(now), next, true
}

// Cron is a parsed Quartz cron expression: seconds minutes hours
// day-of-month month day-of-week [year]. Supported: numbers, names (JAN,
// MON), `*`, `?`, ranges `a-b`, steps `a/n` and `*/n`, lists. Not supported
// (rejected): L, W and #.
type Cron struct {
	sec, min, hour, dom, month, dow [64]bool
	domAny, dowAny                  bool
	years                           map[int]bool // nil = every year
}

var (
	monthNames = map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6, "JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}
	dowNames   = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
)

// ParseCron parses a Quartz cron expression.
func ParseCron(expr string) (*Cron, error) {
	fields := strings.Fields(expr)
	if len(fields) != 6 && len(fields) != 7 {
		return nil, fmt.Errorf("want 6 or 7 fields, got %d", len(fields))
	}
	c := &Cron{}
	specs := []struct {
		set      *[64]bool
		lo, hi   int
		names    map[string]int
		anyFlag  *bool
		fieldIdx int
	}{
		{&c.sec, 0, 59, nil, nil, 0}, {&c.min, 0, 59, nil, nil, 1}, {&c.hour, 0, 23, nil, nil, 2},
		{&c.dom, 1, 31, nil, &c.domAny, 3}, {&c.month, 1, 12, monthNames, nil, 4}, {&c.dow, 1, 7, dowNames, &c.dowAny, 5},
	}
	for _, s := range specs {
		f := fields[s.fieldIdx]
		if f == "?" {
			if s.anyFlag == nil {
				return nil, fmt.Errorf("'?' is only allowed for day-of-month and day-of-week")
			}
			*s.anyFlag = true
			f = "*"
		} else if f == "*" && s.anyFlag != nil {
			*s.anyFlag = true
		}
		if err := parseField(f, s.lo, s.hi, s.names, s.set); err != nil {
			return nil, fmt.Errorf("field %d %q: %w", s.fieldIdx+1, f, err)
		}
	}
	if !c.domAny && !c.dowAny {
		return nil, fmt.Errorf("one of day-of-month and day-of-week must be '?'")
	}
	if len(fields) == 7 && fields[6] != "*" {
		c.years = map[int]bool{}
		for _, part := range strings.Split(fields[6], ",") {
			lo, hi, step, err := parseRange(part, 1970, 2199, nil)
			if err != nil {
				return nil, fmt.Errorf("year %q: %w", fields[6], err)
			}
			for y := lo; y <= hi; y += step {
				c.years[y] = true
			}
		}
	}
	return c, nil
}

func parseField(f string, lo, hi int, names map[string]int, set *[64]bool) error {
	for _, part := range strings.Split(f, ",") {
		a, b, step, err := parseRange(part, lo, hi, names)
		if err != nil {
			return err
		}
		for v := a; v <= b; v += step {
			set[v] = true
		}
	}
	return nil
}

func parseRange(part string, lo, hi int, names map[string]int) (a, b, step int, err error) {
	step = 1
	if i := strings.IndexByte(part, '/'); i >= 0 {
		if step, err = strconv.Atoi(part[i+1:]); err != nil || step < 1 {
			return 0, 0, 0, fmt.Errorf("bad step %q", part[i+1:])
		}
		part = part[:i]
		if part != "*" && !strings.Contains(part, "-") {
			a, err = value(part, names)
			return a, hi, step, checkBounds(a, hi, lo, hi, err)
		}
	}
	if part == "*" {
		return lo, hi, step, nil
	}
	if i := strings.IndexByte(part, '-'); i >= 0 {
		if a, err = value(part[:i], names); err != nil {
			return 0, 0, 0, err
		}
		if b, err = value(part[i+1:], names); err != nil {
			return 0, 0, 0, err
		}
		return a, b, step, checkBounds(a, b, lo, hi, nil)
	}
	a, err = value(part, names)
	return a, a, step, checkBounds(a, a, lo, hi, err)
}

func value(s string, names map[string]int) (int, error) {
	if v, ok := names[strings.ToUpper(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bad value %q (L, W and # are not supported)", s)
	}
	return v, nil
}

func checkBounds(a, b, lo, hi int, err error) error {
	if err != nil {
		return err
	}
	if a < lo || b > hi || a > b {
		return fmt.Errorf("out of range %d-%d", lo, hi)
	}
	return nil
}

// Next finds the first matching second after t (in t's location), searching
// at most five years ahead (or through the listed years).
func (c *Cron) Next(t time.Time) (time.Time, bool) {
	t = t.Truncate(time.Second).Add(time.Second)
	limit := t.AddDate(5, 0, 0)
	if c.years != nil {
		maxYear := 0
		for y := range c.years {
			maxYear = max(maxYear, y)
		}
		if maxYear < t.Year() {
			return time.Time{}, false
		}
		limit = time.Date(maxYear+1, 1, 1, 0, 0, 0, 0, t.Location())
	}
	for t.Before(limit) {
		switch {
		case c.years != nil && !c.years[t.Year()]:
			t = time.Date(t.Year()+1, 1, 1, 0, 0, 0, 0, t.Location())
		case !c.month[int(t.Month())]:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, t.Location())
		case !c.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, t.Location())
		case !c.hour[t.Hour()]:
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, t.Location())
		case !c.min[t.Minute()]:
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute()+1, 0, 0, t.Location())
		case !c.sec[t.Second()]:
			t = t.Add(time.Second)
		default:
			return t, true
		}
	}
	return time.Time{}, false
}

func (c *Cron) dayMatches(t time.Time) bool {
	dom := c.dom[t.Day()]
	dow := c.dow[int(t.Weekday())+1] // Quartz: 1 = Sunday
	switch {
	case c.domAny && c.dowAny:
		return true
	case c.domAny:
		return dow
	default:
		return dom
	}
}
