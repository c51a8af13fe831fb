package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSavepointAndCheckpointDir(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		wantSP   string
		wantSPOK bool
		wantCP   string
		wantCPOK bool
	}{
		{"none", Config{}, "", false, "", false},
		{"blank counts as unset", Config{FlinkSavepointDir: " ", FlinkCheckpointDir: ""}, "", false, "", false},
		{"blank new name falls back to old", Config{FlinkSavepointDir: "", FlinkSavepointDirDeprecated: "s3://old"}, "s3://old", true, "", false},
		{"Flink 1.20 names", Config{FlinkSavepointDir: "s3://sp", FlinkCheckpointDir: "s3://cp"}, "s3://sp", true, "s3://cp", true},
		{"pre-1.20 names", Config{FlinkSavepointDirDeprecated: "s3://sp", FlinkCheckpointDirDeprecated: "s3://cp"}, "s3://sp", true, "s3://cp", true},
		{"oldest savepoint name", Config{FlinkSavepointDirLegacy: "s3://legacy"}, "s3://legacy", true, "", false},
		{"new beats old in one map", Config{FlinkCheckpointDir: "s3://new", FlinkCheckpointDirDeprecated: "s3://old"}, "", false, "s3://new", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := SavepointDir(tt.cfg); got != tt.wantSP || ok != tt.wantSPOK {
				t.Errorf("SavepointDir = %q, %v; want %q, %v", got, ok, tt.wantSP, tt.wantSPOK)
			}
			if got, ok := CheckpointDir(tt.cfg); got != tt.wantCP || ok != tt.wantCPOK {
				t.Errorf("CheckpointDir = %q, %v; want %q, %v", got, ok, tt.wantCP, tt.wantCPOK)
			}
		})
	}
}

func TestSnapshotTimeout(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		want    time.Duration
		wantErr bool
	}{
		{"nothing set: Flink's 10 min + 1 min", Config{}, 11 * time.Minute, false},
		{"derived from the checkpoint timeout", Config{FlinkCheckpointTimeout: "30 min"}, 31 * time.Minute, false},
		{"explicit wins", Config{KeySnapshotTimeout: "5 min", FlinkCheckpointTimeout: "30 min"}, 5 * time.Minute, false},
		{"blank explicit is derived", Config{KeySnapshotTimeout: " "}, 11 * time.Minute, false},
		{"invalid explicit", Config{KeySnapshotTimeout: "long"}, 0, true},
		{"invalid checkpoint timeout", Config{FlinkCheckpointTimeout: "long"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SnapshotTimeout(tt.cfg)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("SnapshotTimeout = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSavepointHistoryLimits(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantCount int
		wantAge   time.Duration
	}{
		{"defaults", Config{}, 10, 24 * time.Hour},
		{"per job", Config{KeySavepointHistoryMaxCount: "3", KeySavepointHistoryMaxAge: "2 h"}, 3, 2 * time.Hour},
		{"threshold caps", Config{KeySavepointHistoryMaxCount: "30", KeySavepointHistoryMaxCountThreshold: "5",
			KeySavepointHistoryMaxAge: "7 d", KeySavepointHistoryMaxAgeThreshold: "48 h"}, 5, 48 * time.Hour},
		{"threshold above value", Config{KeySavepointHistoryMaxCountThreshold: "50", KeySavepointHistoryMaxAgeThreshold: "30 d"}, 10, 24 * time.Hour},
		{"count never below 1", Config{KeySavepointHistoryMaxCount: "0"}, 1, 24 * time.Hour},
		{"threshold 0 still keeps 1", Config{KeySavepointHistoryMaxCountThreshold: "0"}, 1, 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n, err := SavepointHistoryMaxCount(tt.cfg); err != nil || n != tt.wantCount {
				t.Errorf("max count = %v, %v; want %v", n, err, tt.wantCount)
			}
			if d, err := SavepointHistoryMaxAge(tt.cfg); err != nil || d != tt.wantAge {
				t.Errorf("max age = %v, %v; want %v", d, err, tt.wantAge)
			}
		})
	}
	if _, err := SavepointHistoryMaxCount(Config{KeySavepointHistoryMaxCountThreshold: "x"}); err == nil {
		t.Errorf("invalid threshold should be an error")
	}
	if _, err := SavepointHistoryMaxAge(Config{KeySavepointHistoryMaxAgeThreshold: "x"}); err == nil {
		t.Errorf("invalid age threshold should be an error")
	}
}

func TestCheckpointHistoryMaxCount(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want int
	}{
		{"Flink default", Config{}, 1},
		{"new name", Config{FlinkCheckpointsNumRetained: "3"}, 3},
		{"old name", Config{FlinkCheckpointsNumRetainedDeprecated: "4"}, 4},
		{"new beats old", Config{FlinkCheckpointsNumRetained: "3", FlinkCheckpointsNumRetainedDeprecated: "4"}, 3},
		{"never below 1", Config{FlinkCheckpointsNumRetained: "0"}, 1},
	}
	for _, tt := range tests {
		if got, err := CheckpointHistoryMaxCount(tt.cfg); err != nil || got != tt.want {
			t.Errorf("%s: got %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

func TestWatchedNamespaces(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"JOSDK_ALL_NAMESPACES", nil},
		{"a,JOSDK_ALL_NAMESPACES", nil},
		{"team-a", []string{"team-a"}},
		{"team-a, team-b", []string{"team-a", "team-b"}},
		{"[team-a, team-b]", []string{"team-a", "team-b"}},
	}
	for _, tt := range tests {
		got := WatchedNamespaces(Config{KeyWatchedNamespaces: tt.in})
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("WatchedNamespaces(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
