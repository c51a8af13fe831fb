package webhook

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// snapshotMetadata adds to the admitted creation of a FlinkStateSnapshot
// the labels and finalizer the snapshot controller would otherwise write
// before its first trigger (docs/snapshots.md, "Find snapshots"): one API
// write fewer per snapshot, and a savepoint that is protected by its
// finalizer from the moment it exists. The job-reference labels are set
// only when the job is found, as the controller does. Without the webhook
// the controller still writes them; with it, it finds nothing to change.
func (v *Validator) snapshotMetadata(resp *admissionv1.AdmissionResponse, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	s, _, denied := decodeObjects[v1beta1.FlinkStateSnapshot](req)
	if denied != nil {
		return denied
	}
	state := s.Status.State
	var ops []map[string]any
	if labels := snapshotrules.DesiredLabels(s, state, v.jobExists(s)); !maps.Equal(labels, s.Labels) {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": labels})
	}
	if snapshotrules.NeedsFinalizer(s, state) && !slices.Contains(s.Finalizers, v1beta1.SnapshotFinalizer) {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/finalizers", "value": append(slices.Clone(s.Finalizers), v1beta1.SnapshotFinalizer)})
	}
	if len(ops) == 0 {
		return resp
	}
	if resp.Patch != nil {
		var stamped []map[string]any
		if err := json.Unmarshal(resp.Patch, &stamped); err != nil {
			return deny(http.StatusInternalServerError, "internal error in the flink-operator webhook: its own patch: "+err.Error())
		}
		ops = append(stamped, ops...)
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return deny(http.StatusInternalServerError, "internal error in the flink-operator webhook: "+err.Error())
	}
	pt := admissionv1.PatchTypeJSONPatch
	out := *resp
	out.Patch, out.PatchType = patch, &pt
	return &out
}

// jobExists: the snapshot's job is found (a cache miss is not an error
// here; the controller labels the snapshot when it finds the job).
func (v *Validator) jobExists(s *v1beta1.FlinkStateSnapshot) bool {
	ref := s.Spec.JobReference
	if v.lookup == nil || ref == nil || ref.Name == "" {
		return false
	}
	ns := s.Namespace
	if ref.Namespace != "" {
		ns = ref.Namespace
	}
	var err error
	switch ref.Kind {
	case v1beta1.JobReferenceKindDeployment:
		_, err = v.lookup.Deployment(ns, ref.Name)
	case v1beta1.JobReferenceKindSessionJob:
		_, err = v.lookup.SessionJob(ns, ref.Name)
	default:
		return false
	}
	return err == nil
}
