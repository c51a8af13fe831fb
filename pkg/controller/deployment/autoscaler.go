package deployment

import (
	"context"
	"errors"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/autoscaler/store"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/autoscaling"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// autoscale runs the job autoscaler of an application deployment
// (pkg/controller/autoscaling) and overlays the parallelism overrides in
// force on this sync's spec, before Reconcile applies the spec as usual.
// Metrics are collected and a decision made only while the job runs its
// recorded spec, stable; the overlay applies at every sync, so that an
// upgrade in flight keeps the spec it started with.
func (c *Controller) autoscale(ctx context.Context, sc *syncState) error {
	d := sc.Obj()
	if d.Spec.Job == nil {
		return nil // a session cluster: its jobs are FlinkSessionJobs
	}
	base := sc.Base().Status
	running := sc.Recorded() != nil && sc.Client != nil &&
		base.ReconciliationStatus.State == v1beta1.ReconciliationDeployed &&
		base.JobStatus.State == v1beta1.JobStatusRunning &&
		base.LifecycleState == v1beta1.LifecycleStable
	var nonce int64
	if n := d.Spec.Job.AutoscalerResetNonce; n != nil {
		nonce = *n
	}
	out, err := c.autoscaler.Run(ctx, autoscaling.Input{
		Owner:    d,
		OwnerRef: *metav1.NewControllerRef(d, v1beta1.SchemeGroupVersion.WithKind("FlinkDeployment")),
		Conf:     sc.Cfg, Client: sc.Client, JobID: base.JobStatus.JobID, Running: running,
		ResetNonce: nonce, Now: sc.Now(),
	})
	switch {
	case errors.Is(err, autoscaling.ErrStore):
		// What the autoscaler gave cannot be read: the job keeps what it
		// runs now, never its unscaled spec.
		sc.Event(corev1.EventTypeWarning, reasons.ReasonAutoscalerError, "%v", err)
		return sc.OverlayParallelism(recordedOverrides(sc), nil)
	case err != nil:
		sc.Event(corev1.EventTypeWarning, reasons.ReasonAutoscalerError, "%v", err)
	}
	if out.Report != "" {
		sc.Event(corev1.EventTypeNormal, reasons.ReasonScalingReport, "%s", out.Report)
	}
	return sc.OverlayParallelism(out.Overrides, out.Excluded)
}

// recordedOverrides are the parallelism overrides of the spec the job runs.
func recordedOverrides(sc *syncState) map[string]int {
	if sc.Recorded() == nil {
		return nil
	}
	values, err := sc.Recorded().Spec.FlinkConfiguration.Values()
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
