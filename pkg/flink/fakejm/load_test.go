package fakejm_test

import (
	"encoding/json"
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

func TestSetVertexLoad(t *testing.T) {
	jm := fakejm.New(fakejm.Options{Version: flink.V1_20})
	defer jm.Close()
	job := jm.MustAddJob(fakejm.JobSpec{Parallelism: 4})
	src, sink := fakejm.VertexID(0), fakejm.VertexID(1)
	if err := jm.SetVertexLoad(job, src, fakejm.VertexLoad{BusyTimeMsPerSecond: 500, RecordsInPerSecond: 400, RecordsOutPerSecond: 400, PendingRecords: 8000}); err != nil {
		t.Fatal(err)
	}
	if err := jm.SetVertexLoad(job, sink, fakejm.VertexLoad{BusyTimeMsPerSecond: 900, RecordsInPerSecond: 400, PendingRecords: -1}); err != nil {
		t.Fatal(err)
	}
	get := func(vertex, query string) map[string]map[string]any {
		_, body := httpDo(t, "GET", jm.URL()+"/jobs/"+job+"/vertices/"+vertex+"/subtasks/metrics"+query, "", nil)
		var ms []map[string]any
		if err := json.Unmarshal(body, &ms); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		out := map[string]map[string]any{}
		for _, m := range ms {
			out[m["id"].(string)] = m
		}
		return out
	}
	op := fakejm.MetricScopeName("Source: fake-source")
	if op != "Source__fake-source" {
		t.Errorf("scope name %q", op)
	}
	m := get(src, "?get=busyTimeMsPerSecond,numRecordsInPerSecond,"+op+".pendingRecords,"+op+".numRecordsOutPerSecond&agg=sum,max")
	if m["busyTimeMsPerSecond"]["max"] != 500.0 || m["numRecordsInPerSecond"]["sum"] != 0.0 ||
		m[op+".pendingRecords"]["sum"] != 8000.0 || m[op+".numRecordsOutPerSecond"]["sum"] != 400.0 {
		t.Errorf("source %v", m)
	}
	if m := get(sink, ""); m["busyTimeMsPerSecond"] == nil || len(m) != 5 {
		t.Errorf("sink names %v", m)
	}
	if err := jm.SetVertexLoad(job, fakejm.VertexID(5), fakejm.VertexLoad{}); err == nil {
		t.Error("unknown vertex accepted")
	}
}
