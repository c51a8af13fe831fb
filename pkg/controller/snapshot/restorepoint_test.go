package snapshot

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Issue 20 item 9: a savepoint named by spec.job.initialSavepointPath of a
// job that has not been deployed yet (no job id) is what that job will start
// from, so deleting its snapshot never disposes of it, even with
// disposeOnDelete. Once the job has been deployed, initialSavepointPath is
// history (the restore point is status.jobStatus.upgradeSavepointPath) and
// the savepoint is disposed as asked. Both kinds of job, both ways. (A
// kept one's disposal waits for the job's deletion, bounded: handover.go.)
func TestInitialSavepointPathOfUndeployedJobNeverDisposed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kind     v1beta1.JobReferenceKind
		deployed bool
	}{
		{"FlinkDeployment not yet deployed: kept", v1beta1.JobReferenceKindDeployment, false},
		{"FlinkDeployment deployed: disposed", v1beta1.JobReferenceKindDeployment, true},
		{"FlinkSessionJob not yet deployed: kept", v1beta1.JobReferenceKindSessionJob, false},
		{"FlinkSessionJob deployed: disposed", v1beta1.JobReferenceKindSessionJob, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			// Real savepoint files to start from, taken from another job.
			f.Create(savepointSnap("source", "job"))
			path := f.drive("source", 10).Status.Path
			if !metadataExists(path) {
				t.Fatalf("no savepoint at %q", path)
			}

			// The job that will start from it.
			var jobID string
			if tc.deployed {
				jobID = "0123456789abcdef0123456789abcdef"
			}
			job := &v1beta1.JobSpec{JarURI: "https://repo.example/job.jar", InitialSavepointPath: path}
			status := v1beta1.JobStatus{JobID: jobID}
			if tc.deployed {
				status.State = v1beta1.JobStatusRunning
			}
			meta := metav1.ObjectMeta{Namespace: ns, Name: "fresh"}
			switch tc.kind {
			case v1beta1.JobReferenceKindDeployment:
				dep := &v1beta1.FlinkDeployment{ObjectMeta: meta, Spec: v1beta1.FlinkDeploymentSpec{FlinkVersion: v1beta1.FlinkVersion1_20, Job: job},
					Status: v1beta1.FlinkDeploymentStatus{JobStatus: status}}
				if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Create(f.Ctx, dep, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				f.jms["fresh"] = jm // its JobManager would answer the disposal
			case v1beta1.JobReferenceKindSessionJob:
				sj := &v1beta1.FlinkSessionJob{ObjectMeta: meta, Spec: v1beta1.FlinkSessionJobSpec{DeploymentName: "job", Job: job},
					Status: v1beta1.FlinkSessionJobStatus{JobStatus: status}}
				if _, err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Create(f.Ctx, sj, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}

			// The savepoint recorded as a snapshot of that job, to be
			// disposed of on deletion.
			s := savepointSnap("start", "fresh")
			s.Spec.JobReference.Kind = tc.kind
			s.Spec.Savepoint = &v1beta1.SavepointSpec{AlreadyExists: ptr.To(true), Path: path, DisposeOnDelete: ptr.To(true)}
			f.Create(s)
			if got := f.drive("start", 5); got.Status.State != v1beta1.SnapshotCompleted || got.Status.Path != path {
				t.Fatalf("imported savepoint %+v", got.Status)
			}
			f.Events()
			markDeleted(t, f, "start")
			for i := 0; i < 10 && !gone(f, "start"); i++ {
				f.Clock.Step(max(f.MustSync("start"), time.Second))
			}
			if !gone(f, "start") {
				t.Fatal("deletion blocked")
			}
			// A disposal handed to the job (it still holds the savepoint)
			// ends at the dispose timeout: the job stays.
			f.settleDisposals(tc.kind, "fresh")

			disposals := jm.StartedOperations(fakejm.OpDisposal)
			skipped := false
			for _, e := range f.Events() {
				skipped = skipped || (strings.Contains(e, reasons.ReasonDisposeSkipped) && strings.Contains(e, "restore point"))
			}
			if !tc.deployed {
				if disposals != 0 || !metadataExists(path) {
					t.Fatalf("%d disposals; the initialSavepointPath of a job not yet deployed must be kept", disposals)
				}
				if !skipped {
					t.Error("no DisposeSkipped event naming the restore point")
				}
				return
			}
			if disposals != 1 || skipped {
				t.Fatalf("%d disposals (DisposeSkipped for a restore point: %v); a deployed job's initialSavepointPath is no restore point", disposals, skipped)
			}
			for _, op := range jm.Operations() {
				if op.Kind == fakejm.OpDisposal && op.SavepointPath != path {
					t.Errorf("disposed %q, want %q", op.SavepointPath, path)
				}
			}
		})
	}
}
