package jobengine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	clientset "github.com/flinkops/flink-operator/pkg/clients/flink"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// Object is a resource that runs a Flink job, a FlinkDeployment (an
// application cluster) or a FlinkSessionJob, as the engine reads it: both
// kinds say what the engine needs through the same methods
// (pkg/apis/flink/v1beta1/jobresource.go). S is its spec.
type Object[T any, S any] interface {
	metav1.Object
	runtime.Object
	// JobResourceStatus points into the status parts the engine keeps.
	JobResourceStatus() v1beta1.JobResourceStatus
	// SetStatusFrom makes the object's status that of another.
	SetStatusFrom(T)
	// CurrentSpec is the object's spec.
	CurrentSpec() S
	// SetCurrentSpec replaces it in memory (OverlayParallelism).
	SetCurrentSpec(S)
	// JobReferenceKind is the kind a snapshot's jobReference names it by.
	JobReferenceKind() v1beta1.JobReferenceKind
}

// State is one sync of one job resource: what was read, what the status
// becomes, and the writes to make around the status write. A controller
// embeds it in its own sync state with what is only its own.
type State[T Object[T, S], S Spec[S]] struct {
	e *Engine[T, S]

	// What a sync starts from, which the controllers read through Key,
	// Base, Obj, Now and Log but must not replace (issue 32).
	key  string
	base T // what the API server has (the informer cache's object)
	obj  T // a DeepCopy whose status this sync edits
	now  time.Time
	log  klog.Logger
	// Cfg is the job's effective configuration.
	Cfg config.Config
	// operator is the operator configuration in use when this sync
	// started (Engine.Operator): what the engine reads of it (status.error's
	// shape, snapshot resources, cross-namespace references) comes from
	// this one snapshot, so a reload in the middle of a sync applies at the
	// next.
	operator config.Config
	// recorded is lastReconciledSpec: the spec the job runs, or during an
	// upgrade the spec being deployed. nil before the first deploy. Only
	// the engine replaces it (recordSpecChange, rollback); a controller
	// reads it through Recorded.
	recorded *lifecycle.Reconciled[S]
	// Of the spec recorded before this sync's recordSpecChange.
	wasSuspended, firstDeployment bool
	// legacyHealthy: the job may take a legacy snapshot now.
	legacyHealthy bool
	// lastStop is the JobKind's LastStateStop answer, once asked.
	lastStop *lastStateAnswer
	// deployRefused: the driver could not deploy (reported) and created
	// nothing.
	deployRefused bool
	// rolledBackFrom is lastReconciledSpec while the log says ROLLING_BACK
	// or ROLLED_BACK: the spec rolled back from, which a spec change is
	// compared with; recorded is then lastStableSpec (rollback.go).
	rolledBackFrom *lifecycle.Reconciled[S]

	// Observation of the job through its JobManager.
	Client *flink.Client      // set when the JobManager answered
	Job    *flink.JobOverview // the job, when the JobManager knows it

	errs    []syncError
	events  []event
	pre     []action // idempotent writes that must precede the status write
	post    []action // writes and Flink calls that must follow it
	requeue time.Duration
}

type syncError struct {
	reason, msg string
	// manual: a person must say where the job restarts from
	// (lifecycle.ErrManualRestore).
	manual bool
	// Of an error kept from the last status.error (keptError): its
	// exception type, stack trace, additionalMetadata.reason and causes.
	typ, stack, metaReason string
	causes                 []ResourceException
}

type event struct{ typ, reason, msg string }

type action struct {
	name string
	run  func(ctx context.Context) error
}

// NewState starts a sync of base at now, decoding its lastReconciledSpec.
func (e *Engine[T, S]) NewState(ctx context.Context, key string, base T, now time.Time) (*State[T, S], error) {
	rec, err := lifecycle.Decode[S](base.JobResourceStatus().Reconciliation.LastReconciledSpec)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		rec.Spec = withCurrentUnrecorded(rec.Spec, base.CurrentSpec())
	}
	s := &State[T, S]{e: e, key: key, base: base, obj: base.DeepCopyObject().(T), now: now, log: klog.FromContext(ctx), recorded: rec,
		operator: e.operatorConfig()}
	if err := s.decodeRollback(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start begins the sync of a resource that is not being deleted: it makes
// sure the resource carries finalizer (written first, so that a deletion
// always waits for the operator), then starts the sync state, and warns
// once per job when snapshot resources are off for want of their CRD.
func (e *Engine[T, S]) Start(ctx context.Context, key string, cached T, finalizer string) (*State[T, S], error) {
	base := cached
	if !slices.Contains(base.GetFinalizers(), finalizer) {
		var err error
		if base, err = e.addFinalizer(ctx, base, finalizer); err != nil {
			return nil, err
		}
	}
	s, err := e.NewState(ctx, key, base, e.Clock.Now())
	if err != nil {
		return nil, err
	}
	s.warnSnapshotCRDMissing()
	return s, nil
}

// Key is the resource's namespace/name, the key this sync was queued by.
func (s *State[T, S]) Key() string { return s.key }

// Base is the resource as the API server has it (the informer cache's
// object): read, never edited.
func (s *State[T, S]) Base() T { return s.base }

// Obj is the working copy of the resource (a DeepCopy of Base) whose
// status this sync edits and the engine writes once; the controllers edit
// its status through it.
func (s *State[T, S]) Obj() T { return s.obj }

// Now is the time this sync started at.
func (s *State[T, S]) Now() time.Time { return s.now }

// Log is this sync's logger.
func (s *State[T, S]) Log() klog.Logger { return s.log }

// Recorded is lastReconciledSpec as this sync has it: the spec the job
// runs, or during an upgrade the spec being deployed; while rolling back
// or rolled back, lastStableSpec (rollback.go). nil before the first
// deploy. Only the engine replaces it, as the sync records a spec; a
// controller may amend the recorded spec in place through the pointer (the
// deployment controller marks the unset mode of a live standalone cluster
// standalone), and the engine then reads the amended spec.
func (s *State[T, S]) Recorded() *lifecycle.Reconciled[S] { return s.recorded }

// Status is the status this sync edits.
func (s *State[T, S]) Status() v1beta1.JobResourceStatus { return s.obj.JobResourceStatus() }

// JobStatus is the job status this sync edits.
func (s *State[T, S]) JobStatus() *v1beta1.JobStatus { return s.obj.JobResourceStatus().Job }

// Fail records an error for status.error; its Warning event is emitted only
// when the message of status.error changes, so a persisting error is not
// repeated.
// An error argument wrapping lifecycle.ErrManualRestore marks the failure
// as one that needs a manual restore.
func (s *State[T, S]) Fail(reason, format string, args ...any) {
	manual := false
	for _, a := range args {
		if err, ok := a.(error); ok && errors.Is(err, lifecycle.ErrManualRestore) {
			manual = true
		}
	}
	s.errs = append(s.errs, syncError{reason: reason, msg: fmt.Sprintf(format, args...), manual: manual})
}

// FailManualRestore records an error after which a person must say where
// the job restarts from (lifecycle.ManualRestore ends up FAILED); the
// message says how.
func (s *State[T, S]) FailManualRestore(reason, format string, args ...any) {
	s.errs = append(s.errs, syncError{reason: reason, msg: fmt.Sprintf(format, args...), manual: true})
}

// NeedsManualRestore: this sync recorded an error that needs a manual
// restore.
func (s *State[T, S]) NeedsManualRestore() bool {
	for _, e := range s.errs {
		if e.manual {
			return true
		}
	}
	return false
}

// keepError keeps status.error as the last sync wrote it (a failure being
// waited out), without a new event.
func (s *State[T, S]) keepError(reason string) {
	if prev := *s.base.JobResourceStatus().Error; prev != "" {
		s.errs = append(s.errs, keptError(reason, prev))
	}
}

// Failed reports whether this sync recorded an error.
func (s *State[T, S]) Failed() bool { return len(s.errs) > 0 }

// Event queues an event, emitted after the status write.
func (s *State[T, S]) Event(typ, reason, format string, args ...any) {
	s.events = append(s.events, event{typ, reason, fmt.Sprintf(format, args...)})
}

// RequeueWithin asks for the next sync within d (the earliest request wins).
func (s *State[T, S]) RequeueWithin(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}

// requeueNoLaterThan caps a requested requeue at d (a deadline coming).
func (s *State[T, S]) requeueNoLaterThan(d time.Duration) {
	if s.requeue > d {
		s.requeue = d
	}
}

// NoRequeue drops the requests to look again: the next sync comes from a
// change of the resource (a finalizer removed, a cluster created).
func (s *State[T, S]) NoRequeue() { s.requeue = 0 }

// ClearErrors drops this sync's errors (a deleted job's no longer matter).
func (s *State[T, S]) ClearErrors() { s.errs = nil }

// AfterStatusWrite queues a write or Flink call that the status announces:
// it runs only once the status is recorded.
func (s *State[T, S]) AfterStatusWrite(name string, run func(ctx context.Context) error) {
	s.post = append(s.post, action{name, run})
}

// beforeStatusWrite queues an idempotent write that the status refers to
// (a snapshot resource): it runs before the status write.
func (s *State[T, S]) beforeStatusWrite(name string, run func(ctx context.Context) error) {
	s.pre = append(s.pre, action{name, run})
}

// ProgressInterval is how soon to look again while something is changing.
func (s *State[T, S]) ProgressInterval() time.Duration {
	d, err := s.Cfg.Duration(config.KeyProgressCheckInterval)
	if err != nil || d <= 0 {
		return 10 * time.Second
	}
	return d
}

// ReconcileInterval is how soon to look again when all is well.
func (s *State[T, S]) ReconcileInterval() time.Duration {
	d, err := s.Cfg.Duration(config.KeyReconcileInterval)
	if err != nil || d <= 0 {
		return time.Minute
	}
	return d
}

// SetError writes this sync's errors into status.error as upstream's
// FlinkResourceException JSON (resourceerror.go), shaped by the
// operator's kubernetes.operator.exception.* options. The controller
// calls it before deriving what depends on the error (lifecycle state).
func (s *State[T, S]) SetError() {
	*s.Status().Error = renderError(s.errs, readExceptionOptions(s.operator))
}

// KeepSuspendedStable: a job suspended by the user is stable in that state
// (upstream's rule), so resuming it reads DEPLOYED until the job runs
// again, not STABLE.
func KeepSuspendedStable(rs *v1beta1.ReconciliationStatus, recordedSuspended bool) {
	if recordedSuspended && rs.State == v1beta1.ReconciliationDeployed && rs.LastStableSpec != rs.LastReconciledSpec {
		rs.LastStableSpec = rs.LastReconciledSpec
	}
}

// Engine is one controller's use of the engine: its clients, caches,
// operator-wide configuration and test hook.
type Engine[T Object[T, S], S Spec[S]] struct {
	Client clientset.Interface
	// Writes gives the writer of the kind's objects in a namespace (the
	// kind's typed client: the finalizer and status writes).
	Writes   func(namespace string) Writer[T]
	Recorder record.EventRecorder
	Caches   *flinkcache.Caches
	// Operator returns the operator-wide configuration in use now
	// (controllerctx.Context.CurrentConfig: reloaded with the operator's
	// config file); each sync takes it once (State.Operator). Nil: the
	// defaults.
	Operator func() config.Config
	Clock    clock.PassiveClock
	// SnapshotCRDMissing: the FlinkStateSnapshot CRD is not installed
	// (legacy mode for every job).
	SnapshotCRDMissing bool
	NewTriggerID       func() string
	// Fault, when set (tests only), is called at every point where a crash
	// must be survivable.
	Fault func(key, point string)

	// Legacy mode across syncs, in memory (after a restart a disposal is
	// asked again, and a savepoint already gone counts as disposed).
	legacyDisposals sync.Map // "<key>\x00<path>" → disposal trigger id
	crdWarned       sync.Map // UIDs that got SnapshotResourcesDisabled
	// reconciledLogged: UID → the generation whose "fully reconciled"
	// line was logged (reconcile.go).
	reconciledLogged sync.Map
	disposalHolds    sync.Map // UID → what HoldForDisposals last said
}

// operatorConfig is the operator configuration in use now.
func (w *Engine[T, S]) operatorConfig() config.Config {
	if w.Operator == nil {
		return nil // reads give the registered defaults
	}
	return w.Operator()
}

// Commit runs the pre-writes, writes the status if it changed (once), then
// emits the events and runs the actions the status announced. Pre-writes
// (snapshot resources) come first: they are idempotent, and a status that
// refers to them must not exist without them. The controller has called
// SetError and derived the rest of the status.
func (w *Engine[T, S]) Commit(ctx context.Context, s *State[T, S]) (time.Duration, error) {
	for _, a := range s.pre {
		if err := a.run(ctx); err != nil {
			return 0, err
		}
		w.fault(s.key, "pre-commit:"+a.name)
	}
	before, after := s.base.JobResourceStatus(), s.Status()
	toWrite := s.base.DeepCopyObject().(T)
	toWrite.SetStatusFrom(s.obj)
	// toWrite is Base but for its status: equal when the status is.
	if !equality.Semantic.DeepEqual(toWrite, s.base) {
		written, err := w.updateStatus(ctx, toWrite)
		if err != nil {
			return 0, fmt.Errorf("updating status of %s %s: %w", kindOf[T, S](s.obj), s.key, err)
		}
		if old, now := *before.Lifecycle, *written.JobResourceStatus().Lifecycle; old != now {
			js := written.JobResourceStatus().Job
			s.log.Info("Lifecycle state changed", "from", stateOrNew(string(old)), "to", now,
				"jobId", js.JobID, "jobState", js.State, "restorePath", js.UpgradeSavepointPath)
		}
		s.base = written
		w.fault(s.key, "status-written")
	}
	// A Warning per error when the message changes (not when only the
	// JSON around it does, as after an upgrade from plain messages).
	if *after.Error != "" && ErrorMessage(*after.Error) != ErrorMessage(*before.Error) {
		for _, e := range s.errs {
			w.Recorder.Event(s.obj, corev1.EventTypeWarning, e.reason, e.msg)
		}
	}
	for _, e := range s.events {
		w.Recorder.Event(s.obj, e.typ, e.reason, e.msg)
	}
	for _, a := range s.post {
		if err := a.run(ctx); err != nil {
			return 0, err
		}
		w.fault(s.key, "action:"+a.name)
	}
	return s.requeue, nil
}

// addFinalizer writes finalizer onto o (the cached object) and returns
// what was written.
func (w *Engine[T, S]) addFinalizer(ctx context.Context, o T, finalizer string) (T, error) {
	toWrite := o.DeepCopyObject().(T)
	toWrite.SetFinalizers(append(toWrite.GetFinalizers(), finalizer))
	written, err := w.update(ctx, toWrite)
	if err != nil {
		return written, fmt.Errorf("adding finalizer to %s %s/%s: %w", kindOf[T, S](o), o.GetNamespace(), o.GetName(), err)
	}
	return written, nil
}

// RemoveFinalizer queues the removal of finalizer after the status write:
// the object may then go.
func (w *Engine[T, S]) RemoveFinalizer(s *State[T, S], finalizer string) {
	s.AfterStatusWrite("remove finalizer", func(ctx context.Context) error {
		toWrite := s.base.DeepCopyObject().(T)
		toWrite.SetFinalizers(slices.DeleteFunc(toWrite.GetFinalizers(), func(f string) bool { return f == finalizer }))
		if _, err := w.update(ctx, toWrite); err != nil {
			return fmt.Errorf("removing finalizer of %s %s: %w", kindOf[T, S](s.obj), s.key, err)
		}
		return nil
	})
	s.NoRequeue()
}

// Fault calls the engine's test fault point (Engine.Fault) for a point a
// controller reaches in the sync, outside Commit: a crash there must be
// survivable too.
func (s *State[T, S]) Fault(point string) { s.e.fault(s.key, point) }

func (w *Engine[T, S]) fault(key, point string) {
	if w.Fault != nil {
		w.Fault(key, point)
	}
}

// kindOf names o's kind in errors.
func kindOf[T Object[T, S], S Spec[S]](o T) string { return string(o.JobReferenceKind()) }

// stateOrNew names a state for logs and events; "" is a resource not yet
// reconciled.
func stateOrNew(s string) string {
	if s == "" {
		return "NEW"
	}
	return s
}

func (w *Engine[T, S]) update(ctx context.Context, o T) (T, error) { return w.write(ctx, o, false) }

func (w *Engine[T, S]) updateStatus(ctx context.Context, o T) (T, error) {
	return w.write(ctx, o, true)
}

// write sends o to the API server: its status subresource, or the object.
func (w *Engine[T, S]) write(ctx context.Context, o T, status bool) (T, error) {
	c := w.Writes(o.GetNamespace())
	if status {
		return c.UpdateStatus(ctx, o, metav1.UpdateOptions{})
	}
	return c.Update(ctx, o, metav1.UpdateOptions{})
}

// Writer writes one kind's objects in one namespace: the typed client of
// the kind (FlinkDeploymentInterface, FlinkSessionJobInterface).
type Writer[T any] interface {
	Update(ctx context.Context, o T, opts metav1.UpdateOptions) (T, error)
	UpdateStatus(ctx context.Context, o T, opts metav1.UpdateOptions) (T, error)
}
