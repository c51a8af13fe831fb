package operator

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestMetricsMuxServesProfilesOnlyWithProfiling(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		mux := metricsMux(profiling)
		for path, want := range map[string]int{
			"/metrics":                  http.StatusOK,
			"/debug/pprof/heap?debug=1": map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[profiling],
			"/debug/pprof/":             map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[profiling],
		} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != want {
				t.Errorf("profiling=%v: GET %s = %d, want %d", profiling, path, rec.Code, want)
			}
		}
	}
}
