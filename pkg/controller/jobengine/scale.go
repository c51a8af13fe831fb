package jobengine

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// In-place scaling (kubernetes.operator.job.upgrade.inplace-scaling.enabled,
// upstream's NativeFlinkService.scale): a spec change of only
// pipeline.jobvertex-parallelism-overrides is applied to the running job
// through Flink's resource-requirements REST API (Flink 1.18+, the adaptive
// scheduler), which rescales the job without a restart and under the same
// job id. The new spec is then recorded as deployed, as upstream's
// ReconciliationUtils.updateStatusForDeployedSpec does, in the sync's one
// status write; whatever cannot be scaled so goes through the upgrade.

// scaleOnly reports whether current differs from recorded only in the
// parallelism overrides (and what never needs a redeploy: the nonces, the
// operator-only keys).
func scaleOnly[S Spec[S]](recorded, current S) bool {
	ro, rrest, err1 := splitOverrides(recorded.GetFlinkConfiguration())
	co, crest, err2 := splitOverrides(current.GetFlinkConfiguration())
	if err1 != nil || err2 != nil || maps.Equal(ro, co) || !maps.Equal(rrest, crest) {
		return false
	}
	// Both are copies: only their configuration pointers are dropped.
	recorded, current = recorded.WithFlinkConfiguration(nil), current.WithFlinkConfiguration(nil)
	return lifecycle.SameSpec(withoutNonces(recorded), withoutNonces(current))
}

// splitOverrides flattens a spec's flinkConfiguration into its parallelism
// overrides (by vertex id) and the rest.
func splitOverrides(c *v1beta1.Configuration) (overrides, rest map[string]string, err error) {
	values, err := c.Values()
	if err != nil {
		return nil, nil, err
	}
	flat, err := config.Flatten(values)
	if err != nil {
		return nil, nil, err
	}
	overrides, err = parallelismOverrides(flat)
	if err != nil {
		return nil, nil, err
	}
	rest = maps.Clone(flat)
	maps.DeleteFunc(rest, func(k, _ string) bool { return config.IsParallelismOverridesKey(k) || config.OperatorOnlyKey(k) })
	return overrides, rest, nil
}

// parallelismOverrides reads pipeline.jobvertex-parallelism-overrides from
// a flat configuration: Flink's map syntax "<id>:<n>,<id>:<n>", or one key
// per vertex when it was written as a nested map. Values are the
// parallelism in decimal.
func parallelismOverrides(flat map[string]string) (map[string]string, error) {
	entries, err := config.Config(flat).Map(config.FlinkParallelismOverrides)
	if err != nil {
		return nil, err
	}
	for k, v := range flat {
		if k != config.FlinkParallelismOverrides && config.IsParallelismOverridesKey(k) {
			if entries == nil {
				entries = map[string]string{}
			}
			entries[strings.TrimPrefix(k, config.FlinkParallelismOverrides+".")] = v
		}
	}
	out := make(map[string]string, len(entries))
	for vertex, value := range entries {
		vertex, value = strings.Trim(strings.TrimSpace(vertex), `'"`), strings.Trim(strings.TrimSpace(value), `'"`)
		n, err := strconv.Atoi(value)
		if vertex == "" || err != nil || n < 1 {
			return nil, fmt.Errorf("%s: invalid entry %q:%q", config.FlinkParallelismOverrides, vertex, value)
		}
		out[vertex] = strconv.Itoa(n)
	}
	return out, nil
}

// scaleInPlace applies a spec change classified as an upgrade to the
// running job without a restart when it can (upstream's rules: a job, the
// option on, Flink 1.18+, the adaptive scheduler, a job neither terminal
// nor being deployed, overrides before or after, none removed), and then
// records spec (with cfg) as deployed. false: the change is an upgrade.
//
// The PUT comes before the status write that records the spec: it sets
// absolute bounds, so a crash between the two repeats the same PUT (or
// finds nothing left to change) on the next sync, which then records the
// spec.
func (s *State[T, S]) scaleInPlace(ctx context.Context, d Driver[S], spec S, cfg config.Config) bool {
	st := s.Status()
	js := st.Job
	switch {
	case !d.InPlaceScaling(),
		st.Reconciliation.State != v1beta1.ReconciliationDeployed,
		jobOf(&s.recorded.Spec) == nil || jobOf(&spec) == nil,
		!scaleOnly(s.recorded.Spec, spec):
		return false
	}
	log := s.log.WithValues("jobId", js.JobID)
	if on, err := s.Cfg.Bool(config.KeyJobUpgradeInPlaceScalingEnabled); err != nil || !on {
		return false
	}
	if !strings.EqualFold(strings.TrimSpace(s.Cfg.String("jobmanager.scheduler")), "adaptive") {
		log.V(1).Info("In-place scaling needs the adaptive scheduler (jobmanager.scheduler: adaptive); upgrading")
		return false
	}
	if s.Client == nil || s.Client.Version().Before(flink.V1_18) {
		log.V(1).Info("In-place scaling needs a JobManager of Flink 1.18 or newer that answers; upgrading")
		return false
	}
	if state := flink.JobStatus(js.State); js.JobID == "" || js.State == "" || js.State == v1beta1.JobStatusReconciling || state.IsTerminal() {
		log.Info("A job that is terminal or being deployed cannot be scaled in place; upgrading", "jobState", js.State)
		return false
	}
	oldOverrides, err1 := parallelismOverrides(s.Cfg)
	newOverrides, err2 := parallelismOverrides(cfg)
	if err1 != nil || err2 != nil || len(oldOverrides) == 0 && len(newOverrides) == 0 {
		return false
	}
	current, err := s.Client.JobResourceRequirements(ctx, js.JobID)
	if err != nil {
		log.Error(err, "Cannot read the job's resource requirements; upgrading instead of scaling in place")
		return false
	}
	target := make(flink.ResourceRequirements, len(current))
	changed := false
	for vertex, req := range current {
		override, set := newOverrides[vertex]
		if !set {
			if _, was := oldOverrides[vertex]; was {
				log.Info("A parallelism override was removed; upgrading", "vertex", vertex)
				return false
			}
			target[vertex] = req
			continue
		}
		upper, _ := strconv.Atoi(override) // checked by parallelismOverrides
		// Upper bound: the target (anything higher would undo a scale
		// down). The lower bound only goes down with it: raising it could
		// fail the job when the slots cannot be had (upstream's rule).
		p := flink.Parallelism{LowerBound: min(upper, req.Parallelism.LowerBound), UpperBound: upper}
		if p != req.Parallelism {
			changed = true
		}
		target[vertex] = flink.VertexResourceRequirements{Parallelism: p}
	}
	if changed {
		if err := s.Client.UpdateJobResourceRequirements(ctx, js.JobID, target); err != nil {
			log.Error(err, "Cannot update the job's resource requirements; upgrading instead of scaling in place")
			return false
		}
		log.Info("In-place scaling triggered", "overrides", cfg.String(config.FlinkParallelismOverrides))
	}

	// Recorded as deployed, like recordSpecChange keeping the manual
	// snapshot nonces as they were (a nonce changed with the overrides is
	// honoured by the next sync).
	spec = spec.Copy()
	if job, rec := jobOf(&spec), jobOf(&s.recorded.Spec); job != nil && rec != nil {
		job.SavepointTriggerNonce, job.CheckpointTriggerNonce = rec.SavepointTriggerNonce, rec.CheckpointTriggerNonce
	}
	encoded, err := lifecycle.Encode(spec, false)
	if err != nil {
		log.Error(err, "Cannot record the scaled spec")
		return false
	}
	st.Reconciliation.LastReconciledSpec = encoded
	st.Reconciliation.ReconciliationTimestamp = s.now.UnixMilli()
	s.recorded = &lifecycle.Reconciled[S]{Spec: spec, Meta: lifecycle.Meta{APIVersion: s.recorded.Meta.APIVersion}}
	s.Cfg = cfg
	// Upstream reports every spec change, a scale included, as SpecChanged
	// before its Scaling event (scripts and alerts wait for both).
	s.Event(corev1.EventTypeNormal, reasons.ReasonSpecChanged, "Spec changed, scaling in place (%s: %s)",
		config.FlinkParallelismOverrides, cfg.String(config.FlinkParallelismOverrides))
	s.Event(corev1.EventTypeNormal, reasons.ReasonScaling, "In-place scaling triggered")
	return true
}
