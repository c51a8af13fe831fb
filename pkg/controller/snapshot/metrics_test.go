package snapshot

import (
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/metrics"
	"github.com/flinkops/flink-operator/pkg/metrics/metricstest"
)

// samples is what a /metrics scrape shows now.
func samples(t *testing.T) map[string]float64 {
	t.Helper()
	s, err := metricstest.Samples(metrics.Registry)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// grew reports how much each series grew between two scrapes.
func grew(before, after map[string]float64, series ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range series {
		out[s] = after[s] - before[s]
	}
	return out
}

// The snapshot metrics move with what the status records: one failure count
// per recorded failure, one duration sample per completion (labelled by type
// and trigger type), one abandon per abandoned snapshot.
func TestSnapshotMetricsFollowTheStatus(t *testing.T) {
	failures := `flink_operator_snapshot_failures_total{namespace="` + ns + `",type="savepoint"}`
	abandoned := `flink_operator_snapshot_abandoned_total{namespace="` + ns + `",type="savepoint"}`
	completed := `flink_operator_snapshot_duration_seconds_count{trigger_type="MANUAL",type="savepoint"}`

	t.Run("failures", func(t *testing.T) {
		f := newFixture(t)
		jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
		jm.FailSavepoints(f.jobIDs["job"], "java.io.IOException: disk full")
		before := samples(t)
		f.Create(withBackoff(savepointSnap("sp", "job"), 2))
		for i := 0; f.Get("sp").Status.State != v1beta1.SnapshotFailed; i++ {
			if i == 10 {
				t.Fatalf("not FAILED after 10 polls: %+v", f.Get("sp").Status)
			}
			f.drivePoll("sp")
		}
		got := grew(before, samples(t), failures, completed, abandoned)
		if want := float64(f.Get("sp").Status.Failures); got[failures] != want || want != 3 {
			t.Errorf("failures counter grew by %v for %v recorded failures (want 3)", got[failures], want)
		}
		if got[completed] != 0 || got[abandoned] != 0 {
			t.Errorf("a failed savepoint moved the completion or abandon metrics: %v", got)
		}
	})

	t.Run("completion", func(t *testing.T) {
		f := newFixture(t)
		f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
		before := samples(t)
		f.Create(savepointSnap("sp", "job"))
		if s := f.drive("sp", 10); s.Status.State != v1beta1.SnapshotCompleted {
			t.Fatalf("not completed: %+v", s.Status)
		}
		got := grew(before, samples(t), failures, completed, abandoned)
		if got[completed] != 1 || got[failures] != 0 || got[abandoned] != 0 {
			t.Errorf("one completed manual savepoint: %v, want one duration sample and nothing else", got)
		}
	})

	t.Run("abandon", func(t *testing.T) {
		f := newFixture(t)
		f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
		f.setJobState("job", v1beta1.JobStatusCanceled)
		before := samples(t)
		f.Create(savepointSnap("sp", "job"))
		if s := f.drive("sp", 5); s.Status.State != v1beta1.SnapshotAbandoned {
			t.Fatalf("not abandoned: %+v", s.Status)
		}
		got := grew(before, samples(t), failures, completed, abandoned)
		if got[abandoned] != 1 || got[failures] != 0 || got[completed] != 0 {
			t.Errorf("one abandoned savepoint: %v, want one abandon and nothing else", got)
		}
	})
}
