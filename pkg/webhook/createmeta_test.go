package webhook

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// metadataPatch returns the labels and finalizers a mutating response sets
// (nil when it leaves them alone).
func metadataPatch(t *testing.T, resp *admissionv1.AdmissionResponse) (labels map[string]string, finalizers []string) {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied: %s", resp.Result.Message)
	}
	if resp.Patch == nil {
		return nil, nil
	}
	var ops []struct {
		Op, Path string
		Value    json.RawMessage
	}
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		var err error
		switch op.Path {
		case "/metadata/labels":
			err = json.Unmarshal(op.Value, &labels)
		case "/metadata/finalizers":
			err = json.Unmarshal(op.Value, &finalizers)
		default:
			continue
		}
		if op.Op != "add" || err != nil {
			t.Fatalf("op %s %s: %v", op.Op, op.Path, err)
		}
	}
	return labels, finalizers
}

// A new snapshot gets at admission the labels and finalizer the snapshot
// controller would otherwise write before its first trigger, so that write
// is not needed.
func TestMutateSetsSnapshotLabelsAndFinalizer(t *testing.T) {
	checkpoint := savepoint("ns", "cp", deploymentRef("job"))
	checkpoint.Spec.Savepoint, checkpoint.Spec.Checkpoint = nil, &v1beta1.CheckpointSpec{}
	imported := savepoint("ns", "imported", deploymentRef("job"))
	imported.Spec.Savepoint.AlreadyExists, imported.Spec.Savepoint.Path = ptr(true), "file:///sp/1"
	operatorMade := savepoint("ns", "periodic", deploymentRef("job"))
	operatorMade.Labels = map[string]string{
		v1beta1.LabelSnapshotType: "SAVEPOINT", v1beta1.LabelSnapshotTriggerType: "PERIODIC", v1beta1.LabelSnapshotState: "IN_PROGRESS",
		v1beta1.LabelJobReferenceKind: "FlinkDeployment", v1beta1.LabelJobReferenceName: "job",
	}
	operatorMade.Finalizers = []string{v1beta1.SnapshotFinalizer}
	jobLabels := map[string]string{v1beta1.LabelJobReferenceKind: "FlinkDeployment", v1beta1.LabelJobReferenceName: "job"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name           string
		snap           *v1beta1.FlinkStateSnapshot
		jobExists      bool
		wantLabels     map[string]string
		wantFinalizers []string
	}{
		{"savepoint of an existing job", savepoint("ns", "sp", deploymentRef("job")), true,
			with(jobLabels, v1beta1.LabelSnapshotType, "SAVEPOINT", v1beta1.LabelSnapshotTriggerType, "MANUAL", v1beta1.LabelSnapshotState, "IN_PROGRESS"),
			[]string{v1beta1.SnapshotFinalizer}},
		{"savepoint of a missing job: no job labels", savepoint("ns", "sp", deploymentRef("job")), false,
			with(nil, v1beta1.LabelSnapshotType, "SAVEPOINT", v1beta1.LabelSnapshotTriggerType, "MANUAL", v1beta1.LabelSnapshotState, "IN_PROGRESS"),
			[]string{v1beta1.SnapshotFinalizer}},
		{"checkpoint: no finalizer", checkpoint, true,
			with(jobLabels, v1beta1.LabelSnapshotType, "CHECKPOINT", v1beta1.LabelSnapshotTriggerType, "MANUAL", v1beta1.LabelSnapshotState, "IN_PROGRESS"),
			nil},
		{"imported savepoint kept on delete: no finalizer", imported, true,
			with(jobLabels, v1beta1.LabelSnapshotType, "SAVEPOINT", v1beta1.LabelSnapshotTriggerType, "MANUAL", v1beta1.LabelSnapshotState, "IN_PROGRESS"),
			nil},
		{"operator-made snapshot already carries both: no patch", operatorMade, true, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := newLookup()
			if tt.jobExists {
				lookup = newLookup(application("ns", "job"))
			}
			v := newValidator(lookup, config.Config{})
			labels, finalizers := metadataPatch(t, mutate(t, v, request(admissionv1.Create, tt.snap, nil)))
			if diff := cmp.Diff(tt.wantLabels, labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFinalizers, finalizers); diff != "" {
				t.Errorf("finalizers (-want +got):\n%s", diff)
			}
		})
	}
}

// Updates are the controller's business (it moves the state label); the
// webhook sets metadata only at creation.
func TestMutateLeavesSnapshotMetadataOnUpdate(t *testing.T) {
	v := newValidator(newLookup(application("ns", "job")), config.Config{})
	old := savepoint("ns", "sp", deploymentRef("job"))
	cur := old.DeepCopy()
	cur.Annotations = map[string]string{"note": "x"}
	labels, finalizers := metadataPatch(t, mutate(t, v, request(admissionv1.Update, cur, old)))
	if labels != nil || finalizers != nil {
		t.Fatalf("update patched labels %v, finalizers %v", labels, finalizers)
	}
}

// A new FlinkDeployment or FlinkSessionJob gets its controller's finalizer
// at admission (the controller's first write otherwise); one that has it,
// and any update, is left alone.
func TestMutateSetsJobFinalizer(t *testing.T) {
	v := newValidator(newLookup(sessionCluster("ns", "session")), config.Config{})
	dep := application("ns", "app")
	if _, f := metadataPatch(t, mutate(t, v, request(admissionv1.Create, dep, nil))); !cmp.Equal(f, []string{v1beta1.DeploymentFinalizer}) {
		t.Errorf("FlinkDeployment finalizers %v", f)
	}
	sj := sessionJob("ns", "job", "session")
	sj.Finalizers = []string{"example.com/keep"}
	if _, f := metadataPatch(t, mutate(t, v, request(admissionv1.Create, sj, nil))); !cmp.Equal(f, []string{"example.com/keep", v1beta1.SessionJobFinalizer}) {
		t.Errorf("FlinkSessionJob finalizers %v", f)
	}
	has := application("ns", "has")
	has.Finalizers = []string{v1beta1.DeploymentFinalizer}
	if _, f := metadataPatch(t, mutate(t, v, request(admissionv1.Create, has, nil))); f != nil {
		t.Errorf("finalizer patched again: %v", f)
	}
	if _, f := metadataPatch(t, mutate(t, v, request(admissionv1.Update, application("ns", "app"), dep))); f != nil {
		t.Errorf("update patched finalizers: %v", f)
	}
}
