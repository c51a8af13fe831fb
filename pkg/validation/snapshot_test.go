package validation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

func snapshot(mutate ...func(*v1beta1.FlinkStateSnapshot)) *v1beta1.FlinkStateSnapshot {
	s := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "snap"},
		Spec: v1beta1.FlinkStateSnapshotSpec{
			JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job"},
			Savepoint:    &v1beta1.SavepointSpec{},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func asCheckpoint(s *v1beta1.FlinkStateSnapshot) {
	s.Spec.Savepoint, s.Spec.Checkpoint = nil, &v1beta1.CheckpointSpec{}
}

func toSessionJob(s *v1beta1.FlinkStateSnapshot) {
	s.Spec.JobReference = &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindSessionJob, Name: "sj"}
}

func withVersion(d *v1beta1.FlinkDeployment, v v1beta1.FlinkVersion) *v1beta1.FlinkDeployment {
	d.Spec.FlinkVersion = v
	return d
}

func withConf(d *v1beta1.FlinkDeployment, kv ...string) *v1beta1.FlinkDeployment {
	d.Spec.FlinkConfiguration = conf(kv...)
	return d
}

func sjWithConf(j *v1beta1.FlinkSessionJob, kv ...string) *v1beta1.FlinkSessionJob {
	j.Spec.FlinkConfiguration = conf(kv...)
	return j
}

// TestStateSnapshotUpstream covers upstream's rules with
// their messages verbatim.
func TestStateSnapshotUpstream(t *testing.T) {
	found := Target{Deployment: application("job")}
	for _, tc := range []struct {
		name   string
		snap   *v1beta1.FlinkStateSnapshot
		target Target
		want   string
	}{
		{"savepoint", snapshot(), found, ""},
		{"neither savepoint nor checkpoint", snapshot(func(s *v1beta1.FlinkStateSnapshot) { s.Spec.Savepoint = nil }), found,
			"Exactly one of checkpoint or savepoint configurations has to be set."},
		{"both savepoint and checkpoint", snapshot(func(s *v1beta1.FlinkStateSnapshot) { s.Spec.Checkpoint = &v1beta1.CheckpointSpec{} }), found,
			"Exactly one of checkpoint or savepoint configurations has to be set."},
		{"alreadyExists needs no reference", snapshot(func(s *v1beta1.FlinkStateSnapshot) {
			s.Spec.JobReference = nil
			s.Spec.Savepoint = &v1beta1.SavepointSpec{AlreadyExists: ptr(true)}
		}), Target{}, ""},
		{"alreadyExists needs no path", snapshot(func(s *v1beta1.FlinkStateSnapshot) {
			s.Spec.Savepoint = &v1beta1.SavepointSpec{AlreadyExists: ptr(true)}
		}), Target{}, ""},
		{"alreadyExists false still needs a reference", snapshot(func(s *v1beta1.FlinkStateSnapshot) {
			s.Spec.JobReference = nil
			s.Spec.Savepoint = &v1beta1.SavepointSpec{AlreadyExists: ptr(false)}
		}), Target{}, "Job reference must be supplied for this snapshot"},
		{"no reference", snapshot(func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference = nil }), Target{},
			"Job reference must be supplied for this snapshot"},
		{"reference without name", snapshot(func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference.Name = "" }), Target{},
			"Job reference must be supplied for this snapshot"},
		{"checkpoint without reference", snapshot(asCheckpoint, func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference = nil }), Target{},
			"Job reference must be supplied for this snapshot"},
		{"target missing, new", snapshot(), Target{}, "Target for snapshot ns/job was not found"},
		{"target missing, TRIGGER_PENDING", snapshot(func(s *v1beta1.FlinkStateSnapshot) { s.Status.State = v1beta1.SnapshotTriggerPending }), Target{},
			"Target for snapshot ns/job was not found"},
		{"target missing, session job", snapshot(toSessionJob), Target{}, "Target for snapshot ns/sj was not found"},
		{"target missing, cross-namespace", snapshot(func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference.Namespace = "other" }), Target{},
			"Target for snapshot other/job was not found"},
		{"target missing after trigger is not re-checked", snapshot(func(s *v1beta1.FlinkStateSnapshot) { s.Status.State = v1beta1.SnapshotInProgress }), Target{}, ""},
		{"target missing when completed", snapshot(func(s *v1beta1.FlinkStateSnapshot) { s.Status.State = v1beta1.SnapshotCompleted }), Target{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, StateSnapshot(tc.snap, tc.target, config.Defaults()), tc.want)
		})
	}
}

// TestStateSnapshotSavepointDirectory covers our rule: a savepoint needs a
// directory, from its spec or from its job's effective configuration.
func TestStateSnapshotSavepointDirectory(t *testing.T) {
	withPath := func(p string) func(*v1beta1.FlinkStateSnapshot) {
		return func(s *v1beta1.FlinkStateSnapshot) { s.Spec.Savepoint.Path = p }
	}
	for _, tc := range []struct {
		name     string
		snap     *v1beta1.FlinkStateSnapshot
		target   Target
		operator config.Config
		want     []string // substrings; none = valid
	}{
		{name: "job config has the dir", snap: snapshot(), target: Target{Deployment: application("job")}},
		{name: "legacy key state.savepoints.dir", snap: snapshot(),
			target: Target{Deployment: withConf(application("job"), config.FlinkSavepointDirDeprecated, spDir)}},
		{name: "spec path without any config", snap: snapshot(withPath("s3://bucket/sp")),
			target: Target{Deployment: withConf(application("job"))}},
		{name: "operator config has the dir", snap: snapshot(), target: Target{Deployment: withConf(application("job"))},
			operator: config.Config{config.FlinkSavepointDir: spDir}},
		{name: "no dir anywhere", snap: snapshot(), target: Target{Deployment: withConf(application("job"))},
			want: []string{"spec.savepoint.path", config.FlinkSavepointDir, config.FlinkSavepointDirDeprecated, "FlinkDeployment ns/job"}},
		{name: "blank path and blank dir", snap: snapshot(withPath("  ")),
			target: Target{Deployment: withConf(application("job"), config.FlinkSavepointDir, " ")},
			want:   []string{"spec.savepoint.path", config.FlinkSavepointDir}},
		{name: "target config does not parse", snap: snapshot(),
			target: Target{Deployment: withConf(application("job"), config.FlinkRestPort, "http")},
			want:   []string{"savepoint directory of FlinkDeployment ns/job", config.FlinkRestPort}},
		{name: "session job's own dir", snap: snapshot(toSessionJob),
			target: Target{SessionJob: sjWithConf(sessionJob("sj", "cluster"), config.FlinkSavepointDir, spDir), SessionCluster: session("cluster")}},
		{name: "session job's own dir, cluster missing", snap: snapshot(toSessionJob),
			target: Target{SessionJob: sjWithConf(sessionJob("sj", "cluster"), config.FlinkSavepointDirDeprecated, spDir)}},
		{name: "session cluster's dir", snap: snapshot(toSessionJob),
			target: Target{SessionJob: sessionJob("sj", "cluster"), SessionCluster: withConf(session("cluster"), config.FlinkSavepointDir, spDir)}},
		{name: "session job blanks the cluster's dir", snap: snapshot(toSessionJob),
			target: Target{SessionJob: sjWithConf(sessionJob("sj", "cluster"), config.FlinkSavepointDir, ""), SessionCluster: withConf(session("cluster"), config.FlinkSavepointDir, spDir)},
			want:   []string{"FlinkSessionJob ns/sj or of its session cluster FlinkDeployment ns/cluster"}},
		{name: "session job without dir", snap: snapshot(toSessionJob),
			target: Target{SessionJob: sessionJob("sj", "cluster"), SessionCluster: session("cluster")},
			want:   []string{"spec.savepoint.path", config.FlinkSavepointDir, "FlinkSessionJob ns/sj or of its session cluster FlinkDeployment ns/cluster"}},
		{name: "session job without dir, cluster missing", snap: snapshot(toSessionJob),
			target: Target{SessionJob: sessionJob("sj", "cluster")},
			want:   []string{config.FlinkSavepointDir, "FlinkSessionJob ns/sj", "session cluster FlinkDeployment ns/cluster was not found"}},
		{name: "not re-checked after the trigger", snap: snapshot(func(s *v1beta1.FlinkStateSnapshot) { s.Status.State = v1beta1.SnapshotFailed }),
			target: Target{Deployment: withConf(application("job"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.operator
			if op == nil {
				op = config.Defaults()
			}
			checkErrContains(t, StateSnapshot(tc.snap, tc.target, op), tc.want...)
		})
	}
}

// TestStateSnapshotCheckpointVersion covers our rule: checkpoints need
// Flink 1.17 or newer on the cluster the job runs on.
func TestStateSnapshotCheckpointVersion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		snap   *v1beta1.FlinkStateSnapshot
		target Target
		want   []string
	}{
		{"1.20", snapshot(asCheckpoint), Target{Deployment: application("job")}, nil},
		{"1.17", snapshot(asCheckpoint), Target{Deployment: withVersion(application("job"), v1beta1.FlinkVersion1_17)}, nil},
		{"2.0", snapshot(asCheckpoint), Target{Deployment: withVersion(application("job"), v1beta1.FlinkVersion2_0)}, nil},
		{"1.16", snapshot(asCheckpoint), Target{Deployment: withVersion(application("job"), v1beta1.FlinkVersion1_16)},
			[]string{"Flink 1.17 or newer", "FlinkDeployment ns/job runs Flink 1.16", "savepoint instead"}},
		{"unparseable version", snapshot(asCheckpoint), Target{Deployment: withVersion(application("job"), "latest")},
			[]string{"Flink 1.17 or newer", `spec.flinkVersion "latest"`}},
		{"session cluster 1.18", snapshot(asCheckpoint, toSessionJob),
			Target{SessionJob: sessionJob("sj", "cluster"), SessionCluster: withVersion(session("cluster"), v1beta1.FlinkVersion1_18)}, nil},
		{"session cluster 1.15", snapshot(asCheckpoint, toSessionJob),
			Target{SessionJob: sessionJob("sj", "cluster"), SessionCluster: withVersion(session("cluster"), v1beta1.FlinkVersion1_15)},
			[]string{"FlinkDeployment ns/cluster runs Flink 1.15"}},
		{"session cluster missing", snapshot(asCheckpoint, toSessionJob), Target{SessionJob: sessionJob("sj", "cluster")},
			[]string{"Flink 1.17 or newer", "FlinkSessionJob ns/sj", "session cluster FlinkDeployment ns/cluster was not found"}},
		{"checkpoint needs no savepoint dir", snapshot(asCheckpoint), Target{Deployment: withConf(application("job"))}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrContains(t, StateSnapshot(tc.snap, tc.target, config.Defaults()), tc.want...)
		})
	}
}

func TestStateSnapshotUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*v1beta1.FlinkStateSnapshot)
		want   string
	}{
		{"no change", func(*v1beta1.FlinkStateSnapshot) {}, ""},
		{"labels and finalizers", func(s *v1beta1.FlinkStateSnapshot) {
			s.Labels = map[string]string{"snapshot.state": "COMPLETED"}
			s.Finalizers = []string{v1beta1.SnapshotFinalizer}
		}, ""},
		{"status", func(s *v1beta1.FlinkStateSnapshot) { s.Status.State = v1beta1.SnapshotCompleted }, ""},
		{"own namespace spelled out", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference.Namespace = "ns" }, ""},
		{"savepoint to checkpoint", asCheckpoint,
			"spec.savepoint and spec.checkpoint cannot be switched after creation: create a new FlinkStateSnapshot instead"},
		{"checkpoint added", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.Checkpoint = &v1beta1.CheckpointSpec{} },
			"spec.savepoint and spec.checkpoint cannot be switched after creation: create a new FlinkStateSnapshot instead"},
		{"other job", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference.Name = "other" },
			"spec.jobReference cannot be changed after creation: create a new FlinkStateSnapshot instead"},
		{"other kind", toSessionJob,
			"spec.jobReference cannot be changed after creation: create a new FlinkStateSnapshot instead"},
		{"other namespace", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference.Namespace = "other" },
			"spec.jobReference cannot be changed after creation: create a new FlinkStateSnapshot instead"},
		{"reference removed", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference = nil },
			"spec.jobReference cannot be changed after creation: create a new FlinkStateSnapshot instead"},
		{"path", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.Savepoint.Path = "s3://b/sp" },
			"spec is immutable: create a new FlinkStateSnapshot instead"},
		{"alreadyExists", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.Savepoint.AlreadyExists = ptr(true) },
			"spec is immutable: create a new FlinkStateSnapshot instead"},
		{"backoffLimit", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.BackoffLimit = ptr(int32(3)) },
			"spec is immutable: create a new FlinkStateSnapshot instead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := snapshot()
			cur := old.DeepCopy()
			tc.change(cur)
			checkErr(t, StateSnapshotUpdate(old, cur), tc.want)
		})
	}
}

func TestCrossNamespaceReference(t *testing.T) {
	for _, tc := range []struct {
		ref       *v1beta1.JobReference
		wantNS    string
		wantCross bool
		wantJobNS string
	}{
		{nil, "", false, "ns"},
		{&v1beta1.JobReference{Name: "job"}, "", false, "ns"},
		{&v1beta1.JobReference{Name: "job", Namespace: "ns"}, "", false, "ns"},
		{&v1beta1.JobReference{Name: "job", Namespace: "other"}, "other", true, "other"},
	} {
		s := snapshot(func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference = tc.ref })
		ns, cross := CrossNamespaceReference(s)
		if ns != tc.wantNS || cross != tc.wantCross {
			t.Errorf("%+v: CrossNamespaceReference = %q, %v; want %q, %v", tc.ref, ns, cross, tc.wantNS, tc.wantCross)
		}
		if got := JobReferenceNamespace(s); got != tc.wantJobNS {
			t.Errorf("%+v: JobReferenceNamespace = %q, want %q", tc.ref, got, tc.wantJobNS)
		}
	}
}
