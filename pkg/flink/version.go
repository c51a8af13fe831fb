package flink

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a Flink minor release, e.g. 1.20 or 2.0. Patch releases never
// change the REST API, so they are not tracked.
type Version struct {
	Major int
	Minor int
}

// Well-known versions, used for feature gates and in tests.
var (
	V1_15 = Version{1, 15}
	V1_16 = Version{1, 16}
	V1_17 = Version{1, 17}
	V1_18 = Version{1, 18}
	V1_19 = Version{1, 19}
	V1_20 = Version{1, 20}
	V2_0  = Version{2, 0}
	V2_1  = Version{2, 1}
)

// MinSupportedVersion is the oldest Flink the client talks to. 1.15 is where
// client-chosen savepoint trigger ids and formatType appeared; without them
// a retried trigger could start a second savepoint.
var MinSupportedVersion = V1_15

// ParseVersion accepts the spellings found in operator CRs and Flink
// output: "1.20", "1.20.1", "v1_20", "V2_0", "2.0-SNAPSHOT", "v1/1.18-SNAPSHOT"
// (an OpenAPI info.version). Anything after major.minor is ignored.
func ParseVersion(s string) (Version, error) {
	orig := s
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "v"), "V")
	if i := strings.IndexAny(s, "-+ "); i >= 0 {
		s = s[:i]
	}
	s = strings.ReplaceAll(s, "_", ".")
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("flink: invalid version %q: want MAJOR.MINOR", orig)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 || major > 99 || minor > 999 {
		return Version{}, fmt.Errorf("flink: invalid version %q: want MAJOR.MINOR", orig)
	}
	return Version{Major: major, Minor: minor}, nil
}

// MustParseVersion is ParseVersion for constants; it panics on bad input.
func MustParseVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// String renders the version as "MAJOR.MINOR".
func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// IsZero reports whether v is the zero Version (not set).
func (v Version) IsZero() bool { return v == Version{} }

// Compare returns -1, 0 or +1 as v is older than, equal to or newer than o.
func (v Version) Compare(o Version) int {
	switch {
	case v.Major != o.Major:
		if v.Major < o.Major {
			return -1
		}
		return 1
	case v.Minor < o.Minor:
		return -1
	case v.Minor > o.Minor:
		return 1
	}
	return 0
}

// AtLeast reports whether v is o or newer.
func (v Version) AtLeast(o Version) bool { return v.Compare(o) >= 0 }

// Before reports whether v is older than o.
func (v Version) Before(o Version) bool { return v.Compare(o) < 0 }
