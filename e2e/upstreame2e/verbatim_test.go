package upstreame2e

import (
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sourcesRow is a row of testdata/SOURCES.md's table: file, git blob.
var sourcesRow = regexp.MustCompile("(?m)^\\| `e2e-tests/([^`]+)` \\| `([0-9a-f]{40})` \\|$")

// notVerbatim lists what is wrong unless every file sources
// (testdata/SOURCES.md) lists under e2e-tests/ is in dir, upstream's
// e2e-tests directory the user points the harness at, with the git blob id
// recorded (upstream's file at the release's commit): the scripts and
// their data are run as upstream's, never edited. This repository keeps
// none of them: they are upstream's code (see SOURCES.md).
func notVerbatim(sources, dir string) []error {
	table, err := os.ReadFile(sources)
	if err != nil {
		return []error{err}
	}
	rows := sourcesRow.FindAllStringSubmatch(string(table), -1)
	if len(rows) == 0 {
		return []error{fmt.Errorf("%s lists no files", sources)}
	}
	var errs []error
	for _, m := range rows {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(m[1])))
		if err != nil {
			errs = append(errs, fmt.Errorf("upstream's e2e-tests/%s: %w", m[1], err))
			continue
		}
		if got := gitBlobID(data); got != m[2] {
			errs = append(errs, fmt.Errorf("%s is not upstream's release file (blob %s, %s records %s): the harness adapts in the harness, never in the scripts or their data",
				filepath.Join(dir, m[1]), got, filepath.Base(sources), m[2]))
		}
	}
	return errs
}

// gitBlobID is `git hash-object` of data.
func gitBlobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestCheckVerbatim needs no cluster and no upstream files: a directory
// written here passes when it holds the listed files with the recorded
// blobs, and fails on an edited or a missing one.
func TestCheckVerbatim(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"utils.sh": "#!/bin/bash\necho utils\n", "data/cr.yaml": "kind: FlinkDeployment\n"}
	var table strings.Builder
	table.WriteString("| file | git blob at that commit |\n| --- | --- |\n")
	for name, text := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&table, "| `e2e-tests/%s` | `%s` |\n", name, gitBlobID([]byte(text)))
	}
	sources := filepath.Join(t.TempDir(), "SOURCES.md")
	if err := os.WriteFile(sources, []byte(table.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// git hash-object of "hello\n", as git computes it.
	if got := gitBlobID([]byte("hello\n")); got != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Fatalf("gitBlobID(hello) = %s", got)
	}
	if errs := notVerbatim(sources, dir); len(errs) != 0 {
		t.Fatalf("the files as listed: %v", errs)
	}
	for name, edit := range map[string]func(string) error{
		"edited":  func(p string) error { return os.WriteFile(p, []byte("#!/bin/bash\necho edited\n"), 0o644) },
		"missing": os.Remove,
	} {
		if err := os.WriteFile(filepath.Join(dir, "utils.sh"), []byte(files["utils.sh"]), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := edit(filepath.Join(dir, "utils.sh")); err != nil {
			t.Fatal(err)
		}
		if errs := notVerbatim(sources, dir); len(errs) != 1 || !strings.Contains(errs[0].Error(), "utils.sh") {
			t.Errorf("%s utils.sh: %v, want one error naming it", name, errs)
		}
	}
}
