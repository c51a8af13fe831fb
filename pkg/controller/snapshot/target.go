package snapshot

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// target is what a snapshot's job reference resolves to in the caches.
type target struct {
	ref       v1beta1.JobReference // with Namespace filled in
	found     bool
	deleting  bool                     // the job is being deleted: it never starts again
	cluster   *v1beta1.FlinkDeployment // owns the JobManager REST endpoint
	jobStatus v1beta1.JobStatus
	cfg       config.Config // the job's effective configuration
	// jobManager is how to reach the running cluster (pkg/controller/jobmanager);
	// version is its Flink version, which during an upgrade is the old one
	// until the new JobManager runs.
	jobManager jobmanager.Endpoint
	version    flink.Version
	// restorePaths are savepoints the job will restore from next; they are
	// never disposed [ours].
	restorePaths []string
}

func (t *target) running() bool { return t.found && t.jobStatus.State == v1beta1.JobStatusRunning }

// resolveTarget looks the referenced job up in the caches. A missing job is
// not an error (found=false); an unusable one (no cluster, bad config) is.
func (c *Controller) resolveTarget(s *v1beta1.FlinkStateSnapshot) (*target, error) {
	t := &target{}
	if s.Spec.JobReference == nil {
		return t, nil
	}
	t.ref = *s.Spec.JobReference
	t.ref.Namespace = snapshotrules.JobRefNamespace(s)

	var clusterName string
	var jobConfig *v1beta1.Configuration
	var initialSavepoint string
	var jobSpec *v1beta1.JobSpec
	switch t.ref.Kind {
	case v1beta1.JobReferenceKindDeployment:
		dep, err := c.Caches.Deployment(t.ref.Namespace, t.ref.Name)
		if apierrors.IsNotFound(err) {
			return t, nil
		} else if err != nil {
			return nil, err
		}
		t.found, t.cluster, t.jobStatus, jobSpec = true, dep, dep.Status.JobStatus, dep.Spec.Job
		t.deleting = dep.DeletionTimestamp != nil
	case v1beta1.JobReferenceKindSessionJob:
		job, err := c.Caches.SessionJob(t.ref.Namespace, t.ref.Name)
		if apierrors.IsNotFound(err) {
			return t, nil
		} else if err != nil {
			return nil, err
		}
		t.found, t.jobStatus, jobSpec = true, job.Status.JobStatus, job.Spec.Job
		t.deleting = job.DeletionTimestamp != nil
		clusterName, jobConfig = job.Spec.DeploymentName, job.Spec.FlinkConfiguration
		dep, err := c.Caches.Deployment(t.ref.Namespace, clusterName)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("session cluster FlinkDeployment %s/%s of %s not found", t.ref.Namespace, clusterName, snapshotrules.JobRefString(&t.ref))
		} else if err != nil {
			return nil, err
		}
		t.cluster = dep
	default:
		return t, nil
	}
	if jobSpec != nil {
		initialSavepoint = jobSpec.InitialSavepointPath
	}

	cfg, err := jobmanager.EffectiveConfig(c.CurrentConfig(), t.cluster.Spec.FlinkConfiguration)
	if err != nil {
		return nil, fmt.Errorf("configuration of FlinkDeployment %s/%s: %w", t.cluster.Namespace, t.cluster.Name, err)
	}
	if jobConfig != nil { // a session job's own settings win over its cluster's
		if cfg, err = jobmanager.EffectiveConfig(cfg, jobConfig); err != nil {
			return nil, fmt.Errorf("configuration of %s: %w", snapshotrules.JobRefString(&t.ref), err)
		}
	}
	t.cfg = cfg
	objs, err := c.JobManagers.Objects(t.cluster)
	if err != nil {
		return nil, err
	}
	if t.jobManager, err = jobmanager.Resolve(jobmanager.Cluster{Deployment: t.cluster, Config: cfg}.WithObjects(objs)); err != nil {
		return nil, err
	}
	t.version = t.jobManager.Version

	if p := t.jobStatus.UpgradeSavepointPath; p != "" {
		t.restorePaths = append(t.restorePaths, p)
	}
	// Until the job has been deployed once, initialSavepointPath is what it
	// will start from.
	if initialSavepoint != "" && t.jobStatus.JobID == "" {
		t.restorePaths = append(t.restorePaths, initialSavepoint)
	}
	return t, nil
}

// jobStatusOf extracts what about a job matters to its snapshots.
func jobStatusOf(obj any) v1beta1.JobStatus {
	switch o := obj.(type) {
	case *v1beta1.FlinkDeployment:
		return stripHistory(o.Status.JobStatus)
	case *v1beta1.FlinkSessionJob:
		return stripHistory(o.Status.JobStatus)
	}
	return v1beta1.JobStatus{}
}

// stripHistory keeps the part of a JobStatus snapshots depend on: not the
// legacy savepoint/checkpoint info, not the observation time.
func stripHistory(s v1beta1.JobStatus) v1beta1.JobStatus {
	s.SavepointInfo, s.CheckpointInfo, s.UpdateTime = nil, nil, ""
	return s
}

// flinkClient is a REST client for the JobManager of t's cluster, in the
// Flink version it runs (see resolveTarget).
func (c *Controller) flinkClient(t *target) (*flink.Client, error) {
	return c.dialer.Client(t.jobManager)
}
