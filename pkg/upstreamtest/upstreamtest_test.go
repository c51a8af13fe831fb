package upstreamtest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

// TestCRDsMatchTheirRecordedChecksums guards against an edited copy: the
// CRDs are compared with ours field by field, so they must stay upstream's.
func TestCRDsMatchTheirRecordedChecksums(t *testing.T) {
	notes, err := ReadFile("crds/SOURCES.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([^`]+\\.yml)` \\|.*\\| ([0-9a-f]{64}) \\|$")
	checked := 0
	scanner := bufio.NewScanner(bytes.NewReader(notes))
	for scanner.Scan() {
		m := row.FindStringSubmatch(scanner.Text())
		if m == nil {
			continue
		}
		data, err := ReadFile("crds/" + m[1])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != m[2] {
			t.Errorf("%s: sha256 %s, SOURCES.md records %s", m[1], got, m[2])
		}
		checked++
	}
	if checked != 5 {
		t.Errorf("checked %d CRDs, want the 5 SOURCES.md lists", checked)
	}
}

func TestEveryFolderSaysWhereItCameFrom(t *testing.T) {
	for _, dir := range []string{"crds", "examples", "config", "flink-rest"} {
		notes, err := ReadFile(dir + "/SOURCES.md")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(notes), "License") {
			t.Errorf("%s/SOURCES.md names no license", dir)
		}
	}
	if _, err := Glob("examples", "*.yaml"); err != nil {
		t.Error(err)
	}
	if _, err := Glob("nothing-here", "*.yaml"); err == nil {
		t.Error("Glob of an empty folder succeeded; tests could pass on no input")
	}
}
