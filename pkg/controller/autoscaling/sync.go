package autoscaling

import (
	"context"
	"errors"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/autoscaler/store"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// FaultDecisionRecorded is the fault point (jobengine.Engine.Fault) right
// after a scaling decision is written to the autoscaler ConfigMap and
// before the sync applies it.
const FaultDecisionRecorded = "autoscaler-decision-recorded"

// Sync runs the autoscaler in a sync of a job resource (a FlinkDeployment
// with a job, a FlinkSessionJob) after it observed the job, and overlays
// the parallelism overrides in force on the sync's spec, before Reconcile
// applies the spec as usual. Metrics are collected and a decision made
// only while the job runs its recorded spec, stable; the overlay applies
// at every sync, so that an upgrade in flight keeps the spec it started
// with.
func Sync[T jobengine.Object[T, S], S jobengine.Spec[S]](ctx context.Context, r *Runner, st *jobengine.State[T, S]) error {
	obj := st.Obj()
	job := obj.CurrentSpec().GetJob()
	if job == nil {
		return nil // a session cluster: its jobs are FlinkSessionJobs
	}
	base := st.Base().JobResourceStatus()
	running := st.Recorded() != nil && st.Client != nil &&
		base.Reconciliation.State == v1beta1.ReconciliationDeployed &&
		base.Job.State == v1beta1.JobStatusRunning &&
		*base.Lifecycle == v1beta1.LifecycleStable
	var nonce int64
	if job.AutoscalerResetNonce != nil {
		nonce = *job.AutoscalerResetNonce
	}
	out, err := r.Run(ctx, Input{
		Owner:    obj,
		OwnerRef: *metav1.NewControllerRef(obj, v1beta1.SchemeGroupVersion.WithKind(string(obj.JobReferenceKind()))),
		Conf:     st.Cfg, Client: st.Client, JobID: base.Job.JobID, Running: running,
		ResetNonce: nonce, Now: st.Now(),
	})
	switch {
	case errors.Is(err, ErrStore):
		// What the autoscaler gave cannot be read: the job keeps what it
		// runs now, never its unscaled spec.
		st.Event(corev1.EventTypeWarning, reasons.ReasonAutoscalerError, "%v", err)
		return st.OverlayParallelism(recordedOverrides(st), nil)
	case err != nil:
		st.Event(corev1.EventTypeWarning, reasons.ReasonAutoscalerError, "%v", err)
	}
	if out.Scaled {
		// Recorded in the ConfigMap, not yet applied: the next operator
		// must apply it once (crash tests stop here).
		st.Fault(FaultDecisionRecorded)
	}
	st.RequeueWithin(out.Next)
	if out.Report != "" {
		st.Event(corev1.EventTypeNormal, reasons.ReasonScalingReport, "%s", out.Report)
	}
	return st.OverlayParallelism(out.Overrides, out.Excluded)
}

// recordedOverrides are the parallelism overrides of the spec the job runs.
func recordedOverrides[T jobengine.Object[T, S], S jobengine.Spec[S]](st *jobengine.State[T, S]) map[string]int {
	if st.Recorded() == nil {
		return nil
	}
	values, err := st.Recorded().Spec.GetFlinkConfiguration().Values()
	if err != nil {
		return nil
	}
	flat, err := config.Flatten(values)
	if err != nil {
		return nil
	}
	overrides, err := store.ParseOverrides(flat[config.FlinkParallelismOverrides])
	if err != nil {
		return nil
	}
	for k, v := range flat {
		if p, err := strconv.Atoi(v); err == nil && k != config.FlinkParallelismOverrides && config.IsParallelismOverridesKey(k) {
			overrides[k[len(config.FlinkParallelismOverrides)+1:]] = p
		}
	}
	return overrides
}
