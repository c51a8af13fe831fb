package config

import (
	"os"
	"strings"
	"testing"
)

// checkGeneratedBlock keeps the text between <!-- name:begin --> and
// <!-- name:end --> in a doc equal to want, so the documentation cannot
// drift from the code. With UPDATE_DOCS set it rewrites the block instead.
func checkGeneratedBlock(t *testing.T, path, name, want string) {
	t.Helper()
	begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q markers", path, strings.TrimSpace(begin), end)
	}
	got := strings.TrimSpace(doc[i+len(begin) : j])
	want = strings.TrimSpace(want)
	if got == want {
		return
	}
	if os.Getenv("UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+"\n"+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the %s block in %s is not what the code generates; regenerate it with UPDATE_DOCS=1 go test ./pkg/config -run %s", name, path, t.Name())
}

// TestOperationsDocListsEveryKey keeps the configuration table in
// docs/operations.md equal to DocTable(), and the list of upstream keys not
// registered here equal to GapTable(). Regenerate them with
//
//	UPDATE_DOCS=1 go test ./pkg/config -run TestOperationsDocListsEveryKey
func TestOperationsDocListsEveryKey(t *testing.T) {
	checkGeneratedBlock(t, "../../docs/operations.md", "config-table", DocTable())
	checkGeneratedBlock(t, "../../docs/operations.md", "upstream-gaps", GapTable())
}

// TestCompatibilityDocListsUpstreamKeys keeps the table of upstream's
// configuration keys in docs/compatibility.md equal to ParityTable().
// Regenerate it with
//
//	UPDATE_DOCS=1 go test ./pkg/config -run TestCompatibilityDocListsUpstreamKeys
func TestCompatibilityDocListsUpstreamKeys(t *testing.T) {
	checkGeneratedBlock(t, "../../docs/compatibility.md", "upstream-keys", ParityTable())
}
