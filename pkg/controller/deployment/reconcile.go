package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/controller/snapshotref"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// The deployment's part of jobengine.Reconcile (the engine records the
// first deploy, the upgrade intent and the deploy itself): validation, the
// cluster objects of a deploy, teardown and the steady state's drift
// repair.

// Validate checks the current spec (validate) and gives its configuration.
func (k deploymentJob) Validate() (v1beta1.FlinkDeploymentSpec, config.Config, error) {
	v, err := k.c.validate(k.sc.Obj(), k.sc.Obj().Spec, k.sc.Recorded())
	if err != nil {
		return v1beta1.FlinkDeploymentSpec{}, nil, err
	}
	return v.spec, v.cfg, nil
}

// RestorePath resolves spec.job.initialStateSnapshotRef (snapshotref.Path:
// a cross-namespace reference needs the webhook's stamp).
func (k deploymentJob) RestorePath(ref *v1beta1.SnapshotReference) (string, error) {
	return snapshotref.Path(k.c.Caches, k.c.Config, k.c.ReviewKeys, "FlinkDeployment", k.sc.Obj(), ref)
}

func (k deploymentJob) CanRun() bool { return true }

// Ended tears the old cluster down (teardown) and says when it is gone.
func (k deploymentJob) Ended() bool { return !k.c.teardown(k.sc) }

func (k deploymentJob) Suspended() string {
	k.sc.Obj().Status.JobManagerDeploymentStatus = v1beta1.JobManagerMissing
	k.sc.Obj().Status.ClusterInfo = nil
	return "Job suspended and its cluster deleted"
}

// NextJobID is new unless the upgrade mode is last-state and the new
// JobManager recovers the job through the HA metadata keyed by its id (as
// upstream's setJobIdIfNecessary). A job that ended in Flink (cancelled by
// a last-state stop with job-cancel.enabled, or failed or finished by
// itself) has no HA metadata left but a result in Flink's job result
// store, which outlives the cluster: a JobManager started with the same id
// would find it and not run the job. It restarts from the recorded
// checkpoint under a new id, as upstream. Without Kubernetes HA the id is
// kept (nothing recovers it and nothing remembers it).
func (k deploymentJob) NextJobID() string {
	sc := k.sc
	jobID := sc.Obj().Status.JobStatus.JobID
	if jobengine.UpgradeMode(&sc.Recorded().Spec) != v1beta1.UpgradeModeLastState || jobID == "" ||
		kubernetesHA(sc.Cfg) && !k.c.haJobCheckpoints(sc) {
		jobID = newJobID(string(sc.Obj().UID), jobID, sc.Obj().Generation)
	}
	return jobID
}

// Deploy creates the new cluster's objects once the status records it.
func (k deploymentJob) Deploy(ctx context.Context, jobID, restore string) bool {
	sc, st := k.sc, &k.sc.Obj().Status
	built, err := k.c.build(sc, sc.Recorded().Spec, jobID, restore, k.c.CurrentConfig(), newDeployToken(jobID, sc.Now()), "")
	if err != nil {
		sc.Fail(reasons.ReasonUpgradeFailed, "Cannot build the Flink cluster: %v", err)
		sc.RequeueWithin(jobengine.RetryFailed)
		return false
	}
	if built.Native {
		// Flink creates the TaskManager pods as its ServiceAccount: say
		// now, not after a silent wait, when it cannot (serviceaccount.go).
		if msg := k.c.checkServiceAccount(ctx, sc, built); msg != "" {
			sc.Fail(reasons.ReasonServiceAccount, "%s", msg)
			sc.RequeueWithin(sc.ProgressInterval()) // soon after it is fixed
			return false
		}
	}
	st.ClusterInfo = nil
	st.JobManagerDeploymentStatus = v1beta1.JobManagerDeploying
	if sc.Recorded().Spec.Job != nil {
		from := "empty state"
		if restore != "" {
			from = restore
		}
		sc.Event(corev1.EventTypeNormal, reasons.ReasonSubmit, "Deploying job %s from %s", jobID, from)
	} else {
		sc.Event(corev1.EventTypeNormal, reasons.ReasonSubmit, "Deploying session cluster")
	}
	k.c.ensureObjects(sc, built, deployJobManager)
	sc.RequeueWithin(sc.ProgressInterval())
	return true
}

// CheckpointTrigger: the recorded Flink version can trigger checkpoints.
func (k deploymentJob) CheckpointTrigger() bool {
	version, err := flink.ParseVersion(string(k.sc.Recorded().Spec.FlinkVersion))
	return err == nil && version.SupportsCheckpointTrigger()
}

// Steady keeps a deployed cluster as recorded: objects that went missing or
// were changed are repaired (drift); the engine does the rest.
func (k deploymentJob) Steady(ctx context.Context) (jobengine.SteadyAnswer, error) {
	c, sc := k.c, k.sc
	if c.shutDownEnded(sc) { // jm-deployment.shutdown-ttl: shutdownttl.go
		return jobengine.SteadyAnswer{}, nil
	}
	st := &sc.Obj().Status
	spec := sc.Recorded().Spec
	app := spec.Job != nil
	token, ended := c.steadyTokens(sc)
	built, err := c.build(sc, spec, st.JobStatus.JobID, st.JobStatus.UpgradeSavepointPath, c.deployedConfig(sc), token, ended)
	if err != nil {
		sc.Fail(reasons.ReasonDeploymentError, "Cannot build the Flink cluster: %v", err)
		sc.RequeueWithin(jobengine.RetryFailed)
		return jobengine.SteadyAnswer{}, nil
	}
	jm := keepJobManager
	if sc.owned.jobManager == nil {
		// Recreating a JobManager restarts the job from the restore point in
		// its arguments, which is only its last state when nothing newer can
		// exist (health.go).
		jm = c.recoverJobManager(sc)
	}
	c.ensureObjects(sc, built, jm)
	healthy := st.JobManagerDeploymentStatus == v1beta1.JobManagerReady && (!app || st.JobStatus.State == v1beta1.JobStatusRunning)
	// Snapshots are planned while the JobManager answers (history cleanup
	// disposes through it).
	return jobengine.SteadyAnswer{Kept: true, Healthy: healthy, PlanSnapshots: app && sc.Client != nil}, nil
}

// build computes the cluster's objects with operator the operator
// configuration; the JobManager also carries the Flink version it was built
// for.
func (c *Controller) build(sc *syncState, spec v1beta1.FlinkDeploymentSpec, jobID, restore string, operator config.Config, token, ended string) (*cluster.Cluster, error) {
	in := cluster.Input{Deployment: sc.Obj(), Spec: spec, OperatorConfig: operator, Native: sc.nativeFor(&spec)}
	if spec.Job != nil {
		in.JobID, in.RestorePath = jobID, restore
		in.DeployToken, in.EndedToken = token, ended
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

// deployedConfig is the operator configuration a running cluster is kept
// with: the current one, with the Flink defaults of the cluster's deploy
// (recorded on its ConfigMap), so that a changed default reaches a cluster
// at its next deploy, as upstream, and never rolls running clusters.
func (c *Controller) deployedConfig(sc *syncState) config.Config {
	current := c.CurrentConfig()
	if defaults, ok := cluster.DeployedFlinkDefaults(sc.owned.configMap); ok {
		return cluster.WithFlinkDefaults(current, defaults)
	}
	return current
}

// jobManagerCreate says whether ensureObjects creates a missing JobManager
// Deployment, and what happens to the job graph Flink keeps in its HA
// metadata (hajobgraph.go) before it does.
type jobManagerCreate int

const (
	// keepJobManager: an existing JobManager Deployment is kept, a missing
	// one is not created.
	keepJobManager jobManagerCreate = iota
	// deployJobManager: a deploy (or its repeat after a crash, DEPLOYING
	// recorded) creates it, the HA job graph removed first so the new
	// JobManager runs the spec just recorded.
	deployJobManager
	// recreateJobManager: one lost after its deploy is created again for the
	// same recorded spec; the HA job graph stays, so the new JobManager
	// recovers the job as after a JobManager crash (health.go).
	recreateJobManager
)

// ensureObjects queues the writes that make the live objects match built:
// create what is missing, update what differs (by spec hash), ConfigMap
// first since the pods mount it. The JobManager Deployment is only ever
// created, never updated in place: an update restarts the JobManager,
// which restarts the job from the restore point in its arguments; changes
// to it go through an upgrade instead. Objects of the same name controlled
// by someone else are left alone and reported.
func (c *Controller) ensureObjects(sc *syncState, built *cluster.Cluster, jmCreate jobManagerCreate) {
	ns, o := sc.Obj().Namespace, sc.owned
	sc.keepAdopted = jmCreate == keepJobManager && o.jobManager != nil
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
	if tmpl := built.PodTemplateConfigMap; tmpl != nil {
		// Native mode: the TaskManager pod template Flink's resource manager
		// reads (mounted into the JobManager, whose config hash covers it).
		sc.ensure(objectWrites{desired: tmpl, live: asObject(o.podTemplate),
			create: func(ctx context.Context) error { _, err := core.ConfigMaps(ns).Create(ctx, tmpl, create); return err },
			update: func(ctx context.Context) error {
				u := o.podTemplate.DeepCopy()
				u.Labels, u.Annotations, u.Data, u.BinaryData = tmpl.Labels, mergeAnnotations(u.Annotations, tmpl.Annotations), tmpl.Data, tmpl.BinaryData
				_, err := core.ConfigMaps(ns).Update(ctx, u, update)
				return err
			}})
	}
	// Native mode has no TaskManager Deployment: Flink creates (and scales)
	// the TaskManager pods itself. A standalone one left from before a
	// switch to native is deleted by the upgrade's teardown.
	if tm := built.TaskManager; tm != nil {
		sc.ensure(objectWrites{desired: tm, live: asObject(o.taskManager),
			create: func(ctx context.Context) error { _, err := apps.Deployments(ns).Create(ctx, tm, create); return err },
			update: func(ctx context.Context) error {
				u := o.taskManager.DeepCopy()
				u.Labels, u.Annotations, u.Spec = tm.Labels, mergeAnnotations(u.Annotations, tm.Annotations), tm.Spec
				_, err := apps.Deployments(ns).Update(ctx, u, update)
				return err
			}})
	}
	if jm := built.JobManager; jmCreate != keepJobManager || o.jobManager != nil {
		if o.jobManager == nil && jmCreate == deployJobManager {
			c.dropHAJobGraphs(sc) // hajobgraph.go
		}
		sc.ensure(objectWrites{desired: jm, live: asObject(o.jobManager),
			create: func(ctx context.Context) error { _, err := apps.Deployments(ns).Create(ctx, jm, create); return err }})
	}
	c.ensureIngress(sc, built, jmCreate != keepJobManager && o.jobManager == nil) // ingress.go
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
	case !sc.owns(w.live):
		sc.Fail(reasons.ReasonDeploymentError, "%s exists and is not controlled by this FlinkDeployment (no owner reference to it, or another controller); delete or rename it", name)
	case w.live.GetDeletionTimestamp() != nil:
		sc.RequeueWithin(teardownPoll) // recreated once it is gone
	case w.update != nil && sc.keepAdopted && !controlledByDeployment(w.live):
		// Made by another operator (upstream's, whose cluster this one took
		// over: ownedBy, without the controller reference this operator
		// gives what it makes): kept as it is while its cluster runs, since
		// rewriting a standalone cluster's TaskManager Deployment would
		// restart the TaskManagers under the running job. The next deploy
		// builds this operator's.
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
	case *networkingv1.Ingress:
		return "Ingress"
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

// controlledByDeployment: obj's controller is a FlinkDeployment, as on
// everything this operator makes.
func controlledByDeployment(obj metav1.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Kind == "FlinkDeployment" && isFlinkGroup(ref.APIVersion)
}
