package deployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/controller/snapshotref"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// firstDeploy records the first valid spec and deploys it: from
// spec.job.initialSavepointPath or the snapshot spec.job.initialStateSnapshotRef
// names if set (also recorded as upgradeSavepointPath, which the snapshot
// controller then never disposes), else from empty state. A job created suspended is only recorded.
func (c *Controller) firstDeploy(ctx context.Context, sc *syncState) error {
	st := &sc.Obj.Status
	st.ObservedGeneration = sc.Obj.Generation
	v, err := c.validate(sc.Obj, sc.Obj.Spec, nil)
	if err != nil {
		sc.Fail(jobengine.ReasonValidationError, "%v", err)
		return nil
	}
	var restore string
	if job := v.spec.Job; job != nil {
		restore = strings.TrimSpace(job.InitialSavepointPath)
		if job.InitialStateSnapshotRef != nil {
			// Resolved before anything is recorded: a reference that cannot
			// be used deploys nothing, never a job from empty state.
			if restore, err = c.snapshotRefPath(sc.Obj, job.InitialStateSnapshotRef); err != nil {
				sc.Fail(jobengine.ReasonValidationError, "%v", err)
				sc.RequeueWithin(sc.ProgressInterval())
				return nil
			}
		}
	}
	encoded, err := lifecycle.Encode(v.spec, true)
	if err != nil {
		return err
	}
	sc.Recorded = &reconciledSpec{Spec: v.spec, Meta: lifecycle.Meta{APIVersion: v1beta1.SchemeGroupVersion.String(), FirstDeployment: true}}
	sc.Cfg = v.cfg
	st.ReconciliationStatus = v1beta1.ReconciliationStatus{
		State:                   v1beta1.ReconciliationUpgrading,
		LastReconciledSpec:      encoded,
		ReconciliationTimestamp: sc.Now.UnixMilli(),
	}
	if job := v.spec.Job; job != nil {
		st.JobStatus.UpgradeSavepointPath = restore
		st.JobStatus.State = v1beta1.JobStatusSuspended // nothing runs yet
	}
	return c.continueUpgrade(ctx, sc)
}

// startUpgrade records the intent to apply a changed spec (the write-ahead
// log entry, jobengine.BeginUpgrade) together with what the stop of the old
// job needs, then goes as far as one status write allows.
func (c *Controller) startUpgrade(ctx context.Context, sc *syncState, v *validated, change jobengine.Change) error {
	sc.Obj.Status.ObservedGeneration = sc.Obj.Generation
	if upgrading, err := sc.RecordSpecChange(v.spec, change); err != nil || !upgrading {
		return err
	}
	sc.Cfg = v.cfg
	if err := sc.BeginUpgrade(ctx, change, sc.refPath); err != nil {
		return err
	}
	return c.continueUpgrade(ctx, sc)
}

// continueUpgrade does the next step of the upgrade the log records:
// stop the old job keeping its state, tear the old cluster down, then
// deploy the recorded spec (or settle as suspended).
func (c *Controller) continueUpgrade(ctx context.Context, sc *syncState) error {
	st := &sc.Obj.Status
	if sc.Recorded.Spec.Job != nil && st.JobStatus.State != v1beta1.JobStatusSuspended && st.JobStatus.JobID != "" {
		return c.stopJob(ctx, sc)
	}
	if c.teardown(sc) {
		return nil
	}
	if jobengine.JobSuspended(&sc.Recorded.Spec) {
		st.ReconciliationStatus.State = v1beta1.ReconciliationDeployed
		st.JobStatus.State = v1beta1.JobStatusSuspended
		st.JobManagerDeploymentStatus = v1beta1.JobManagerMissing
		st.ClusterInfo = nil
		what := "empty state"
		if p := st.JobStatus.UpgradeSavepointPath; p != "" && jobengine.UpgradeMode(&sc.Recorded.Spec) != v1beta1.UpgradeModeStateless {
			what = p
		}
		sc.Event(corev1.EventTypeNormal, jobengine.ReasonSuspended, "Job suspended and its cluster deleted; resuming restores from %s", what)
		return nil
	}
	return c.deploy(ctx, sc)
}

// deploy records the new cluster (job id, restore point) as deployed and
// then creates its objects. Restore point: upgradeSavepointPath, which every
// path into here has set (initialSavepointPath, the upgrade savepoint, the
// last checkpoint, or "" for stateless). The job id is new unless the
// upgrade mode is last-state, where upstream keeps it (HA metadata is keyed
// by it).
func (c *Controller) deploy(_ context.Context, sc *syncState) error {
	st := &sc.Obj.Status
	spec := sc.Recorded.Spec
	jobID, restore := "", ""
	if spec.Job != nil {
		jobID = st.JobStatus.JobID
		if jobengine.UpgradeMode(&spec) != v1beta1.UpgradeModeLastState || jobID == "" {
			jobID = newJobID(string(sc.Obj.UID), jobID, sc.Obj.Generation)
		}
		restore = st.JobStatus.UpgradeSavepointPath
	}
	built, err := c.build(sc, spec, jobID, restore)
	if err != nil {
		sc.Fail(jobengine.ReasonUpgradeFailed, "Cannot build the Flink cluster: %v", err)
		sc.RequeueWithin(jobengine.RetryFailed)
		return nil
	}
	st.ReconciliationStatus.State = v1beta1.ReconciliationDeployed
	st.ReconciliationStatus.ReconciliationTimestamp = sc.Now.UnixMilli()
	prev := st.JobStatus
	st.JobStatus = v1beta1.JobStatus{
		JobID:                jobID,
		UpgradeSavepointPath: restore,
		SavepointInfo:        prev.SavepointInfo,
		CheckpointInfo:       prev.CheckpointInfo,
	}
	st.ClusterInfo = nil
	st.JobManagerDeploymentStatus = v1beta1.JobManagerDeploying
	if spec.Job != nil {
		st.JobStatus.State = v1beta1.JobStatusReconciling
		from := "empty state"
		if restore != "" {
			from = restore
		}
		sc.Event(corev1.EventTypeNormal, jobengine.ReasonSubmit, "Deploying job %s from %s", jobID, from)
	} else {
		sc.Event(corev1.EventTypeNormal, jobengine.ReasonSubmit, "Deploying session cluster")
	}
	if err := c.ensureObjects(sc, built, true); err != nil {
		return err
	}
	sc.RequeueWithin(sc.ProgressInterval())
	return nil
}

// steady keeps a deployed cluster as recorded: objects that went missing or
// were changed are repaired (drift), the spec is marked stable once the job
// runs, and the cluster is looked at again soon or late depending on
// whether it is settled.
func (c *Controller) steady(ctx context.Context, sc *syncState) error {
	st := &sc.Obj.Status
	spec := sc.Recorded.Spec
	if jobengine.JobSuspended(&spec) {
		return nil // nothing runs; resuming is a spec change
	}
	app := spec.Job != nil
	built, err := c.build(sc, spec, st.JobStatus.JobID, st.JobStatus.UpgradeSavepointPath)
	if err != nil {
		sc.Fail(ReasonDeploymentError, "Cannot build the Flink cluster: %v", err)
		sc.RequeueWithin(jobengine.RetryFailed)
		return nil
	}
	createJM := false
	if sc.owned.jobManager == nil {
		// Recreating a JobManager restarts the job from the restore point in
		// its arguments, which is only its last state when nothing newer can
		// exist.
		js := st.JobStatus
		switch {
		case !app, haEnabled(sc.Cfg), jobengine.UpgradeMode(&spec) == v1beta1.UpgradeModeStateless,
			js.State == v1beta1.JobStatusReconciling, js.State == "":
			createJM = true
		case js.State.IsGloballyTerminal():
			// The job had ended; an upgrade restarts it from its recorded
			// last state. Nothing to restart now.
		default:
			sc.FailManualRestore(ReasonDeploymentError, "JobManager deployment is missing and the job's last state (last seen %s) cannot be read. "+
				"Manual restore required: set spec.job.initialSavepointPath to the latest checkpoint or savepoint and change spec.job.savepointRedeployNonce", js.State)
			sc.RequeueWithin(jobengine.RetryFailed)
		}
	}
	if err := c.ensureObjects(sc, built, createJM); err != nil {
		return err
	}

	healthy := st.JobManagerDeploymentStatus == v1beta1.JobManagerReady && (!app || st.JobStatus.State == v1beta1.JobStatusRunning)
	rs := &st.ReconciliationStatus
	if healthy && rs.LastStableSpec != rs.LastReconciledSpec {
		rs.LastStableSpec = rs.LastReconciledSpec
	}
	if app && sc.Client != nil {
		// Snapshots are planned while the JobManager answers (history
		// cleanup disposes through it); new ones only while the job runs —
		// and only once RUNNING is recorded: a snapshot created in the same
		// sync that observes RUNNING would reach the snapshot controller
		// before the status does, and be abandoned as "not running". The
		// next sync, right after this status write, takes it.
		recordedRunning := sc.Base.Status.JobStatus.State == v1beta1.JobStatusRunning
		if healthy && !recordedRunning {
			sc.RequeueWithin(time.Second)
		}
		if err := c.reconcileSnapshots(ctx, sc, healthy && recordedRunning && rs.State == v1beta1.ReconciliationDeployed); err != nil {
			return err
		}
	}
	if healthy {
		sc.RequeueWithin(sc.ReconcileInterval())
	} else {
		sc.RequeueWithin(sc.ProgressInterval())
	}
	return nil
}

// build computes the cluster's objects; the JobManager also carries the
// Flink version it was built for.
func (c *Controller) build(sc *syncState, spec v1beta1.FlinkDeploymentSpec, jobID, restore string) (*cluster.Cluster, error) {
	in := cluster.Input{Deployment: sc.Obj, Spec: spec, OperatorConfig: c.Config}
	if spec.Job != nil {
		in.JobID, in.RestorePath = jobID, restore
	}
	built, err := cluster.Build(in)
	if err != nil {
		return nil, err
	}
	if built.JobManager.Annotations == nil {
		built.JobManager.Annotations = map[string]string{}
	}
	built.JobManager.Annotations[AnnotationFlinkVersion] = string(spec.FlinkVersion)
	return built, nil
}

// ensureObjects queues the writes that make the live objects match built:
// create what is missing, update what differs (by spec hash), ConfigMap
// first since the pods mount it. The JobManager Deployment is only ever
// created, never updated in place: an update restarts the JobManager,
// which restarts the job from the restore point in its arguments; changes
// to it go through an upgrade instead. Objects of the same name controlled
// by someone else are left alone and reported.
func (c *Controller) ensureObjects(sc *syncState, built *cluster.Cluster, createJM bool) error {
	ns, o := sc.Obj.Namespace, sc.owned
	core, apps := c.Kube.CoreV1(), c.Kube.AppsV1()
	create := metav1.CreateOptions{}
	update := metav1.UpdateOptions{}

	cm := built.ConfigMap
	sc.ensure(objectWrites{desired: cm, live: asObject(o.configMap),
		create: func(ctx context.Context) error { _, err := core.ConfigMaps(ns).Create(ctx, cm, create); return err },
		update: func(ctx context.Context) error {
			u := o.configMap.DeepCopy()
			u.Labels, u.Annotations, u.Data, u.BinaryData = cm.Labels, mergeAnnotations(u.Annotations, cm.Annotations), cm.Data, cm.BinaryData
			_, err := core.ConfigMaps(ns).Update(ctx, u, update)
			return err
		}})
	for _, pair := range [][2]*corev1.Service{{built.RPCService, o.rpcService}, {built.RESTService, o.restService}} {
		desired, live := pair[0], pair[1]
		sc.ensure(objectWrites{desired: desired, live: asObject(live),
			create: func(ctx context.Context) error { _, err := core.Services(ns).Create(ctx, desired, create); return err },
			update: func(ctx context.Context) error {
				u := live.DeepCopy()
				// ClusterIPs are allocated by the API server and immutable.
				ip, ips := u.Spec.ClusterIP, u.Spec.ClusterIPs
				u.Labels, u.Annotations, u.Spec = desired.Labels, mergeAnnotations(u.Annotations, desired.Annotations), desired.Spec
				if desired.Spec.ClusterIP == "" {
					u.Spec.ClusterIP, u.Spec.ClusterIPs = ip, ips
				}
				_, err := core.Services(ns).Update(ctx, u, update)
				return err
			}})
	}
	tm := built.TaskManager
	sc.ensure(objectWrites{desired: tm, live: asObject(o.taskManager),
		create: func(ctx context.Context) error { _, err := apps.Deployments(ns).Create(ctx, tm, create); return err },
		update: func(ctx context.Context) error {
			u := o.taskManager.DeepCopy()
			u.Labels, u.Annotations, u.Spec = tm.Labels, mergeAnnotations(u.Annotations, tm.Annotations), tm.Spec
			_, err := apps.Deployments(ns).Update(ctx, u, update)
			return err
		}})
	if jm := built.JobManager; createJM || o.jobManager != nil {
		sc.ensure(objectWrites{desired: jm, live: asObject(o.jobManager),
			create: func(ctx context.Context) error { _, err := apps.Deployments(ns).Create(ctx, jm, create); return err }})
	}
	return nil
}

// objectWrites are the writes that bring one object to its desired form.
type objectWrites struct {
	desired, live metav1.Object // live is nil when absent
	create        func(ctx context.Context) error
	update        func(ctx context.Context) error // nil: never updated in place
}

// ensure queues the create or update an object needs, if any.
func (sc *syncState) ensure(w objectWrites) {
	name := kindOf(w.desired) + " " + w.desired.GetName()
	switch {
	case w.live == nil:
		sc.AfterStatusWrite("create "+name, func(ctx context.Context) error {
			if err := w.create(ctx); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating %s: %w", name, err)
			}
			return nil
		})
	case !ownedBy(w.live, sc.Obj):
		sc.Fail(ReasonDeploymentError, "%s exists and is not controlled by this FlinkDeployment; delete or rename it", name)
	case w.live.GetDeletionTimestamp() != nil:
		sc.RequeueWithin(teardownPoll) // recreated once it is gone
	case w.update != nil && cluster.SpecHashChanged(w.desired, w.live):
		sc.AfterStatusWrite("update "+name, func(ctx context.Context) error {
			if err := w.update(ctx); err != nil {
				return fmt.Errorf("updating %s: %w", name, err)
			}
			return nil
		})
	}
}

// asObject turns a possibly nil typed pointer into a possibly nil
// metav1.Object (a typed nil would not compare equal to nil).
func asObject[T any, P interface {
	*T
	metav1.Object
}](p P) metav1.Object {
	if p == nil {
		return nil
	}
	return p
}

func kindOf(o metav1.Object) string {
	switch o.(type) {
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.Service:
		return "Service"
	case *appsv1.Deployment:
		return "Deployment"
	}
	return "object"
}

// mergeAnnotations keeps annotations others added (kubectl, the deployment
// controller's revision) and sets the operator's.
func mergeAnnotations(live, desired map[string]string) map[string]string {
	out := make(map[string]string, len(live)+len(desired))
	for k, v := range live {
		out[k] = v
	}
	for k, v := range desired {
		out[k] = v
	}
	return out
}

// snapshotRefPath resolves spec.job.initialStateSnapshotRef of dep
// (snapshotref.Path: a cross-namespace reference needs the webhook's stamp).
func (c *Controller) snapshotRefPath(dep *v1beta1.FlinkDeployment, ref *v1beta1.SnapshotReference) (string, error) {
	return snapshotref.Path(c.Caches, c.Config, c.ReviewKeys, "FlinkDeployment", dep, ref)
}
