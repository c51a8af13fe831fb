package framework

import (
	"os"
	"strings"
	"testing"
)

// DumpTail logs the last n lines of a file.
func DumpTail(t *testing.T, path string, n int) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Logf("--- %s: %v", path, err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("--- last %d lines of %s\n%s", len(lines), path, strings.Join(lines, "\n"))
}

// TestWriter sends a writer's lines to the test log.
type TestWriter struct{ T *testing.T }

func (w TestWriter) Write(p []byte) (int, error) {
	w.T.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
