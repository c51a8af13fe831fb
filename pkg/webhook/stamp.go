package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
)

// The mutating step (MutatePath) stamps an object whose reference to another
// namespace its SubjectAccessReview allowed, with an HMAC the controllers
// verify before acting on the reference (pkg/reviewstamp). It runs
// before the validating step, which judges the final object; it denies only
// what the validating step would deny anyway (the reference is not allowed),
// so the user hears it once, first.
//
// When it stamps:
//   - CREATE, or an UPDATE that changes the reference: after the review,
//     always a fresh stamp (whatever stamp the request carried is
//     replaced, so a copied one never survives admission);
//   - an UPDATE that keeps the reference: the stamp it had is kept (or put
//     back, if the update dropped or replaced it). An object without one
//     (admitted before the webhook was, or while it was skipped) is
//     reviewed only if the update changes its spec, which only its users
//     do: an update of metadata alone may come from the operator
//     maintaining finalizers, whose rights must never stand in for the
//     author's. That review stamps when it allows and otherwise admits the
//     update unstamped (the reference was admitted before, so suspending
//     such a job must not be blocked; it just still is not acted on).
//     Changing the reference (or re-creating a snapshot) is reviewed as new;
//   - no cross-namespace reference: a stamp is removed (it vouches for
//     nothing, and must not be left to be copied around).

// Mutate decides one admission request of the mutating step.
func (v *Validator) Mutate(ctx context.Context, req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	logger := klog.FromContext(ctx).WithValues("uid", req.UID, "kind", req.Kind.Kind, "object", klog.KRef(req.Namespace, req.Name),
		"operation", req.Operation, "user", req.UserInfo.Username, "step", "mutate")
	ctx = klog.NewContext(ctx, logger)
	defer func() {
		if r := recover(); r != nil {
			logger.Error(fmt.Errorf("%v", r), "Panic while stamping")
			resp = deny(http.StatusInternalServerError, fmt.Sprintf("internal error in the flink-operator webhook while reviewing %s: %v", req.Kind.Kind, r))
		}
		switch {
		case !resp.Allowed:
			logger.V(1).Info("Denied", "code", resp.Result.Code, "message", resp.Result.Message)
		case resp.Patch != nil:
			logger.V(2).Info("Review stamp changed", "patch", string(resp.Patch))
		}
	}()
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update || req.SubResource != "" {
		return allow(nil)
	}
	if req.Kind.Group != v1beta1.GroupName {
		return deny(http.StatusForbidden, "Unexpected resource: "+req.Kind.Kind)
	}
	kind := req.Kind.Kind
	switch kind {
	case "FlinkDeployment":
		return createMetadata(req, stampObject(ctx, v, req, func(d *v1beta1.FlinkDeployment) (*crossReference, *admissionv1.AdmissionResponse) {
			return initialSnapshotReference(kind, d.Namespace, d.Spec.Job), nil
		}, func(d *v1beta1.FlinkDeployment) any { return d.Spec }), jobFinalizer[v1beta1.FlinkDeployment](v1beta1.DeploymentFinalizer))
	case "FlinkSessionJob":
		return createMetadata(req, stampObject(ctx, v, req, func(j *v1beta1.FlinkSessionJob) (*crossReference, *admissionv1.AdmissionResponse) {
			return initialSnapshotReference(kind, j.Namespace, j.Spec.Job), nil
		}, func(j *v1beta1.FlinkSessionJob) any { return j.Spec }), jobFinalizer[v1beta1.FlinkSessionJob](v1beta1.SessionJobFinalizer))
	case "FlinkStateSnapshot":
		return createMetadata(req, stampObject(ctx, v, req, snapshotJobReference, func(s *v1beta1.FlinkStateSnapshot) any { return s.Spec }), v.snapshotMetadata)
	}
	return deny(http.StatusForbidden, "Unexpected resource: "+kind)
}

// stampObject decodes the request's objects of one kind and stamps the new
// one: refOf reads an object's cross-namespace reference (nil without one;
// a response refuses the object), specOf its spec, whose change on UPDATE
// is what may earn a fresh stamp.
func stampObject[T object, P interface {
	*T
	metav1.Object
}](ctx context.Context, v *Validator, req *admissionv1.AdmissionRequest,
	refOf func(P) (*crossReference, *admissionv1.AdmissionResponse), specOf func(P) any) *admissionv1.AdmissionResponse {
	cur, old, resp := decodeObjects[T](req)
	if resp != nil {
		return resp
	}
	ref, resp := refOf(P(cur))
	if resp != nil {
		return resp
	}
	if old == nil {
		return v.stamp(ctx, req, req.Kind.Kind, P(cur), nil, ref, nil, false)
	}
	if P(cur).GetDeletionTimestamp() != nil {
		return allow(nil)
	}
	oldRef, _ := refOf(P(old))
	return v.stamp(ctx, req, req.Kind.Kind, P(cur), P(old), ref, oldRef, !sameJSON(specOf(P(old)), specOf(P(cur))))
}

// stamp decides the review annotation of obj (see the rules above); old is
// nil on CREATE; specChanged says whether an UPDATE changes the spec.
func (v *Validator) stamp(ctx context.Context, req *admissionv1.AdmissionRequest, kind string, obj, old metav1.Object, ref, oldRef *crossReference, specChanged bool) *admissionv1.AdmissionResponse {
	value, has := obj.GetAnnotations()[reviewstamp.Annotation]
	if ref == nil {
		if has {
			return annotationPatch(obj, nil)
		}
		return allow(nil)
	}
	if old != nil && oldRef != nil && *oldRef == *ref {
		if v.reviewKeys == nil || len(v.reviewKeys.Keys()) == 0 {
			// Cannot tell a good stamp from a bad one: leave it to the
			// controllers, which verify before acting.
			return allow(nil)
		}
		if has {
			if _, err := reviewstamp.VerifyValue(v.reviewKeys, value, kind, obj, ref.stamped()); err == nil {
				return allow(nil)
			}
		}
		if prev, ok := old.GetAnnotations()[reviewstamp.Annotation]; ok && (!has || prev != value) {
			if _, err := reviewstamp.VerifyValue(v.reviewKeys, prev, kind, obj, ref.stamped()); err == nil {
				return annotationPatch(obj, &prev)
			}
		}
		if !specChanged {
			if has {
				return annotationPatch(obj, nil)
			}
			return allow(nil)
		}
		if resp := v.authorizeCrossNamespace(ctx, req, v.config(), ref); resp != nil {
			klog.FromContext(ctx).V(1).Info("Unreviewed cross-namespace reference stays unstamped", "field", ref.field, "reason", resp.Result.Message)
			if has {
				return annotationPatch(obj, nil)
			}
			return allow(nil)
		}
		return v.sign(ctx, req, kind, obj, ref)
	}
	if obj.GetName() == "" {
		// metadata.generateName: the name is chosen after admission, so
		// the stamp could not name the object.
		return deny(http.StatusForbidden, fmt.Sprintf("%s.namespace %q: a %s that refers to another namespace needs metadata.name (not generateName): the operator's review of the reference names the object",
			ref.field, ref.namespace, kind))
	}
	if resp := v.authorizeCrossNamespace(ctx, req, v.config(), ref); resp != nil {
		return resp
	}
	return v.sign(ctx, req, kind, obj, ref)
}

// sign stamps obj's reference, which the requesting user was just found
// allowed to make.
func (v *Validator) sign(ctx context.Context, req *admissionv1.AdmissionRequest, kind string, obj metav1.Object, ref *crossReference) *admissionv1.AdmissionResponse {
	var keys [][]byte
	if v.reviewKeys != nil {
		keys = v.reviewKeys.Keys()
	}
	if len(keys) == 0 {
		return deny(http.StatusServiceUnavailable, "the flink-operator webhook has not loaded its cross-namespace review key yet (a Secret in its namespace): retry in a few seconds")
	}
	stamp, err := reviewstamp.Sign(keys[0], kind, obj, ref.stamped(), req.UserInfo.Username, v.clock.Now())
	if err != nil {
		return deny(http.StatusInternalServerError, "stamping the reviewed reference: "+err.Error())
	}
	klog.FromContext(ctx).V(2).Info("Cross-namespace reference stamped", "field", ref.field, "target", klog.KRef(ref.namespace, ref.name))
	return annotationPatch(obj, &stamp)
}

// annotationPatch sets (value != nil) or removes the review annotation.
func annotationPatch(obj metav1.Object, value *string) *admissionv1.AdmissionResponse {
	path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(reviewstamp.Annotation)
	var ops []map[string]any
	switch {
	case value == nil:
		ops = append(ops, map[string]any{"op": "remove", "path": path})
	case obj.GetAnnotations() == nil:
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{reviewstamp.Annotation: *value}})
	default:
		ops = append(ops, map[string]any{"op": "add", "path": path, "value": *value})
	}
	patch, _ := json.Marshal(ops)
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &pt}
}

// checkStamp is the validating step's look at the stamp of a reference it
// just authorized: missing means the mutating step is not registered (a
// warning: the object is admitted, but the operator will not act on the
// reference); present but not vouching for this object means something
// changed it after the mutating step (denied).
func (v *Validator) checkStamp(kind string, obj metav1.Object, ref *crossReference) (string, *admissionv1.AdmissionResponse) {
	if _, has := obj.GetAnnotations()[reviewstamp.Annotation]; !has {
		return fmt.Sprintf("%s: the operator will not act on this reference to namespace %q: it carries no %s stamp, which the flink-operator's MutatingWebhookConfiguration adds after reviewing it (is it registered?)",
			ref.field, ref.namespace, reviewstamp.Annotation), nil
	}
	if v.reviewKeys == nil || len(v.reviewKeys.Keys()) == 0 {
		return "", nil // the controllers verify it
	}
	if _, err := reviewstamp.Verify(v.reviewKeys, kind, obj, ref.stamped()); err != nil {
		return "", deny(http.StatusForbidden, fmt.Sprintf("%s: %v (changed after the flink-operator's mutating webhook reviewed it?)", ref.field, err))
	}
	return "", nil
}
