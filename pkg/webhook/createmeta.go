package webhook

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// jsonPatch is a list of JSON Patch (RFC 6902) operations.
type jsonPatch []map[string]any

// createMetadata adds to an admitted CREATE the metadata a controller
// would otherwise write at its first sync, each one API write fewer per
// resource (docs/performance.md): a job's finalizer; a snapshot's labels
// and finalizer. ops gives the operations for the request's object. Without
// the webhook the controllers still write them; with it, they find nothing
// to change.
func createMetadata(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse, ops func(*admissionv1.AdmissionRequest) (jsonPatch, *admissionv1.AdmissionResponse)) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create || !resp.Allowed {
		return resp
	}
	add, denied := ops(req)
	if denied != nil {
		return denied
	}
	if len(add) == 0 {
		return resp
	}
	if resp.Patch != nil {
		var stamped jsonPatch
		if err := json.Unmarshal(resp.Patch, &stamped); err != nil {
			return deny(http.StatusInternalServerError, "internal error in the flink-operator webhook: its own patch: "+err.Error())
		}
		add = append(stamped, add...)
	}
	patch, err := json.Marshal(add)
	if err != nil {
		return deny(http.StatusInternalServerError, "internal error in the flink-operator webhook: "+err.Error())
	}
	pt := admissionv1.PatchTypeJSONPatch
	out := *resp
	out.Patch, out.PatchType = patch, &pt
	return &out
}

// jobFinalizer gives a new FlinkDeployment or FlinkSessionJob its
// controller's finalizer.
func jobFinalizer[T object, P interface {
	*T
	metav1.Object
}](finalizer string) func(*admissionv1.AdmissionRequest) (jsonPatch, *admissionv1.AdmissionResponse) {
	return func(req *admissionv1.AdmissionRequest) (jsonPatch, *admissionv1.AdmissionResponse) {
		cur, _, denied := decodeObjects[T](req)
		if denied != nil {
			return nil, denied
		}
		return finalizerOp(P(cur), finalizer), nil
	}
}

func finalizerOp(obj metav1.Object, finalizer string) jsonPatch {
	if slices.Contains(obj.GetFinalizers(), finalizer) {
		return nil
	}
	return jsonPatch{{"op": "add", "path": "/metadata/finalizers", "value": append(slices.Clone(obj.GetFinalizers()), finalizer)}}
}

// snapshotMetadata gives a new FlinkStateSnapshot the labels and finalizer
// the snapshot controller would otherwise write before its first trigger
// (docs/snapshots.md, "Find snapshots"), so a savepoint is also protected
// by its finalizer from the moment it exists. The job-reference labels are
// set only when the job is found, as the controller does.
func (v *Validator) snapshotMetadata(req *admissionv1.AdmissionRequest) (jsonPatch, *admissionv1.AdmissionResponse) {
	s, _, denied := decodeObjects[v1beta1.FlinkStateSnapshot](req)
	if denied != nil {
		return nil, denied
	}
	var ops jsonPatch
	if labels := snapshotrules.DesiredLabels(s, s.Status.State, v.jobExists(s)); !maps.Equal(labels, s.Labels) {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": labels})
	}
	if snapshotrules.NeedsFinalizer(s, s.Status.State) {
		ops = append(ops, finalizerOp(s, v1beta1.SnapshotFinalizer)...)
	}
	return ops, nil
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
