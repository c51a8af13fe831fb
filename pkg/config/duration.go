package config

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// durationUnits maps every unit label Flink's TimeUtils.parseDuration accepts
// (lower case, as Flink lower-cases the label before the lookup) to its length.
// A few labels Flink does not know are added because users write them and they
// cannot mean anything else: "us" and the Greek "μs" (Go's spellings of
// microseconds), and the plurals "nanos", "micros", "millis", "mins".
var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond,
	"nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,

	"us": time.Microsecond, "µs": time.Microsecond, "μs": time.Microsecond,
	"micro": time.Microsecond, "micros": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,

	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,

	"s": time.Second, "sec": time.Second, "secs": time.Second,
	"second": time.Second, "seconds": time.Second,

	"m": time.Minute, "min": time.Minute, "mins": time.Minute,
	"minute": time.Minute, "minutes": time.Minute,

	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,

	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// recognizedUnits is the unit list quoted in parse errors, so a user who
// wrote "10 mn" sees at once what would have worked.
const recognizedUnits = "ns|nano(s)|nanosecond(s), us|µs|micro(s)|microsecond(s), " +
	"ms|milli(s)|millisecond(s), s|sec(s)|second(s), m|min(s)|minute(s), h|hour(s), d|day(s); " +
	"no unit = milliseconds; also ISO-8601 (PT1M30S) and Go-style (1h30m)"

// iso8601Duration is the subset of java.time.Duration.parse that Flink 2.x
// falls back to when a value does not start with a digit (for example
// "PT10M"). Signs are left out on purpose: Flink rejects negative durations.
var iso8601Duration = regexp.MustCompile(
	`^[Pp](?:(\d+)[Dd])?(?:[Tt](?:(\d+)[Hh])?(?:(\d+)[Mm])?(?:(\d+)(?:[.,](\d{1,9}))?[Ss])?)?$`)

// ParseDuration parses a duration the way Flink's TimeUtils.parseDuration
// does, so a value copied from a Flink or upstream-operator config means the
// same here:
//
//   - a non-negative integer, optional whitespace, an optional unit label
//     (case-insensitive; see durationUnits): "10 s", "1 min", "24 h", "10m",
//     "6h"; a bare number is milliseconds ("500" = 500 ms);
//   - an ISO-8601 duration such as "PT1M" or "P1DT2H", which Flink 2.x accepts;
//   - as an extension for Go users, anything time.ParseDuration accepts that
//     is not negative, e.g. the compound "1h30m" or "1.5h".
//
// Negative values are rejected like in Flink. The error names the value and
// the recognized units; callers add the config key (see ValueError).
func ParseDuration(text string) (time.Duration, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return 0, fmt.Errorf("invalid duration %q: empty value", text)
	}
	if s[0] == '-' || s[0] == '+' {
		return 0, fmt.Errorf("invalid duration %q: signs are not allowed (durations are never negative)", text)
	}

	digits := 0
	for digits < len(s) && s[digits] >= '0' && s[digits] <= '9' {
		digits++
	}
	if digits > 0 {
		label := strings.ToLower(strings.TrimSpace(s[digits:]))
		unit, known := time.Millisecond, true
		if label != "" {
			unit, known = durationUnits[label]
		}
		if known {
			n, err := strconv.ParseInt(s[:digits], 10, 64)
			if err != nil || n > math.MaxInt64/int64(unit) {
				return 0, fmt.Errorf("invalid duration %q: too large (the maximum is about 292 years)", text)
			}
			return time.Duration(n) * unit, nil
		}
		// Not a Flink unit: maybe Go-style ("1h30m", "1.5h").
		if d, err := time.ParseDuration(s); err == nil {
			return d, nil
		}
		return 0, fmt.Errorf("invalid duration %q: unknown unit %q (recognized: %s)", text, label, recognizedUnits)
	}

	if m := iso8601Duration.FindStringSubmatch(s); m != nil && hasISOComponent(s) {
		return isoDuration(text, m)
	}
	return 0, fmt.Errorf("invalid duration %q: does not start with a number (recognized: %s)", text, recognizedUnits)
}

// hasISOComponent rejects the degenerate forms "P" and "PT" that the regular
// expression lets through; java.time.Duration rejects them too.
func hasISOComponent(s string) bool {
	return strings.ContainsAny(s[1:], "0123456789") && !strings.HasSuffix(strings.ToUpper(s), "T")
}

// isoDuration adds up the components of a matched ISO-8601 duration with
// overflow checks, since "P999999999D" must be an error, not a wrapped value.
func isoDuration(text string, m []string) (time.Duration, error) {
	var total time.Duration
	add := func(digits string, unit time.Duration) error {
		if digits == "" {
			return nil
		}
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || n > math.MaxInt64/int64(unit) || time.Duration(n)*unit > math.MaxInt64-total {
			return fmt.Errorf("invalid duration %q: too large (the maximum is about 292 years)", text)
		}
		total += time.Duration(n) * unit
		return nil
	}
	fraction := m[5]
	if fraction != "" {
		fraction += strings.Repeat("0", 9-len(fraction)) // to nanoseconds
	}
	for _, part := range []struct {
		digits string
		unit   time.Duration
	}{{m[1], 24 * time.Hour}, {m[2], time.Hour}, {m[3], time.Minute}, {m[4], time.Second}, {fraction, time.Nanosecond}} {
		if err := add(part.digits, part.unit); err != nil {
			return 0, err
		}
	}
	return total, nil
}
