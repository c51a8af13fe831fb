package snapshot

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// recordedRuns are, by upstream release (1.15.0 and 1.10.0 at least), a
// running native application with a savepoint and a checkpoint
// FlinkStateSnapshot that upstream's operator took, recorded from real
// runs (the deployment controller's testdata/upstream-<release>;
// SOURCES.md there says how).
func recordedRuns(t *testing.T) map[string]string {
	return controllertest.RecordedUpstream(t, "../deployment/testdata", "native-running-with-snapshots")
}

// TestTakeOverRecordedSnapshots: upstream's COMPLETED snapshots, with its
// names and labels, are taken over as they are: syncs write no status and
// no label (the first drops upstream's finalizer, which a snapshot with
// nothing to dispose of does not keep here, and nothing is written after),
// trigger nothing and dispose of nothing, and they stay COMPLETED with
// upstream's paths; for every upstream release recorded (subtests by
// release).
func TestTakeOverRecordedSnapshots(t *testing.T) {
	recs := recordedRuns(t)
	for _, release := range slices.Sorted(maps.Keys(recs)) {
		t.Run(release, func(t *testing.T) { takeOverRecordedSnapshots(t, recs[release]) })
	}
}

func takeOverRecordedSnapshots(t *testing.T, recordedRun string) {
	f := newFixture(t)
	read := func(file string, into metav1.Object) {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(recordedRun, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			t.Fatal(err)
		}
		into.SetNamespace(ns)
		into.SetResourceVersion("")
	}
	dep := &v1beta1.FlinkDeployment{}
	read("flinkdeployment-run.yaml", dep)
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Create(f.Ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	opts := f.JobManagerOptions()
	opts.Version = flink.V1_20
	jm := f.StartJobManager(opts)
	jm.MustAddJob(fakejm.JobSpec{ID: dep.Status.JobStatus.JobID})
	f.jms[dep.Name], f.jobIDs[dep.Name] = jm, dep.Status.JobStatus.JobID
	var snaps []*v1beta1.FlinkStateSnapshot
	for _, file := range []string{"flinkstatesnapshot-run-savepoint.yaml", "flinkstatesnapshot-run-checkpoint.yaml"} {
		s := &v1beta1.FlinkStateSnapshot{}
		read(file, s)
		if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Create(f.Ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	f.Restart()
	for _, up := range snaps {
		for i := range 4 {
			when := up.Name + " sync " + strconv.Itoa(i+1)
			f.resetActions()
			jm.ResetRequests()
			f.MustSync(up.Name)
			if m, st := f.writes(); st != 0 || m > 0 && i > 0 {
				t.Fatalf("%s: %d metadata and %d status writes", when, m, st)
			}
			got := f.Get(up.Name)
			// Its finalizer goes (this operator keeps one only while a
			// snapshot has something to dispose of: disposeOnDelete false
			// here); upstream's labels stay as they are.
			if len(got.Finalizers) != 0 || !maps.Equal(got.Labels, up.Labels) {
				t.Fatalf("%s: finalizers %v, labels %v (upstream's %v)", when, got.Finalizers, got.Labels, up.Labels)
			}
			for _, r := range jm.Requests() {
				if r.Method != "GET" {
					t.Fatalf("%s: %s %s sent to the JobManager", when, r.Method, r.Path)
				}
			}
			if got.Status.State != v1beta1.SnapshotCompleted || got.Status.Path != up.Status.Path || got.Status.TriggerID != up.Status.TriggerID {
				t.Fatalf("%s: status %+v, upstream's %+v", when, got.Status, up.Status)
			}
		}
	}
}
