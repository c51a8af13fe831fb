package validation

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// Target is what a snapshot's job reference resolved to. The caller looks
// the objects up (the webhook in its informer caches); nil means not found.
type Target struct {
	// Deployment is the referenced FlinkDeployment (kind FlinkDeployment).
	Deployment *v1beta1.FlinkDeployment
	// SessionJob is the referenced FlinkSessionJob (kind FlinkSessionJob).
	SessionJob *v1beta1.FlinkSessionJob
	// SessionCluster is the session job's FlinkDeployment
	// (spec.deploymentName in the job's namespace).
	SessionCluster *v1beta1.FlinkDeployment
}

// Found reports whether the referenced job exists.
func (t Target) Found() bool { return t.Deployment != nil || t.SessionJob != nil }

// JobReferenceNamespace is the namespace of the job a snapshot refers to:
// the reference's own namespace [ours], else the snapshot's.
func JobReferenceNamespace(s *v1beta1.FlinkStateSnapshot) string {
	if r := s.Spec.JobReference; r != nil && r.Namespace != "" {
		return r.Namespace
	}
	return s.Namespace
}

// CrossNamespaceReference reports whether the snapshot refers to a job in
// another namespace, and which. Such a reference is a privilege (the
// snapshot triggers, and may dispose, another namespace's savepoints), so the
// caller must check that the operator allows it and that the requesting user
// may update the referenced job; the rules here do not.
func CrossNamespaceReference(s *v1beta1.FlinkStateSnapshot) (namespace string, cross bool) {
	r := s.Spec.JobReference
	if r == nil || r.Namespace == "" || r.Namespace == s.Namespace {
		return "", false
	}
	return r.Namespace, true
}

// StateSnapshot checks a FlinkStateSnapshot against its target, first error
// wins. The first rules are upstream's (messages verbatim):
// exactly one of savepoint and checkpoint; an alreadyExists savepoint needs
// nothing more; a job reference; a target that exists while the snapshot
// has not been triggered. Ours follow: a backoffLimit of -1 or more
// (numbers.go); then, only before the trigger, a savepoint needs a directory (spec.savepoint.path or the
// job's configured savepoint directory) and a checkpoint needs Flink 1.17 or
// newer, so a snapshot that cannot succeed is refused at creation instead of
// failing later in its status.
func StateSnapshot(s *v1beta1.FlinkStateSnapshot, target Target, operator config.Config) error {
	spec := &s.Spec
	if (spec.Savepoint == nil) == (spec.Checkpoint == nil) {
		return errors.New("Exactly one of checkpoint or savepoint configurations has to be set.")
	}
	if sp := spec.Savepoint; sp != nil && sp.AlreadyExists != nil && *sp.AlreadyExists {
		return nil
	}
	if err := snapshotBackoffLimit(s); err != nil {
		return err
	}
	ref := spec.JobReference
	if ref == nil || strings.TrimSpace(ref.Name) == "" {
		return errors.New("Job reference must be supplied for this snapshot")
	}
	// Once the operator took the snapshot on, its job may come and go: the
	// snapshot's status says what happened, admission has nothing to add.
	if s.Status.State != "" && s.Status.State != v1beta1.SnapshotTriggerPending {
		return nil
	}
	if !target.Found() {
		return fmt.Errorf("Target for snapshot %s/%s was not found", JobReferenceNamespace(s), ref.Name)
	}
	if spec.Savepoint != nil {
		return savepointDirectory(spec.Savepoint, target, operator)
	}
	return checkpointVersion(target)
}

// savepointDirectory: a savepoint that is not alreadyExists is written to
// spec.savepoint.path, else to the job's configured savepoint directory.
// Without either Flink refuses the trigger, so say so now.
func savepointDirectory(sp *v1beta1.SavepointSpec, t Target, operator config.Config) error {
	if strings.TrimSpace(sp.Path) != "" {
		return nil
	}
	var where string
	var cfg config.Config
	var err error
	switch {
	case t.Deployment != nil:
		where = fmt.Sprintf("FlinkDeployment %s/%s", t.Deployment.Namespace, t.Deployment.Name)
		cfg, _, err = DeploymentConfig(operator, &t.Deployment.Spec)
	case t.SessionJob != nil:
		job := t.SessionJob
		where = fmt.Sprintf("FlinkSessionJob %s/%s", job.Namespace, job.Name)
		if t.SessionCluster != nil {
			where += fmt.Sprintf(" or of its session cluster FlinkDeployment %s/%s", t.SessionCluster.Namespace, t.SessionCluster.Name)
		} else {
			where += fmt.Sprintf(" (its session cluster FlinkDeployment %s/%s was not found)", job.Namespace, job.Spec.DeploymentName)
		}
		cfg, _, err = SessionJobConfig(operator, t.SessionCluster, &job.Spec)
	}
	if err != nil {
		return fmt.Errorf("cannot find the savepoint directory of %s: %w", where, err)
	}
	if _, ok := config.SavepointDir(cfg); ok {
		return nil
	}
	return fmt.Errorf("This savepoint has no target directory: set spec.savepoint.path, or set %s (or the older %s) in the flinkConfiguration of %s or in the operator configuration",
		config.FlinkSavepointDir, config.FlinkSavepointDirDeprecated, where)
}

// checkpointVersion: Flink has a REST call to trigger a checkpoint only
// from 1.17 on; the version is the one of the cluster the job runs on.
func checkpointVersion(t Target) error {
	cluster := t.Deployment
	if t.SessionJob != nil {
		cluster = t.SessionCluster
		if cluster == nil {
			return fmt.Errorf("Checkpoints need Flink %s or newer, and the Flink version of FlinkSessionJob %s/%s is unknown: its session cluster FlinkDeployment %s/%s was not found",
				flink.V1_17, t.SessionJob.Namespace, t.SessionJob.Name, t.SessionJob.Namespace, t.SessionJob.Spec.DeploymentName)
		}
	}
	version, err := flink.ParseVersion(string(cluster.Spec.FlinkVersion))
	if err != nil {
		return fmt.Errorf("Checkpoints need Flink %s or newer, and the Flink version of FlinkDeployment %s/%s is unknown: spec.flinkVersion %q",
			flink.V1_17, cluster.Namespace, cluster.Name, cluster.Spec.FlinkVersion)
	}
	if !version.SupportsCheckpointTrigger() {
		return fmt.Errorf("Checkpoints need Flink %s or newer, but FlinkDeployment %s/%s runs Flink %s (spec.flinkVersion %s): take a savepoint instead",
			flink.V1_17, cluster.Namespace, cluster.Name, version, cluster.Spec.FlinkVersion)
	}
	return nil
}

// StateSnapshotUpdate checks an update of a snapshot. Its spec is immutable
// [ours]: the CRD says so in CEL (self == oldSelf), and this says which
// part changed, so the webhook refuses with a pointed message and the rule
// holds where CEL does not run. A change means a new snapshot.
func StateSnapshotUpdate(old, cur *v1beta1.FlinkStateSnapshot) error {
	if (old.Spec.Savepoint == nil) != (cur.Spec.Savepoint == nil) || (old.Spec.Checkpoint == nil) != (cur.Spec.Checkpoint == nil) {
		return errors.New("spec.savepoint and spec.checkpoint cannot be switched after creation: create a new FlinkStateSnapshot instead")
	}
	oldRef, curRef := normalizedReference(old), normalizedReference(cur)
	if !reflect.DeepEqual(oldRef, curRef) {
		return errors.New("spec.jobReference cannot be changed after creation: create a new FlinkStateSnapshot instead")
	}
	oldSpec, curSpec := old.Spec, cur.Spec
	oldSpec.JobReference, curSpec.JobReference = nil, nil
	if !reflect.DeepEqual(oldSpec, curSpec) {
		return errors.New("spec is immutable: create a new FlinkStateSnapshot instead")
	}
	return nil
}

// normalizedReference spells the default namespace out, so writing the
// snapshot's own namespace explicitly is not a change.
func normalizedReference(s *v1beta1.FlinkStateSnapshot) *v1beta1.JobReference {
	if s.Spec.JobReference == nil {
		return nil
	}
	r := *s.Spec.JobReference
	r.Namespace = JobReferenceNamespace(s)
	return &r
}
