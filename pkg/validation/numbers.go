package validation

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Numbers and enum-like strings the CRD schema lets through but that mean
// nothing (issue 20 item 12). Upstream's CRDs have no minimums here and its
// DefaultValidator rejects these values, so they are checked here, shared by
// the webhook and the controllers (a clear status.error and a
// ValidationError event), and not in the CRD: a CRD minimum would reject at
// apply time manifests that upstream's CRD accepts. Messages are upstream's
// where it has the rule.

// Flink's high-availability keys, as upstream's
// HighAvailabilityMode.isHighAvailabilityModeActivated reads them.
const (
	keyHAType           = "high-availability.type"
	keyHATypeDeprecated = "high-availability"
)

// jobParallelism: upstream rejects a parallelism below 1 unless
// spec.taskManager.replicas decides it (then parallelism is ignored, in
// upstream and in pkg/cluster alike). Unset is fine here [ours]: the job runs
// at parallelism.default, where upstream's int field would read 0 and be
// refused.
func jobParallelism(job *v1beta1.JobSpec, tmReplicasDecide bool) error {
	if job.Parallelism != nil && *job.Parallelism < 1 && !tmReplicasDecide {
		return errors.New("Job parallelism must be larger than 0")
	}
	return nil
}

// tmReplicasDecide reports whether spec.taskManager.replicas sets the job's
// parallelism (replicas × slots), as pkg/cluster builds it: only a positive
// count does; 0 (scaled to zero) falls back to the job's parallelism.
func tmReplicasDecide(spec *v1beta1.FlinkDeploymentSpec) bool {
	tm := spec.TaskManager
	return tm != nil && tm.Replicas != nil && *tm.Replicas > 0
}

// components checks spec.jobManager and spec.taskManager: replicas, cpu and
// the Kubernetes resource requirements, and spec.imagePullPolicy. Memory
// sizes and slots are pkg/cluster's (it parses them to build the cluster and
// refuses what it cannot use; callers build right after validating).
func components(spec *v1beta1.FlinkDeploymentSpec, cfg config.Config) error {
	switch corev1.PullPolicy(spec.ImagePullPolicy) {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		// Kubernetes refuses the Deployment with any other value, so the
		// cluster could never start.
		return fmt.Errorf("spec.imagePullPolicy %q: want Always, IfNotPresent or Never", spec.ImagePullPolicy)
	}
	if jm := spec.JobManager; jm != nil {
		if err := resourceCPU("spec.jobManager", jm.Resource); err != nil {
			return err
		}
		if err := resourceRequirements("JobManager", jm.Resources); err != nil {
			return err
		}
		if jm.Replicas != nil {
			if *jm.Replicas < 1 {
				return errors.New("JobManager replicas should not be configured less than one.")
			}
			// Standby JobManagers without HA are independent JobManagers,
			// each running the job.
			if *jm.Replicas > 1 && !haEnabled(cfg) {
				return errors.New("High availability should be enabled when starting standby JobManagers.")
			}
		}
	}
	if tm := spec.TaskManager; tm != nil {
		if err := resourceCPU("spec.taskManager", tm.Resource); err != nil {
			return err
		}
		if err := resourceRequirements("TaskManager", tm.Resources); err != nil {
			return err
		}
		// [ours] 0 is allowed: the scale subresource may scale the
		// TaskManagers to zero (upstream refuses below 1).
		if tm.Replicas != nil && *tm.Replicas < 0 {
			return fmt.Errorf("spec.taskManager.replicas %d must not be negative (0 scales the TaskManagers to zero)", *tm.Replicas)
		}
	}
	return nil
}

// haEnabled is upstream's isHighAvailabilityModeActivated: a
// high-availability type other than NONE.
func haEnabled(cfg config.Config) bool {
	t := strings.TrimSpace(cfg[keyHAType])
	if t == "" {
		t = strings.TrimSpace(cfg[keyHATypeDeprecated])
	}
	return t != "" && !strings.EqualFold(t, "NONE")
}

// resourceCPU: a CPU amount of 0 or less in Flink's terms
// (spec.*.resource.cpu) used to be dropped silently (no request at all);
// negative ones are refused by pkg/cluster too. Upstream has no rule for it
// (Flink's native integration refuses it when the pod is built).
func resourceCPU(field string, res *v1beta1.ResourceSpec) error {
	if res == nil || res.CPU == nil || *res.CPU > 0 {
		return nil
	}
	return fmt.Errorf("%s.resource.cpu must be positive: %v", field, *res.CPU)
}

// resourceRequirements is upstream's validateResourceRequirements for
// spec.*.resources, messages verbatim: cpu and memory must be positive,
// other resources not negative, and a request must not exceed its limit
// (Kubernetes refuses such a pod). All problems are reported at once, joined
// by "; ", requests before limits, resources in name order.
func resourceRequirements(component string, reqs *corev1.ResourceRequirements) error {
	if reqs == nil {
		return nil
	}
	var errs []string
	for _, side := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", reqs.Requests}, {"limits", reqs.Limits}} {
		keys := make([]string, 0, len(side.list))
		for k := range side.list {
			keys = append(keys, string(k))
		}
		slices.Sort(keys)
		for _, k := range keys {
			q := side.list[corev1.ResourceName(k)]
			switch corev1.ResourceName(k) {
			case corev1.ResourceCPU, corev1.ResourceMemory:
				if q.Sign() <= 0 {
					errs = append(errs, fmt.Sprintf("%s resource requirements %s %s must be positive: %s", component, side.name, k, quantity(q)))
				}
			default:
				if q.Sign() < 0 {
					errs = append(errs, fmt.Sprintf("%s resource requirements %s %s must not be negative: %s", component, side.name, k, quantity(q)))
				}
			}
		}
	}
	for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := reqs.Requests[k]
		limit, okLimit := reqs.Limits[k]
		if okReq && okLimit && req.Cmp(limit) > 0 {
			errs = append(errs, fmt.Sprintf("%s resource requirements %s request (%s) must not exceed its limit (%s)", component, k, quantity(req), quantity(limit)))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func quantity(q resource.Quantity) string { return q.String() }

// snapshotBackoffLimit: -1 means unlimited retries, 0 none, N that many.
// The CRD has minimum -1 [ours]; this holds where its schema did not run
// (the operator would otherwise read -5 as unlimited).
func snapshotBackoffLimit(s *v1beta1.FlinkStateSnapshot) error {
	if b := s.Spec.BackoffLimit; b != nil && *b < -1 {
		return fmt.Errorf("spec.backoffLimit %d: want -1 (retry until it succeeds), 0 (no retry) or the number of retries", *b)
	}
	return nil
}
