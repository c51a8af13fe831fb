package fakejm_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/flink/internal/openapi"
)

// The job graph answers of a programmed graph match every version's spec;
// the subtask metrics answer is Flink's bare array, which the spec (an
// "object" without properties) does not describe, so it is checked by hand.
func TestGraphAnswersMatchSpec(t *testing.T) {
	for _, version := range openapi.Versions {
		t.Run(version, func(t *testing.T) {
			spec := loadSpec(t, version)
			v := flink.MustParseVersion(version)
			jm := fakejm.New(fakejm.Options{Version: v})
			defer jm.Close()
			sc := specCheck{t: t, spec: spec, base: jm.URL()}
			job := jm.MustAddJob(fakejm.JobSpec{Parallelism: 2})
			src, sink := fakejm.VertexID(0), fakejm.VertexID(1)
			if err := jm.SetJobGraph(job, fakejm.GraphSpec{Vertices: []fakejm.VertexSpec{
				{ID: src, Name: "Source: in", Parallelism: 3},
				{ID: sink, Name: "Sink: out", Inputs: []string{src}},
			}}); err != nil {
				t.Fatal(err)
			}
			if err := jm.SetVertexMetric(job, src, "busyTimeMsPerSecond", 250); err != nil {
				t.Fatal(err)
			}
			details := sc.call("GET", "/jobs/{jobid}", "/jobs/"+job, nil)
			if vs, _ := details["vertices"].([]any); len(vs) != 2 {
				t.Errorf("vertices %v", details["vertices"])
			}
			sc.call("GET", "/jobs/{jobid}/plan", "/jobs/"+job+"/plan", nil)
			vertex := sc.call("GET", "/jobs/{jobid}/vertices/{vertexid}", "/jobs/"+job+"/vertices/"+src, nil)
			if vertex["parallelism"] != 3.0 || vertex["maxParallelism"] != 128.0 {
				t.Errorf("vertex %v", vertex)
			}

			status, body := httpDo(t, "GET", jm.URL()+"/jobs/"+job+"/vertices/"+src+"/subtasks/metrics?get=busyTimeMsPerSecond", "", nil)
			var got []map[string]any
			if err := json.Unmarshal(body, &got); status != http.StatusOK || err != nil || len(got) != 1 {
				t.Fatalf("%d %s %v", status, body, err)
			}
			keys := []string{}
			for k := range got[0] {
				keys = append(keys, k)
			}
			wantKeys := 5 // id, min, max, sum, avg
			if v.SupportsSkewAggregation() {
				wantKeys++
			}
			if len(keys) != wantKeys || got[0]["sum"] != 750.0 {
				t.Errorf("aggregates %v", got[0])
			}
			status, body = httpDo(t, "GET", jm.URL()+"/jobs/"+job+"/vertices/"+src+"/subtasks/metrics?get=busyTimeMsPerSecond&agg=skew", "", nil)
			if v.SupportsSkewAggregation() != (status == http.StatusOK) {
				t.Errorf("agg=skew: %d %s", status, body)
			}
			if status != http.StatusOK && !strings.Contains(string(body), "agg") {
				t.Errorf("agg=skew error %s", body)
			}
		})
	}
}
