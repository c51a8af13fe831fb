package bluegreen

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
	"github.com/flinkops/flink-operator/pkg/validation"
)

// step is one sync of a blue/green deployment: what it read, the status it
// will write and what it will do once that is written.
type step struct {
	c    *Controller
	bg   *v1beta1.FlinkBlueGreenDeployment // cached: never changed
	next *v1beta1.FlinkBlueGreenDeploymentStatus
	opts options
	now  time.Time
	// children are the owned children by side; foreign names a side whose
	// name a FlinkDeployment of someone else's holds.
	children map[color]*v1beta1.FlinkDeployment
	foreign  map[color]bool

	events  []event
	actions []action
	requeue time.Duration
}

type event struct{ typ, reason, msg string }

type action struct {
	name string
	run  func(ctx context.Context) error
}

func (c *Controller) newStep(bg *v1beta1.FlinkBlueGreenDeployment) (*step, error) {
	s := &step{c: c, bg: bg, next: bg.Status.DeepCopy(), now: c.Clock.Now(),
		children: map[color]*v1beta1.FlinkDeployment{}, foreign: map[color]bool{}}
	for _, side := range []color{blue, green} {
		d, err := c.Caches.Deployment(bg.Namespace, childName(bg.Name, side))
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		case ownedBy(d, bg):
			s.children[side] = d
		default:
			s.foreign[side] = true
		}
	}
	return s, nil
}

func (s *step) statusChanged() bool {
	return !equality.Semantic.DeepEqual(*s.next, s.bg.Status)
}

func (s *step) event(typ, reason, format string, args ...any) {
	s.events = append(s.events, event{typ, reason, fmt.Sprintf(format, args...)})
}

func (s *step) do(name string, run func(ctx context.Context) error) {
	s.actions = append(s.actions, action{name, run})
}

func (s *step) after(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if s.requeue == 0 || d < s.requeue {
		s.requeue = d
	}
}

// encodedSpec is spec as lastReconciledSpec records it.
func encodedSpec(spec v1beta1.FlinkBlueGreenDeploymentSpec) string {
	b, _ := json.Marshal(spec) // a struct of plain fields: never fails
	return string(b)
}

// lastSpec decodes lastReconciledSpec (ok false when there is none or it
// does not decode).
func (s *step) lastSpec() (v1beta1.FlinkBlueGreenDeploymentSpec, bool) {
	var spec v1beta1.FlinkBlueGreenDeploymentSpec
	if s.next.LastReconciledSpec == "" {
		return spec, false
	}
	if err := json.Unmarshal([]byte(s.next.LastReconciledSpec), &spec); err != nil {
		return spec, false
	}
	return spec, true
}

// to records a state change (with its event).
func (s *step) to(state v1beta1.FlinkBlueGreenDeploymentState, format string, args ...any) {
	from := stateOr(string(s.next.BlueGreenState), "NEW")
	s.next.BlueGreenState = state
	s.event(corev1.EventTypeNormal, reasons.ReasonBlueGreenTransition, "%s -> %s: %s", from, state, fmt.Sprintf(format, args...))
}

// plan computes the step from the state the status records.
func (s *step) plan(ctx context.Context) {
	opts, err := optionsOf(s.c.CurrentConfig(), s.bg)
	if err != nil {
		s.fail("%v", err)
		return
	}
	s.opts = opts
	// The webhook's rules (when it runs): a bad spec deploys nothing.
	if _, err := validation.BlueGreenDeployment(s.bg, s.c.CurrentConfig()); err != nil {
		s.fail("%v", err)
		return
	}
	switch st := s.next.BlueGreenState; st {
	case "":
		s.start()
	case v1beta1.BlueGreenInitializingBlue:
		s.initializing()
	case v1beta1.BlueGreenActiveBlue, v1beta1.BlueGreenActiveGreen:
		s.active(colorOf(st))
	case v1beta1.BlueGreenSavepointingBlue, v1beta1.BlueGreenSavepointingGreen:
		s.savepointing(colorOf(st))
	case v1beta1.BlueGreenTransitioningToBlue, v1beta1.BlueGreenTransitioningToGreen:
		s.transitioning(ctx, colorOf(st))
	}
}

// colorOf is the side a state is about: the active side of ACTIVE and
// SAVEPOINTING states, the new side of TRANSITIONING ones.
func colorOf(st v1beta1.FlinkBlueGreenDeploymentState) color {
	switch st {
	case v1beta1.BlueGreenActiveGreen, v1beta1.BlueGreenSavepointingGreen, v1beta1.BlueGreenTransitioningToGreen:
		return green
	}
	return blue
}

// fail records a problem that stops the step (nothing else changes), with
// a Warning when the message is new.
func (s *step) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if s.next.Error != msg {
		s.event(corev1.EventTypeWarning, reasons.ReasonValidationError, "%s", msg)
	}
	s.next.Error = msg
}

// start: a new blue/green deployment records INITIALIZING_BLUE, then
// creates the blue child from the template (its own initialSavepointPath,
// if any).
func (s *step) start() {
	if s.foreign[blue] {
		s.fail("FlinkDeployment %s exists and is not owned by this blue/green deployment", childName(s.bg.Name, blue))
		return
	}
	s.record()
	s.next.AbortTimestamp = timestamp(s.now.Add(s.opts.abortGrace))
	s.next.JobStatus.State = v1beta1.JobStatusReconciling
	s.to(v1beta1.BlueGreenInitializingBlue, "deploying %s", childName(s.bg.Name, blue))
	s.applyChild(blue, "")
	s.after(s.opts.reschedule)
}

// record makes the current spec the reconciled one and clears the error.
func (s *step) record() {
	s.next.LastReconciledSpec = encodedSpec(s.bg.Spec)
	s.next.Error = ""
}

func (s *step) specChanged() bool { return s.next.LastReconciledSpec != encodedSpec(s.bg.Spec) }

// initializing waits for the first child, retrying as long as it takes
// (upstream: never aborted; there is nothing to go back to).
func (s *step) initializing() {
	child := s.children[blue]
	if child == nil || s.specChanged() {
		s.record()
		s.applyChild(blue, restorePathOf(child))
		s.after(s.opts.reschedule)
		return
	}
	s.mirror(child, v1beta1.JobStatusReconciling)
	if ready(child) {
		s.finish(blue)
		return
	}
	s.after(s.opts.reschedule)
}

// finish makes side the active one: ACTIVE_<side>, the Ingress leading to
// it.
func (s *step) finish(side color) {
	child := s.children[side]
	s.next.AbortTimestamp, s.next.DeploymentReadyTimestamp, s.next.SavepointTriggerID, s.next.TransitionSnapshot, s.next.Error = "", "", "", "", ""
	s.mirror(child, v1beta1.JobStatusRunning)
	s.to(active(side), "%s is ready", childName(s.bg.Name, side))
	s.ingress(side)
}

// mirror copies child's job status (state overridden unless empty) and
// TaskManager replicas into the status.
func (s *step) mirror(child *v1beta1.FlinkDeployment, state v1beta1.JobStatusState) {
	if child == nil {
		return
	}
	s.next.JobStatus = *child.Status.JobStatus.DeepCopy()
	if state != "" {
		s.next.JobStatus.State = state
	}
	s.next.TaskManagerReplicas = 0
	if tm := child.Status.TaskManager; tm != nil {
		s.next.TaskManagerReplicas = tm.Replicas
	}
}

// active: side runs. A spec change is classified as upstream's
// FlinkBlueGreenDeploymentSpecDiff does: applied to the running child in
// place (PATCH_CHILD: only fields that need no redeploy; suspend and
// resume; anything while suspended), a savepoint redeploy, or a transition
// (with a savepoint first unless the upgrade mode is stateless).
func (s *step) active(side color) {
	cur, other := s.children[side], s.children[side.other()]
	if cur == nil {
		s.fail("the active child FlinkDeployment %s does not exist", childName(s.bg.Name, side))
		return
	}
	state := v1beta1.JobStatusState("")
	if s.next.Error != "" {
		state = v1beta1.JobStatusFailing // as upstream: until the next change
	}
	s.mirror(cur, state)
	if other != nil && other.DeletionTimestamp == nil && !suspended(other) {
		// An aborted transition's child that a crash left running.
		s.suspend(other)
	}
	s.ingress(side)
	if !s.specChanged() {
		return
	}
	last, ok := s.lastSpec()
	if !ok {
		last = s.bg.Spec
	}
	recorded, current := last.Template.Spec, s.bg.Spec.Template.Spec
	change := jobengine.Classify(recorded, current)
	resume := jobengine.JobSuspended(&recorded) && !jobengine.JobSuspended(&current)
	switch {
	case change == jobengine.ChangeNone:
		// Only the configuration, ingress or template metadata changed.
		s.record()
	case change == jobengine.ChangeNonces || change == jobengine.ChangeSuspend || change == jobengine.ChangeSuspended ||
		resume || suspended(cur):
		s.record()
		s.event(corev1.EventTypeNormal, reasons.ReasonBlueGreenPatched, "%s patched in place (%s)", cur.Name, patchKind(change, resume))
		s.applyChild(side, restorePathOf(cur))
	case change == jobengine.ChangeRedeploy:
		s.transition(side, current.Job.InitialSavepointPath, "savepoint redeploy from spec.template.spec.job.initialSavepointPath")
	case !ready(cur):
		s.record()
		s.next.JobStatus.State = v1beta1.JobStatusFailing
		s.next.Error = fmt.Sprintf("Transition to %s not possible, current Flink Deployment '%s' is not READY (%s)",
			side.other(), cur.Name, notReadyReason(cur))
		s.event(corev1.EventTypeWarning, reasons.ReasonBlueGreenAborted, "%s", s.next.Error)
	case jobengine.UpgradeMode(&current) == v1beta1.UpgradeModeStateless:
		s.transition(side, "", "stateless upgrade")
	default:
		// The savepoint is named before it exists: the name in the status
		// is the write-ahead record of the trigger.
		child := cur
		snap, err := s.snapshotFor(child, s.now)
		if err != nil {
			s.fail("%v", err)
			return
		}
		name := snap.Name
		s.next.TransitionSnapshot, s.next.SavepointTriggerID, s.next.Error = name, "", ""
		s.to(savepointing(side), "savepoint %s of %s before the transition", name, cur.Name)
		s.createSnapshot(child, name)
		s.after(s.opts.reschedule)
	}
}

func patchKind(change jobengine.Change, resume bool) string {
	switch {
	case resume:
		return "resume"
	case change == jobengine.ChangeSuspend:
		return "suspend"
	case change == jobengine.ChangeSuspended:
		return "while suspended"
	}
	return "no redeploy needed"
}

// transition records TRANSITIONING_TO_<other side> and then deploys the
// other side from restore.
func (s *step) transition(from color, restore, why string) {
	to := from.other()
	if s.foreign[to] {
		s.fail("FlinkDeployment %s exists and is not owned by this blue/green deployment", childName(s.bg.Name, to))
		return
	}
	s.record()
	s.next.AbortTimestamp = timestamp(s.now.Add(s.opts.abortGrace))
	s.next.DeploymentReadyTimestamp = ""
	s.next.JobStatus.State = v1beta1.JobStatusReconciling
	s.to(transitioningTo(to), "deploying %s (%s)", childName(s.bg.Name, to), why)
	s.applyChild(to, restore)
	s.after(s.opts.reschedule)
}

// savepointing: the transition savepoint of side runs; once it completes
// the other side is deployed from it.
func (s *step) savepointing(side color) {
	cur := s.children[side]
	if !s.specChanged() {
		// Changed back while the savepoint ran: nothing to transition to.
		s.next.TransitionSnapshot, s.next.SavepointTriggerID = "", ""
		s.to(active(side), "the spec is the active one again")
		return
	}
	if cur == nil {
		s.abort(side, "the active child %s does not exist", childName(s.bg.Name, side))
		return
	}
	snap, err := s.c.Caches.Snapshot(s.bg.Namespace, s.next.TransitionSnapshot)
	if apierrors.IsNotFound(err) {
		s.createSnapshot(cur, s.next.TransitionSnapshot) // a crash came between the record and the create
		s.after(s.opts.reschedule)
		return
	}
	if err != nil {
		s.fail("%v", err)
		return
	}
	s.next.SavepointTriggerID = snap.Status.TriggerID
	switch snap.Status.State {
	case v1beta1.SnapshotCompleted:
		s.transition(side, savepointLocation(snap.Status.Path), "from savepoint "+snap.Status.Path)
	case v1beta1.SnapshotFailed, v1beta1.SnapshotAbandoned:
		s.record() // not retried until the spec changes again
		s.abort(side, "the transition savepoint %s %s: %s", snap.Name, snap.Status.State, snap.Status.Error)
	default:
		s.after(s.opts.reschedule)
	}
}

// transitioning: the new side is deployed; once it is ready (and the
// deletion delay passed) the old one is deleted, then the new one becomes
// active. Not ready within the grace period: aborted, the old one stays.
func (s *step) transitioning(ctx context.Context, to color) {
	from := to.other()
	old, nw := s.children[from], s.children[to]
	if nw == nil {
		restore, err := s.transitionRestore()
		if err != nil {
			s.abort(from, "%v", err)
			return
		}
		s.applyChild(to, restore) // a crash came between the record and the create
		s.after(s.opts.reschedule)
		return
	}
	if s.specChanged() {
		last, _ := s.lastSpec()
		if jobengine.Classify(last.Template.Spec, s.bg.Spec.Template.Spec) == jobengine.ChangeSuspend {
			// As upstream: a suspend waits for the transition to end.
			s.after(s.opts.reschedule)
		} else {
			s.record()
			s.next.AbortTimestamp = timestamp(s.now.Add(s.opts.abortGrace))
			s.next.DeploymentReadyTimestamp = ""
			s.event(corev1.EventTypeNormal, reasons.ReasonBlueGreenPatched, "%s patched during the transition", nw.Name)
			s.applyChild(to, restorePathOf(nw))
			s.after(s.opts.reschedule)
			return
		}
	}
	if old == nil {
		s.finish(to)
		return
	}
	s.mirror(old, v1beta1.JobStatusReconciling)
	if ready(nw) {
		if s.next.DeploymentReadyTimestamp == "" {
			s.next.DeploymentReadyTimestamp = timestamp(s.now)
			klog.FromContext(ctx).Info("New child ready", "child", nw.Name, "deletionDelay", s.opts.deleteDelay)
		}
		readyAt, _ := time.Parse(time.RFC3339Nano, s.next.DeploymentReadyTimestamp)
		if wait := readyAt.Add(s.opts.deleteDelay).Sub(s.now); wait > 0 {
			s.after(wait)
			return
		}
		if old.DeletionTimestamp == nil {
			s.deleteChild(old)
		}
		s.after(s.opts.reschedule)
		return
	}
	if old.DeletionTimestamp != nil {
		// The old child is already going: the new one is the job now.
		s.after(s.opts.reschedule)
		return
	}
	abortAt, err := time.Parse(time.RFC3339Nano, s.next.AbortTimestamp)
	if err != nil || !s.now.Before(abortAt) {
		s.abort(from, "%s not ready within the abort grace period %s (%s)", nw.Name, s.opts.abortGrace, notReadyReason(nw))
		s.suspend(nw)
		return
	}
	s.after(min(s.opts.reschedule, abortAt.Sub(s.now)))
}

// transitionRestore is where the new child starts from: the transition
// savepoint's path, or (no savepoint: stateless, redeploy) the template's.
func (s *step) transitionRestore() (string, error) {
	if s.next.TransitionSnapshot == "" {
		if job := s.bg.Spec.Template.Spec.Job; job != nil {
			return job.InitialSavepointPath, nil
		}
		return "", nil
	}
	snap, err := s.c.Caches.Snapshot(s.bg.Namespace, s.next.TransitionSnapshot)
	if err != nil {
		return "", fmt.Errorf("the transition savepoint %s: %w", s.next.TransitionSnapshot, err)
	}
	if snap.Status.State != v1beta1.SnapshotCompleted || snap.Status.Path == "" {
		return "", fmt.Errorf("the transition savepoint %s is %s, not COMPLETED", snap.Name, snap.Status.State)
	}
	return savepointLocation(snap.Status.Path), nil
}

// abort gives the transition up: ACTIVE_<side> again, with the error; the
// caller suspends the new child after the write.
func (s *step) abort(side color, format string, args ...any) {
	msg := fmt.Sprintf("Aborting deployment '%s', rolling B/G deployment back to %s: %s",
		childName(s.bg.Name, side.other()), active(side), fmt.Sprintf(format, args...))
	s.next.AbortTimestamp, s.next.DeploymentReadyTimestamp, s.next.SavepointTriggerID, s.next.TransitionSnapshot = "", "", "", ""
	s.next.Error = msg
	s.mirror(s.children[side], v1beta1.JobStatusFailing)
	s.next.BlueGreenState = active(side)
	s.event(corev1.EventTypeWarning, reasons.ReasonBlueGreenAborted, "%s", msg)
}

// snapshotFor builds the transition savepoint of child recorded at slot.
func (s *step) snapshotFor(child *v1beta1.FlinkDeployment, slot time.Time) (*v1beta1.FlinkStateSnapshot, error) {
	values := map[string]any{}
	if fc := child.Spec.FlinkConfiguration; fc != nil {
		v, err := fc.Values()
		if err != nil {
			return nil, fmt.Errorf("flinkConfiguration of %s: %w", child.Name, err)
		}
		values = v
	}
	cfg, _, err := config.Effective(s.c.CurrentConfig(), values)
	if err != nil {
		return nil, fmt.Errorf("configuration of %s: %w", child.Name, err)
	}
	return snapshotrules.TransitionSavepoint(snapshotrules.JobView{
		Kind: v1beta1.JobReferenceKindDeployment, Namespace: child.Namespace, Name: child.Name,
		Labels: child.Labels, Config: cfg,
	}, slot)
}

// createSnapshot creates the transition savepoint name of child (done when
// it exists).
func (s *step) createSnapshot(child *v1beta1.FlinkDeployment, name string) {
	s.do("create snapshot", func(ctx context.Context) error {
		slot, ok := snapshotrules.TransitionSavepointSlot(name)
		if !ok {
			return fmt.Errorf("recorded transition savepoint name %s has no time slot", name)
		}
		snap, err := s.snapshotFor(child, slot)
		if err != nil {
			return err
		}
		if snap.Name != name {
			return fmt.Errorf("transition savepoint name %s, recorded %s", snap.Name, name)
		}
		_, err = s.c.Client.FlinkV1beta1().FlinkStateSnapshots(snap.Namespace).Create(ctx, snap, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// applyChild creates the child of side from the current template, or
// updates the existing one's spec (and labels) to it.
func (s *step) applyChild(side color, restore string) {
	desired := desiredChild(s.bg, side, restore)
	existing := s.children[side]
	s.do("apply "+side.lower(), func(ctx context.Context) error {
		deployments := s.c.Client.FlinkV1beta1().FlinkDeployments(s.bg.Namespace)
		if existing == nil {
			_, err := deployments.Create(ctx, desired, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				return err
			}
			// Created by this step before a crash, or not seen by the
			// cache yet: update what is there.
			if existing, err = deployments.Get(ctx, desired.Name, metav1.GetOptions{}); err != nil {
				return err
			}
			if !ownedBy(existing, s.bg) {
				return fmt.Errorf("FlinkDeployment %s exists and is not owned by this blue/green deployment", desired.Name)
			}
		}
		if equality.Semantic.DeepEqual(existing.Spec, desired.Spec) && equality.Semantic.DeepEqual(existing.Labels, desired.Labels) {
			return nil
		}
		toWrite := existing.DeepCopy()
		toWrite.Spec = desired.Spec
		toWrite.Labels = desired.Labels
		_, err := deployments.Update(ctx, toWrite, metav1.UpdateOptions{})
		return err
	})
}

// suspend asks child's job to suspend (its upgrade mode says how).
func (s *step) suspend(child *v1beta1.FlinkDeployment) {
	s.do("suspend "+child.Name, func(ctx context.Context) error {
		toWrite := child.DeepCopy()
		if toWrite.Spec.Job == nil || toWrite.Spec.Job.State == v1beta1.JobStateSuspended {
			return nil
		}
		toWrite.Spec.Job.State = v1beta1.JobStateSuspended
		_, err := s.c.Client.FlinkV1beta1().FlinkDeployments(child.Namespace).Update(ctx, toWrite, metav1.UpdateOptions{})
		return err
	})
}

// deleteChild deletes the old child (that one object: UID precondition).
func (s *step) deleteChild(child *v1beta1.FlinkDeployment) {
	s.event(corev1.EventTypeNormal, reasons.ReasonBlueGreenTransition, "deleting %s: the new child is ready", child.Name)
	s.do("delete "+child.Name, func(ctx context.Context) error {
		uid := child.UID
		err := s.c.Client.FlinkV1beta1().FlinkDeployments(child.Namespace).Delete(ctx, child.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	})
}

// ingress makes the Ingress of spec.ingress lead to side (or removes it).
func (s *step) ingress(side color) {
	child := s.children[side]
	var desired *networkingv1.Ingress
	if spec := s.bg.Spec.Ingress; spec != nil && child != nil {
		port := int32(8081)
		if fc := child.Spec.FlinkConfiguration; fc != nil {
			if v, err := fc.Values(); err == nil {
				if flat, err := config.Flatten(v); err == nil {
					if p, err := cluster.RESTPort(flat); err == nil {
						port = p
					}
				}
			}
		}
		var err error
		if desired, err = cluster.BlueGreenIngress(s.bg.Name, s.bg.Namespace, ownerRef(s.bg), spec, child.Name, port); err != nil {
			s.fail("spec.ingress: %v", err)
			return
		}
	}
	s.do("ingress", func(ctx context.Context) error {
		return s.c.applyIngress(ctx, s.bg, desired)
	})
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
