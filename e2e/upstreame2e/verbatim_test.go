package upstreame2e

import (
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// sourcesRow is a row of testdata/SOURCES.md's table: file, git blob.
var sourcesRow = regexp.MustCompile("(?m)^\\| `(e2e-tests/[^`]+)` \\| `([0-9a-f]{40})` \\|$")

// checkVerbatim fails t unless every file SOURCES.md lists under
// testdata/e2e-tests has the git blob id it records (upstream's file at
// the recorded commit), and nothing else is there: the scripts and their
// data are run as upstream's, never edited.
func checkVerbatim(t *testing.T, testdata string) {
	t.Helper()
	sources, err := os.ReadFile(filepath.Join(testdata, "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range sourcesRow.FindAllStringSubmatch(string(sources), -1) {
		listed[m[1]] = true
		data, err := os.ReadFile(filepath.Join(testdata, m[1]))
		if err != nil {
			t.Fatal(err)
		}
		if got := gitBlobID(data); got != m[2] {
			t.Errorf("%s is not upstream's (blob %s, SOURCES.md records %s): the harness adapts in the harness, never in the scripts or their data", m[1], got, m[2])
		}
	}
	if len(listed) == 0 {
		t.Fatal("SOURCES.md lists no files")
	}
	err = filepath.WalkDir(filepath.Join(testdata, "e2e-tests"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(testdata, p)
		if err != nil {
			return err
		}
		if !listed[filepath.ToSlash(rel)] {
			t.Errorf("%s is not listed in SOURCES.md", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// gitBlobID is `git hash-object` of data.
func gitBlobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestCopiesAreVerbatim needs no cluster.
func TestCopiesAreVerbatim(t *testing.T) {
	checkVerbatim(t, "testdata")
}
