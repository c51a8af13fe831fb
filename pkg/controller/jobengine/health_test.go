package jobengine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/config"
)

var h0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func observe(t *testing.T, cfg config.Config, info map[string]string, at time.Duration, restarts, checkpoints int64) HealthResult {
	t.Helper()
	h, err := EvaluateHealth(cfg, info, HealthObservation{Now: h0.Add(at), NumRestarts: restarts, NumCompletedCheckpoints: checkpoints})
	if err != nil {
		t.Fatal(err)
	}
	return h.HealthResult
}

// The restart count is measured in the window (upstream's
// ClusterHealthEvaluator): the first observation only starts the record,
// more restarts than the threshold within the window are unhealthy, and
// observations further apart than the window are scaled down to it.
func TestEvaluateRestarts(t *testing.T) {
	cfg := config.Config{
		config.KeyClusterHealthCheckRestartsThreshold: "4",
		config.KeyClusterHealthCheckRestartsWindow:    "2 min",
	}
	info := map[string]string{}
	if r := observe(t, cfg, info, 0, 100, 0); !r.Healthy {
		t.Fatalf("first observation unhealthy: %+v", r)
	}
	if r := observe(t, cfg, info, 30*time.Second, 104, 0); !r.Healthy {
		t.Errorf("4 restarts (the threshold) unhealthy: %+v", r)
	}
	if r := observe(t, cfg, info, 60*time.Second, 105, 0); r.Healthy || r.Error != "Restart count hit threshold: 4" {
		t.Errorf("5 restarts in the window: %+v", r)
	}
	// 3 min after the window's start: 5 restarts scale to 3 per 2 min, and
	// the window moves on (counted from 105 now).
	if r := observe(t, cfg, info, 3*time.Minute, 105, 0); !r.Healthy {
		t.Errorf("5 restarts over 3 min: %+v", r)
	}
	if r := observe(t, cfg, info, 3*time.Minute+10*time.Second, 107, 0); !r.Healthy {
		t.Errorf("2 restarts in the new window: %+v", r)
	}
	// A new job: its counter starts again, healthy.
	if r := observe(t, cfg, info, 4*time.Minute, 0, 0); !r.Healthy {
		t.Errorf("after the counter reset: %+v", r)
	}

	// Observations 8 min apart: 12 restarts scale to 3 per 2 min.
	info = map[string]string{}
	observe(t, cfg, info, 0, 0, 0)
	if r := observe(t, cfg, info, 8*time.Minute, 12, 0); !r.Healthy {
		t.Errorf("12 restarts over 8 min, threshold 4 per 2 min: %+v", r)
	}
	info = map[string]string{}
	observe(t, cfg, info, 0, 0, 0)
	if r := observe(t, cfg, info, 8*time.Minute, 20, 0); r.Healthy {
		t.Errorf("20 restarts over 8 min (5 per 2 min), threshold 4: %+v", r)
	}
}

// Checkpoint progress: with checkpointing on, no completed checkpoint in
// max(interval, timeout) × (tolerable failures + 2) is unhealthy; an
// explicit window shorter than that is raised to it; without checkpointing
// and without a window there is no check.
func TestEvaluateCheckpointProgress(t *testing.T) {
	cfg := config.Config{
		"execution.checkpointing.interval": "10 s",
		config.FlinkCheckpointTimeout:      "30 s",
	}
	// Window 60 s (30 s × 2).
	info := map[string]string{}
	observe(t, cfg, info, 0, 0, 3)
	if r := observe(t, cfg, info, 50*time.Second, 0, 3); !r.Healthy {
		t.Errorf("no checkpoint for 50 s of 60: %+v", r)
	}
	if r := observe(t, cfg, info, 70*time.Second, 0, 3); r.Healthy || r.Error != "Cluster is not able to complete checkpoints" {
		t.Errorf("no checkpoint for 70 s: %+v", r)
	}
	if r := observe(t, cfg, info, 80*time.Second, 0, 4); !r.Healthy {
		t.Errorf("a checkpoint completed: %+v", r)
	}

	cfg[config.KeyClusterHealthCheckCheckpointProgressWindow] = "10 s" // raised to 60 s
	info = map[string]string{}
	observe(t, cfg, info, 0, 0, 0)
	if r := observe(t, cfg, info, 50*time.Second, 0, 0); !r.Healthy {
		t.Errorf("window below the minimum not raised: %+v", r)
	}
	cfg[config.KeyClusterHealthCheckCheckpointProgressWindow] = "5 min"
	if r := observe(t, cfg, info, 4*time.Minute, 0, 0); !r.Healthy {
		t.Errorf("explicit 5 min window: %+v", r)
	}

	cfg[config.KeyClusterHealthCheckCheckpointProgressEnabled] = "false"
	if r := observe(t, cfg, info, 20*time.Minute, 0, 0); !r.Healthy {
		t.Errorf("checkpoint progress check disabled: %+v", r)
	}

	// Checkpointing off, no window: no check.
	info = map[string]string{}
	off := config.Config{}
	observe(t, off, info, 0, 0, 0)
	if r := observe(t, off, info, time.Hour, 0, 0); !r.Healthy {
		t.Errorf("without checkpointing: %+v", r)
	}
	// Both checks fail: both errors, joined as upstream.
	both := config.Config{"execution.checkpointing.interval": "10 s", config.FlinkCheckpointTimeout: "10 s",
		config.KeyClusterHealthCheckRestartsThreshold: "0"}
	info = map[string]string{}
	observe(t, both, info, 0, 0, 0)
	if r := observe(t, both, info, time.Minute, 1, 0); r.Error != "Restart count hit threshold: 0|Cluster is not able to complete checkpoints" {
		t.Errorf("joined errors: %+v", r)
	}
}

// The record is upstream's JSON under upstream's key, read both ways.
func TestClusterHealthInfoUpstreamJSON(t *testing.T) {
	upstream := `{"timeStamp":1700000060000,"numRestarts":3,"numRestartsEvaluationTimeStamp":1700000000000,` +
		`"numCompletedCheckpoints":7,"numCompletedCheckpointsIncreasedTimeStamp":1700000030000,"healthResult":{"healthy":false,"error":"Restart count hit threshold: 2"}}`
	info := map[string]string{"ClusterHealthInfo": upstream}
	h := HealthInfo(info)
	if h == nil || h.NumRestarts != 3 || h.NumCompletedCheckpoints != 7 || h.HealthResult.Healthy || h.HealthResult.Error != "Restart count hit threshold: 2" ||
		h.NumRestartsEvaluationTimeStamp != 1700000000000 || h.NumCompletedCheckpointsIncreasedTimeStamp != 1700000030000 {
		t.Fatalf("read %+v", h)
	}
	setHealthInfo(info, h)
	var a, b map[string]any
	if err := json.Unmarshal([]byte(upstream), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(info[ClusterHealthInfoKey]), &b); err != nil {
		t.Fatal(err)
	}
	if ja, _ := json.Marshal(a); string(ja) != func() string { jb, _ := json.Marshal(b); return string(jb) }() {
		t.Errorf("written %s, upstream %s", info[ClusterHealthInfoKey], upstream)
	}
	// Upstream's healthy result has "error": null.
	if h := HealthInfo(map[string]string{"ClusterHealthInfo": `{"timeStamp":1,"healthResult":{"healthy":true,"error":null}}`}); h == nil || !h.HealthResult.Healthy {
		t.Errorf("null error: %+v", h)
	}
	if HealthInfo(map[string]string{"ClusterHealthInfo": "{"}) != nil {
		t.Errorf("a broken record is not ignored")
	}
}
