package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Issue 20 item 12: numbers and enum-like strings the CRD lets through but
// that mean nothing. Every row changes one value of a valid spec; rows with
// want "" are the nearest values that must still pass, so a rule that is too
// strict fails as surely as one that is missing.
func TestDeploymentNumbers(t *testing.T) {
	type mut = func(*v1beta1.FlinkDeploymentSpec)
	i32 := func(v int32) *int32 { return &v }
	f64 := func(v float64) *float64 { return &v }
	both := func(ms ...mut) mut {
		return func(s *v1beta1.FlinkDeploymentSpec) {
			for _, m := range ms {
				m(s)
			}
		}
	}
	parallelism := func(v int32) mut { return func(s *v1beta1.FlinkDeploymentSpec) { s.Job.Parallelism = i32(v) } }
	jm := func(f func(*v1beta1.JobManagerSpec)) mut {
		return func(s *v1beta1.FlinkDeploymentSpec) {
			if s.JobManager == nil {
				s.JobManager = &v1beta1.JobManagerSpec{}
			}
			f(s.JobManager)
		}
	}
	tm := func(f func(*v1beta1.TaskManagerSpec)) mut {
		return func(s *v1beta1.FlinkDeploymentSpec) {
			if s.TaskManager == nil {
				s.TaskManager = &v1beta1.TaskManagerSpec{}
			}
			f(s.TaskManager)
		}
	}
	jmReplicas := func(v int32) mut { return jm(func(j *v1beta1.JobManagerSpec) { j.Replicas = i32(v) }) }
	tmReplicas := func(v int32) mut { return tm(func(t *v1beta1.TaskManagerSpec) { t.Replicas = i32(v) }) }
	addConf := func(kv ...string) mut {
		return func(s *v1beta1.FlinkDeploymentSpec) {
			base := []string{config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir}
			s.FlinkConfiguration = conf(append(base, kv...)...)
		}
	}
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	tmResources := func(requests, limits corev1.ResourceList) mut {
		return tm(func(t *v1beta1.TaskManagerSpec) {
			t.Resources = &corev1.ResourceRequirements{Requests: requests, Limits: limits}
		})
	}
	jmResources := func(requests, limits corev1.ResourceList) mut {
		return jm(func(j *v1beta1.JobManagerSpec) {
			j.Resources = &corev1.ResourceRequirements{Requests: requests, Limits: limits}
		})
	}
	session := func(s *v1beta1.FlinkDeploymentSpec) { s.Job = nil }

	for _, tc := range []struct {
		name   string
		change mut
		want   string
	}{
		// spec.job.parallelism (upstream's rule and message).
		{"parallelism -1", parallelism(-1), "Job parallelism must be larger than 0"},
		{"parallelism 0", parallelism(0), "Job parallelism must be larger than 0"},
		{"parallelism 1", parallelism(1), ""},
		{"parallelism unset", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.Parallelism = nil }, ""},
		{"parallelism -1, TaskManager replicas decide", both(parallelism(-1), tmReplicas(2)), ""},
		{"parallelism -1, TaskManagers scaled to zero", both(parallelism(-1), tmReplicas(0)), "Job parallelism must be larger than 0"},
		{"job rules come first", both(parallelism(-1), jmReplicas(0)), "Job parallelism must be larger than 0"},

		// spec.jobManager.replicas (upstream's rules and messages).
		{"JobManager replicas 0", jmReplicas(0), "JobManager replicas should not be configured less than one."},
		{"JobManager replicas -1", jmReplicas(-1), "JobManager replicas should not be configured less than one."},
		{"JobManager replicas 1", jmReplicas(1), ""},
		{"JobManager replicas 2 without HA", jmReplicas(2), "High availability should be enabled when starting standby JobManagers."},
		{"JobManager replicas 2 with HA type NONE", both(jmReplicas(2), addConf(keyHAType, "NONE")),
			"High availability should be enabled when starting standby JobManagers."},
		{"JobManager replicas 2 with HA", both(jmReplicas(2), addConf(keyHAType, "kubernetes")), ""},
		{"JobManager replicas 2 with the older HA key", both(jmReplicas(2), addConf(keyHATypeDeprecated, "kubernetes")), ""},
		{"session cluster JobManager replicas 0", both(session, jmReplicas(0)), "JobManager replicas should not be configured less than one."},

		// spec.taskManager.replicas [ours: 0 is scale-to-zero].
		{"TaskManager replicas -1", tmReplicas(-1), "spec.taskManager.replicas -1 must not be negative (0 scales the TaskManagers to zero)"},
		{"TaskManager replicas 0", tmReplicas(0), ""},
		{"session cluster TaskManager replicas -1", both(session, tmReplicas(-1)),
			"spec.taskManager.replicas -1 must not be negative (0 scales the TaskManagers to zero)"},

		// spec.*.resource.cpu [ours].
		{"JobManager cpu 0", jm(func(j *v1beta1.JobManagerSpec) { j.Resource = &v1beta1.ResourceSpec{CPU: f64(0)} }),
			"spec.jobManager.resource.cpu must be positive: 0"},
		{"TaskManager cpu -0.5", tm(func(t *v1beta1.TaskManagerSpec) { t.Resource = &v1beta1.ResourceSpec{CPU: f64(-0.5)} }),
			"spec.taskManager.resource.cpu must be positive: -0.5"},
		{"TaskManager cpu 0.25", tm(func(t *v1beta1.TaskManagerSpec) { t.Resource = &v1beta1.ResourceSpec{CPU: f64(0.25)} }), ""},
		{"TaskManager cpu unset", tm(func(t *v1beta1.TaskManagerSpec) { t.Resource = &v1beta1.ResourceSpec{Memory: "2g"} }), ""},

		// spec.*.resources (upstream's validateResourceRequirements, verbatim).
		{"JobManager requests cpu 0", jmResources(list("cpu", "0"), nil), "JobManager resource requirements requests cpu must be positive: 0"},
		{"TaskManager limits cpu -1", tmResources(nil, list("cpu", "-1")), "TaskManager resource requirements limits cpu must be positive: -1"},
		{"TaskManager requests memory 0", tmResources(list("memory", "0"), nil), "TaskManager resource requirements requests memory must be positive: 0"},
		{"TaskManager requests ephemeral-storage -1Gi", tmResources(list("ephemeral-storage", "-1Gi"), nil),
			"TaskManager resource requirements requests ephemeral-storage must not be negative: -1Gi"},
		{"TaskManager requests ephemeral-storage 0", tmResources(list("ephemeral-storage", "0"), nil), ""},
		{"TaskManager cpu request above limit", tmResources(list("cpu", "2"), list("cpu", "1")),
			"TaskManager resource requirements cpu request (2) must not exceed its limit (1)"},
		{"TaskManager memory request above limit", tmResources(list("memory", "2Gi"), list("memory", "1Gi")),
			"TaskManager resource requirements memory request (2Gi) must not exceed its limit (1Gi)"},
		{"TaskManager request equal to limit", tmResources(list("cpu", "1", "memory", "1Gi"), list("cpu", "1", "memory", "1Gi")), ""},
		{"TaskManager request below limit", tmResources(list("cpu", "500m"), list("cpu", "1")), ""},
		{"all problems at once, in order", tmResources(list("memory", "0", "cpu", "0"), list("cpu", "-1")),
			"TaskManager resource requirements requests cpu must be positive: 0; TaskManager resource requirements requests memory must be positive: 0; TaskManager resource requirements limits cpu must be positive: -1; TaskManager resource requirements cpu request (0) must not exceed its limit (-1)"},

		// spec.imagePullPolicy [ours: Kubernetes refuses any other value].
		{"imagePullPolicy Sometimes", func(s *v1beta1.FlinkDeploymentSpec) { s.ImagePullPolicy = "Sometimes" },
			`spec.imagePullPolicy "Sometimes": want Always, IfNotPresent or Never`},
		{"imagePullPolicy lower case", func(s *v1beta1.FlinkDeploymentSpec) { s.ImagePullPolicy = "always" },
			`spec.imagePullPolicy "always": want Always, IfNotPresent or Never`},
		{"imagePullPolicy IfNotPresent", func(s *v1beta1.FlinkDeploymentSpec) { s.ImagePullPolicy = "IfNotPresent" }, ""},
		{"imagePullPolicy Never", func(s *v1beta1.FlinkDeploymentSpec) { s.ImagePullPolicy = "Never" }, ""},
		{"imagePullPolicy Always", func(s *v1beta1.FlinkDeploymentSpec) { s.ImagePullPolicy = "Always" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := application("app").Spec
			tc.change(&spec)
			_, err := DeploymentSpec(&spec, nil, config.Defaults())
			checkErr(t, err, tc.want)
		})
	}
}

// A session job's parallelism is checked with or without its cluster:
// nothing about the cluster changes what a negative parallelism means.
func TestSessionJobParallelism(t *testing.T) {
	for _, tc := range []struct {
		name        string
		parallelism *int32
		want        string
	}{
		{"-1", ptr(int32(-1)), "Job parallelism must be larger than 0"},
		{"0", ptr(int32(0)), "Job parallelism must be larger than 0"},
		{"1", ptr(int32(1)), ""},
		{"unset", nil, ""},
	} {
		for _, cluster := range []*v1beta1.FlinkDeployment{nil, session("cluster")} {
			name := tc.name + map[bool]string{true: ", cluster not found", false: ", cluster found"}[cluster == nil]
			t.Run(name, func(t *testing.T) {
				j := sessionJob("job", "cluster")
				j.Spec.Job.Parallelism = tc.parallelism
				_, err := SessionJob(j, cluster, config.Defaults())
				checkErr(t, err, tc.want)
			})
		}
	}
}

func TestStateSnapshotNumbers(t *testing.T) {
	found := Target{Deployment: application("job")}
	backoff := func(v int32) func(*v1beta1.FlinkStateSnapshot) {
		return func(s *v1beta1.FlinkStateSnapshot) { s.Spec.BackoffLimit = &v }
	}
	imported := func(s *v1beta1.FlinkStateSnapshot) {
		s.Spec.Savepoint = &v1beta1.SavepointSpec{AlreadyExists: ptr(true), Path: "file:///sp/1"}
	}
	for _, tc := range []struct {
		name string
		snap *v1beta1.FlinkStateSnapshot
		want string
	}{
		{"backoffLimit -2", snapshot(backoff(-2)), "spec.backoffLimit -2: want -1 (retry until it succeeds), 0 (no retry) or the number of retries"},
		{"backoffLimit -1", snapshot(backoff(-1)), ""},
		{"backoffLimit 0", snapshot(backoff(0)), ""},
		{"backoffLimit 5", snapshot(backoff(5)), ""},
		{"backoffLimit -2 of a checkpoint", snapshot(asCheckpoint, backoff(-2)),
			"spec.backoffLimit -2: want -1 (retry until it succeeds), 0 (no retry) or the number of retries"},
		// An imported savepoint is never triggered, so never retried.
		{"backoffLimit -2 of an imported savepoint", snapshot(imported, backoff(-2)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, StateSnapshot(tc.snap, found, config.Defaults()), tc.want)
		})
	}
}
