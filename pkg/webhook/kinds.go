package webhook

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/validation"
)

// placeholderJobID stands in for the job id when a spec is only checked.
const placeholderJobID = "00000000000000000000000000000000"

// Updates that leave the spec alone (labels, finalizers, annotations) are
// admitted without re-running the rules, and so are updates of an object
// being deleted: the rules judge a spec someone asks for, and the operator
// must always be able to maintain its metadata and remove its finalizer,
// even on an object that became invalid (operator config changed, or it
// predates the webhook). The controllers re-check every spec they act on.

func (v *Validator) deployment(ctx context.Context, req *admissionv1.AdmissionRequest, cfg config.Config) *admissionv1.AdmissionResponse {
	dep, old, resp := decodeObjects[v1beta1.FlinkDeployment](req)
	if resp != nil {
		return resp
	}
	if old != nil && (dep.DeletionTimestamp != nil || sameJSON(old.Spec, dep.Spec)) {
		return allow(nil)
	}
	var oldJob *v1beta1.JobSpec
	if old != nil {
		oldJob = old.Spec.Job
	}
	warning, resp := v.authorizeSnapshotRef(ctx, req, cfg, "FlinkDeployment", dep, dep.Spec.Job, oldJob)
	if resp != nil {
		return resp
	}
	res, err := validation.Deployment(dep, cfg)
	if err != nil {
		return deny(http.StatusForbidden, err.Error())
	}
	// What the controller would refuse to build (ports, memory, pod
	// template, log configuration) is refused now, with the same message.
	if _, err := cluster.Build(cluster.Input{Deployment: dep, Spec: dep.Spec, OperatorConfig: cfg, JobID: placeholderJobID, Native: cluster.NativeMode(dep.Spec.Mode)}); err != nil {
		return deny(http.StatusForbidden, err.Error())
	}
	return withWarning(allow(res.Warnings), warning)
}

func (v *Validator) sessionJob(ctx context.Context, req *admissionv1.AdmissionRequest, cfg config.Config) *admissionv1.AdmissionResponse {
	job, old, resp := decodeObjects[v1beta1.FlinkSessionJob](req)
	if resp != nil {
		return resp
	}
	if old != nil {
		if job.DeletionTimestamp != nil {
			return allow(nil)
		}
		if err := validation.SessionJobUpdate(old, job); err != nil {
			return deny(http.StatusForbidden, err.Error())
		}
		if sameJSON(old.Spec, job.Spec) {
			return allow(nil)
		}
	}
	var oldJob *v1beta1.JobSpec
	if old != nil {
		oldJob = old.Spec.Job
	}
	warning, resp := v.authorizeSnapshotRef(ctx, req, cfg, "FlinkSessionJob", job, job.Spec.Job, oldJob)
	if resp != nil {
		return resp
	}
	if resp := v.notSynced(); resp != nil {
		return resp
	}
	var clusterDep *v1beta1.FlinkDeployment
	if name := job.Spec.DeploymentName; name != "" {
		dep, err := v.lookup.Deployment(job.Namespace, name)
		switch {
		case err == nil:
			clusterDep = dep
		case !apierrors.IsNotFound(err):
			return deny(http.StatusInternalServerError, fmt.Sprintf("looking up session cluster FlinkDeployment %s/%s: %v", job.Namespace, name, err))
		}
	}
	res, err := validation.SessionJob(job, clusterDep, cfg)
	if err != nil {
		return deny(http.StatusForbidden, err.Error())
	}
	return withWarning(allow(res.Warnings), warning)
}

func (v *Validator) snapshot(ctx context.Context, req *admissionv1.AdmissionRequest, cfg config.Config) *admissionv1.AdmissionResponse {
	s, old, resp := decodeObjects[v1beta1.FlinkStateSnapshot](req)
	if resp != nil {
		return resp
	}
	if old != nil {
		if s.DeletionTimestamp != nil {
			return allow(nil)
		}
		if err := validation.StateSnapshotUpdate(old, s); err != nil {
			return deny(http.StatusForbidden, err.Error())
		}
		// The spec is what it was at creation, where it was checked; the
		// target may have gone since, which the snapshot's status reports.
		return allow(nil)
	}
	// Authorize before looking anything up, so a reference the user may not
	// make does not tell whether the job exists.
	ref, resp := snapshotJobReference(s)
	if resp != nil {
		return resp
	}
	var warning string
	if ref != nil {
		if resp := v.authorizeCrossNamespace(ctx, req, cfg, ref); resp != nil {
			return resp
		}
		if warning, resp = v.checkStamp("FlinkStateSnapshot", s, ref); resp != nil {
			return resp
		}
	}
	if resp := v.notSynced(); resp != nil {
		return resp
	}
	target, err := v.resolveTarget(s)
	if err != nil {
		return deny(http.StatusInternalServerError, err.Error())
	}
	if err := validation.StateSnapshot(s, target, cfg); err != nil {
		return deny(http.StatusForbidden, err.Error())
	}
	return withWarning(allow(nil), warning)
}

// blueGreen validates a FlinkBlueGreenDeployment: its own rules, then its
// template as the child FlinkDeployment <name>-blue would be validated,
// built as the controller would build it (docs/webhook.md).
func (v *Validator) blueGreen(req *admissionv1.AdmissionRequest, cfg config.Config) *admissionv1.AdmissionResponse {
	bg, old, resp := decodeObjects[v1beta1.FlinkBlueGreenDeployment](req)
	if resp != nil {
		return resp
	}
	if old != nil && (bg.DeletionTimestamp != nil || sameJSON(old.Spec, bg.Spec)) {
		return allow(nil)
	}
	res, err := validation.BlueGreenDeployment(bg, cfg)
	if err != nil {
		return deny(http.StatusForbidden, err.Error())
	}
	child := validation.BlueGreenChild(bg, validation.BlueChildSuffix)
	if _, err := cluster.Build(cluster.Input{Deployment: child, Spec: child.Spec, OperatorConfig: cfg, JobID: placeholderJobID, Native: cluster.NativeMode(child.Spec.Mode)}); err != nil {
		return deny(http.StatusForbidden, fmt.Sprintf("spec.template.spec (the spec of FlinkDeployment %s): %v", child.Name, err))
	}
	out := allowWarning("spec.configuration", res.Warnings)
	out.Warnings = append(out.Warnings, allowWarning("spec.template.spec.flinkConfiguration", res.Template.Warnings).Warnings...)
	return out
}

// resolveTarget looks up the job a snapshot refers to (and a session job's
// cluster); what is not found stays nil.
func (v *Validator) resolveTarget(s *v1beta1.FlinkStateSnapshot) (validation.Target, error) {
	var t validation.Target
	ref := s.Spec.JobReference
	if ref == nil || ref.Name == "" {
		return t, nil
	}
	ns := validation.JobReferenceNamespace(s)
	switch ref.Kind {
	case v1beta1.JobReferenceKindDeployment:
		dep, err := v.lookup.Deployment(ns, ref.Name)
		if err != nil && !apierrors.IsNotFound(err) {
			return t, fmt.Errorf("looking up FlinkDeployment %s/%s: %w", ns, ref.Name, err)
		}
		t.Deployment = dep
	case v1beta1.JobReferenceKindSessionJob:
		job, err := v.lookup.SessionJob(ns, ref.Name)
		if err != nil && !apierrors.IsNotFound(err) {
			return t, fmt.Errorf("looking up FlinkSessionJob %s/%s: %w", ns, ref.Name, err)
		}
		t.SessionJob = job
		if job != nil && job.Spec.DeploymentName != "" {
			dep, err := v.lookup.Deployment(ns, job.Spec.DeploymentName)
			if err != nil && !apierrors.IsNotFound(err) {
				return t, fmt.Errorf("looking up session cluster FlinkDeployment %s/%s: %w", ns, job.Spec.DeploymentName, err)
			}
			t.SessionCluster = dep
		}
	}
	// Any other kind finds nothing: "target not found", as upstream.
	return t, nil
}

// authorizeSnapshotRef authorizes a job's cross-namespace
// initialStateSnapshotRef when it is new: a reference that an earlier
// update introduced was authorized then, and whoever edits other fields
// later does not need the right. A new reference must also carry the
// mutating step's stamp (checkStamp); the warning says when it does not.
func (v *Validator) authorizeSnapshotRef(ctx context.Context, req *admissionv1.AdmissionRequest, cfg config.Config, kind string, obj metav1.Object, job, old *v1beta1.JobSpec) (string, *admissionv1.AdmissionResponse) {
	ref := initialSnapshotReference(kind, obj.GetNamespace(), job)
	if ref == nil {
		return "", nil
	}
	if prev := initialSnapshotReference(kind, obj.GetNamespace(), old); prev != nil && *prev == *ref {
		return "", nil
	}
	if resp := v.authorizeCrossNamespace(ctx, req, cfg, ref); resp != nil {
		return "", resp
	}
	return v.checkStamp(kind, obj, ref)
}

// withWarning adds warning, if any, to an admitting response.
func withWarning(resp *admissionv1.AdmissionResponse, warning string) *admissionv1.AdmissionResponse {
	if warning != "" {
		resp.Warnings = append(resp.Warnings, warning)
	}
	return resp
}
