package cluster

import (
	"fmt"
	"strconv"
	"strings"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// Version is a Flink minor version, parsed from spec.flinkVersion ("v1_20").
type Version struct {
	Major, Minor int
}

// ParseVersion reads "v1_20" (the API's spelling) as 1.20. Any vMAJOR_MINOR is
// accepted so a newer enum value needs no change here; an empty or malformed
// value is an error because the config file's name depends on it.
func ParseVersion(v v1beta1.FlinkVersion) (Version, error) {
	s := string(v)
	rest, ok := strings.CutPrefix(s, "v")
	if !ok {
		return Version{}, fmt.Errorf("spec.flinkVersion %q: want vMAJOR_MINOR, e.g. v1_20", s)
	}
	majorS, minorS, ok := strings.Cut(rest, "_")
	major, err1 := strconv.Atoi(majorS)
	minor, err2 := strconv.Atoi(minorS)
	if !ok || err1 != nil || err2 != nil || major < 1 || minor < 0 {
		return Version{}, fmt.Errorf("spec.flinkVersion %q: want vMAJOR_MINOR, e.g. v1_20", s)
	}
	return Version{Major: major, Minor: minor}, nil
}

// AtLeast reports whether v is major.minor or newer.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// String renders "1.20".
func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// StandardYAML reports whether Flink reads config.yaml with a standard YAML
// parser: 1.19 and later (2.x reads nothing else). Older versions read
// flink-conf.yaml with the legacy line parser.
func (v Version) StandardYAML() bool { return v.AtLeast(1, 19) }

// ConfigFileName is the file Flink v reads: config.yaml from 1.19 on,
// flink-conf.yaml before.
func (v Version) ConfigFileName() string {
	if v.StandardYAML() {
		return ConfigYAMLFile
	}
	return LegacyConfigFile
}
