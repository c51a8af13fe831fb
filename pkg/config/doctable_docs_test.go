package config

import (
	"os"
	"strings"
	"testing"
)

// TestOperationsDocListsEveryKey keeps the configuration table in
// docs/operations.md equal to DocTable(), so the documentation cannot drift
// from the registry. Regenerate it with
//
//	UPDATE_DOCS=1 go test ./pkg/config -run TestOperationsDocListsEveryKey
func TestOperationsDocListsEveryKey(t *testing.T) {
	const path = "../../docs/operations.md"
	const begin, end = "<!-- config-table:begin -->\n", "<!-- config-table:end -->"
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
	want := strings.TrimSpace(DocTable())
	if got == want {
		return
	}
	if os.Getenv("UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+"\n"+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the configuration table in %s differs from config.DocTable(); regenerate it with UPDATE_DOCS=1 go test ./pkg/config -run %s", path, t.Name())
}
