package controllertest

import (
	"path/filepath"
	"strings"
	"testing"
)

// RecordedUpstream are the recordings of what upstream's operator left on a
// cluster (pkg/controller/deployment/testdata/upstream-<release>, from real
// runs; SOURCES.md there says how), by release, each joined with scenario
// ("" for the recording itself). testdata is the deployment controller's
// testdata directory as the calling test sees it. Releases 1.15.0 and
// 1.10.0 (the oldest whose CRDs this project accepts) must be there.
func RecordedUpstream(t testing.TB, testdata, scenario string) map[string]string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(testdata, "upstream-*"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range dirs {
		out[strings.TrimPrefix(filepath.Base(d), "upstream-")] = filepath.Join(d, scenario)
	}
	for _, want := range []string{"1.15.0", "1.10.0"} {
		if out[want] == "" {
			t.Fatalf("no recording of upstream %s in %s (%v)", want, testdata, dirs)
		}
	}
	return out
}
