package helmchart

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// RepoRoot is the repository's root: tests run in pkg/helmchart.
func RepoRoot() string { return filepath.Join("..", "..") }

var (
	chartDir = filepath.Join(RepoRoot(), "helm", "flink-operator")
	// upstreamKeys lists the key paths of upstream 1.15.0's values.yaml (see its SOURCES.md); the
	// file itself is not kept.
	upstreamKeys = filepath.Join("testdata", "upstream-1.15.0", "keys.txt")
)

// additions are the chart's keys upstream's chart does not have. A new one must be added here and
// to docs/install.md.
var additions = []string{
	"operatorHealth.readinessProbe",
	"rbac.leaseName",
}

func chartKeyPaths(t *testing.T) []string {
	t.Helper()
	ours, err := ReadValues(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return KeyPaths(ours)
}

func upstreamKeyList(t *testing.T) KeyList {
	t.Helper()
	k, err := ReadKeyList(upstreamKeys)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// upstreamKeyPaths are the key paths of upstream's values.yaml (what KeyPaths yields from it).
func upstreamKeyPaths(t *testing.T) []string {
	t.Helper()
	return upstreamKeyList(t).Parsed
}

// upstreamCommented are keys upstream's values.yaml documents in comments only (so they are not in
// its parsed tree) and that its templates read; the chart honours them and the docs name them.
func upstreamCommented(t *testing.T) []string {
	t.Helper()
	return upstreamKeyList(t).CommentOnly
}

func TestChartValuesHaveEveryUpstreamKey(t *testing.T) {
	up, ours := upstreamKeyPaths(t), chartKeyPaths(t)
	if len(up) < 60 {
		t.Fatalf("only %d key paths in %s: upstream's values.yaml has 72", len(up), upstreamKeys)
	}
	if missing := Missing(up, ours); len(missing) > 0 {
		t.Errorf("helm/flink-operator/values.yaml lacks %d key(s) of upstream's values.yaml (%s): %v", len(missing), upstreamKeys, missing)
	}
	t.Logf("%d upstream key paths", len(up))
}

func TestChartAdditionsAreListed(t *testing.T) {
	up, ours := upstreamKeyPaths(t), chartKeyPaths(t)
	extra := Missing(ours, up)
	slices.Sort(extra)
	want := slices.Clone(additions)
	slices.Sort(want)
	if !slices.Equal(extra, want) {
		t.Errorf("the chart's keys that upstream's values.yaml lacks are\n  %v\nbut additions lists\n  %v\n(add a new key to additions and to docs/install.md)", extra, want)
	}
}

// upstreamValuesTable returns the section of docs/install.md with the table of upstream's values.
func upstreamValuesTable(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "\n### Upstream values")
	if start < 0 {
		t.Fatal(`docs/install.md has no "### Upstream values" section`)
	}
	section := doc[start+1:]
	if end := regexp.MustCompile(`\n#{2,3} `).FindStringIndex(section[1:]); end != nil {
		section = section[:end[0]+1]
	}
	return section
}

func TestDocsNameEveryUpstreamKey(t *testing.T) {
	table := upstreamValuesTable(t)
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)`").FindAllStringSubmatch(table, -1) {
		named[m[1]] = true
	}
	want := append(upstreamKeyPaths(t), upstreamCommented(t)...)
	want = append(want, additions...)
	var missing []string
	for _, k := range want {
		if !named[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/install.md's upstream values table has no row for %d key(s): %v", len(missing), missing)
	}
	// Every row names a key of the chart (no stale rows).
	all := append(chartKeyPaths(t), upstreamCommented(t)...)
	for k := range named {
		if len(Missing([]string{k}, all)) > 0 {
			t.Errorf("docs/install.md's upstream values table names %q, which is not a key of the chart", k)
		}
	}
	status := map[string]int{}
	for _, m := range regexp.MustCompile("(?m)^\\| `[^`]+` \\| ([a-z ]+) \\|").FindAllStringSubmatch(table, -1) {
		s := strings.TrimSpace(m[1])
		switch s {
		case "implemented", "different", "not used", "added":
			status[s]++
		default:
			t.Errorf("docs/install.md's upstream values table: status %q is none of implemented, different, not used, added", s)
		}
	}
	t.Logf("%d rows: %v", len(named), status)
}
