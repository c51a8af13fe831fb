package operator

import (
	"errors"
	"os"
	"testing"
)

func TestApplyMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     string
		files   map[string]string
		want    int64
		wantSet bool
	}{
		{name: "cgroup v2 limit", files: map[string]string{"/sys/fs/cgroup/memory.max": "268435456\n"}, want: 241591910, wantSet: true},
		{name: "cgroup v1 limit", files: map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "1000\n"}, want: 900, wantSet: true},
		{name: "v2 without limit", files: map[string]string{"/sys/fs/cgroup/memory.max": "max\n", "/sys/fs/cgroup/memory/memory.limit_in_bytes": "1000"}},
		{name: "v1 without limit", files: map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712"}},
		{name: "no cgroup files"},
		{name: "GOMEMLIMIT wins", env: "100MiB", files: map[string]string{"/sys/fs/cgroup/memory.max": "268435456"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set int64 = -1
			got := applyMemoryLimit(
				func(k string) string {
					if k == "GOMEMLIMIT" {
						return tc.env
					}
					return ""
				},
				func(f string) ([]byte, error) {
					if v, ok := tc.files[f]; ok {
						return []byte(v), nil
					}
					return nil, errors.Join(os.ErrNotExist)
				},
				func(v int64) int64 { set = v; return 0 })
			if got != tc.want || (tc.wantSet && set != tc.want) {
				t.Errorf("applyMemoryLimit = %d (set %d), want %d", got, set, tc.want)
			}
			if !tc.wantSet && set != -1 {
				t.Errorf("limit set to %d, want untouched", set)
			}
		})
	}
}

// With no memory setting at all the collector's target is lowered; any
// setting (GOGC, GOMEMLIMIT, a container limit) leaves it alone.
func TestApplyGCDefault(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		limit int64
		want  int
	}{
		{name: "nothing set", want: defaultGCPercent},
		{name: "GOGC set", env: map[string]string{"GOGC": "100"}},
		{name: "GOGC off", env: map[string]string{"GOGC": "off"}},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "100MiB"}},
		{name: "container limit", limit: 1 << 28},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := -1
			got := applyGCDefault(func(k string) string { return tc.env[k] }, tc.limit, func(v int) int { set = v; return 100 })
			if got != tc.want || (tc.want != 0 && set != tc.want) || (tc.want == 0 && set != -1) {
				t.Errorf("applyGCDefault = %d (set %d), want %d", got, set, tc.want)
			}
		})
	}
}
