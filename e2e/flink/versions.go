package flink

import (
	_ "embed"
	"fmt"
	"strings"
)

//go:embed versions.txt
var versionsTxt string

// pinnedVersion is one line of versions.txt.
type pinnedVersion struct {
	Version string // e.g. "1.20.5"
	Profile string // Maven profile of testjob/pom.xml, e.g. "flink-1.20"
}

func pinned() []pinnedVersion {
	var out []pinnedVersion
	for _, line := range strings.Split(versionsTxt, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			panic(fmt.Sprintf("e2e/flink/versions.txt: bad line %q", line))
		}
		out = append(out, pinnedVersion{Version: f[0], Profile: f[1]})
	}
	return out
}

// Versions are the pinned Flink versions, oldest first, e.g. ["1.20.5" "2.3.0"].
func Versions() []string {
	var out []string
	for _, p := range pinned() {
		out = append(out, p.Version)
	}
	return out
}

// VersionFor maps a Flink version as a FlinkDeployment spells it ("v1_20"), or as
// "1.20" or "1.20.5", to the pinned version of the same major.minor line. It fails
// for lines that are not pinned.
func VersionFor(v string) (string, error) {
	norm := strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(v), "v"), "_", ".")
	for _, p := range pinned() {
		if norm == p.Version || norm == majorMinor(p.Version) {
			return p.Version, nil
		}
	}
	return "", fmt.Errorf("flink version %q is not pinned for local runs (pinned: %s)", v, strings.Join(Versions(), ", "))
}

func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// atLeast reports whether version v (e.g. "1.20.5") is at least major.minor.
func atLeast(v string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(v, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// ConfigFileName is the configuration file the given Flink version reads:
// "config.yaml" from 1.19 on (standard YAML), "flink-conf.yaml" before.
//
// 1.19 and 1.20 still prefer a flink-conf.yaml when one exists; 2.x reads only
// config.yaml.
func ConfigFileName(version string) string {
	if atLeast(version, 1, 19) {
		return "config.yaml"
	}
	return "flink-conf.yaml"
}
