package bluegreen

import (
	"strings"
	"testing"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

func activeIn(state v1beta1.FlinkBlueGreenDeploymentState) func(*v1beta1.FlinkBlueGreenDeployment) bool {
	return func(bg *v1beta1.FlinkBlueGreenDeployment) bool { return bg.Status.BlueGreenState == state }
}

// Create: INITIALIZING_BLUE, the blue child (upstream's name, label and an
// owner reference), then ACTIVE_BLUE with the child's job RUNNING.
func TestCreateBecomesActiveBlue(t *testing.T) {
	f := newFixture(t)
	f.create(newBlueGreen("bg", v1beta1.UpgradeModeSavepoint, nil))
	f.step("bg")
	if bg := f.get("bg"); bg.Status.BlueGreenState != v1beta1.BlueGreenInitializingBlue || bg.Status.JobStatus.State != v1beta1.JobStatusReconciling {
		t.Fatalf("after the first sync: %s, job %s", bg.Status.BlueGreenState, bg.Status.JobStatus.State)
	}
	blueChild := f.child("bg-blue")
	if blueChild == nil || blueChild.Labels[v1beta1.BlueGreenDeploymentTypeLabel] != "BLUE" || len(blueChild.OwnerReferences) != 1 ||
		blueChild.OwnerReferences[0].Kind != "FlinkBlueGreenDeployment" || blueChild.OwnerReferences[0].Name != "bg" {
		t.Fatalf("blue child %+v", blueChild)
	}
	bg := f.until("bg", 5, "ACTIVE_BLUE", activeIn(v1beta1.BlueGreenActiveBlue))
	if bg.Status.JobStatus.State != v1beta1.JobStatusRunning || bg.Status.JobStatus.JobID == "" || bg.Status.Error != "" {
		t.Errorf("active: job %+v, error %q", bg.Status.JobStatus, bg.Status.Error)
	}
	if names := f.childNames(); len(names) != 1 {
		t.Errorf("children %v, want only blue", names)
	}
}

// A change that needs state: SAVEPOINTING_BLUE (a FlinkStateSnapshot of the
// blue child, trigger type UPGRADE), TRANSITIONING_TO_GREEN (green from
// the savepoint's path, without "file:"), blue deleted once green is
// ready, then ACTIVE_GREEN.
func TestStatefulTransition(t *testing.T) {
	f := newFixture(t)
	f.create(newBlueGreen("bg", v1beta1.UpgradeModeLastState, nil))
	f.until("bg", 5, "ACTIVE_BLUE", activeIn(v1beta1.BlueGreenActiveBlue))
	f.events()
	f.edit("bg", setSlots("2"))
	f.step("bg")
	bg := f.get("bg")
	if bg.Status.BlueGreenState != v1beta1.BlueGreenSavepointingBlue || bg.Status.TransitionSnapshot == "" {
		t.Fatalf("after the change: %s, snapshot %q", bg.Status.BlueGreenState, bg.Status.TransitionSnapshot)
	}
	snaps := f.snapshots()
	if len(snaps) != 1 || snaps[0].Name != bg.Status.TransitionSnapshot || snaps[0].Spec.JobReference.Name != "bg-blue" ||
		snaps[0].Spec.Savepoint == nil || snaps[0].Labels[v1beta1.LabelSnapshotTriggerType] != string(v1beta1.SnapshotTriggerUpgrade) {
		t.Fatalf("snapshots %+v", snaps)
	}
	bg = f.until("bg", 3, "TRANSITIONING_TO_GREEN", activeIn(v1beta1.BlueGreenTransitioningToGreen))
	green := f.child("bg-green")
	want := "/savepoints/" + snaps[0].Name
	if green == nil || green.Spec.Job.InitialSavepointPath != want || f.child("bg-blue") == nil {
		t.Fatalf("green %v (restore %q, want %q), blue kept %v", green != nil, green.Spec.Job.InitialSavepointPath, want, f.child("bg-blue") != nil)
	}
	// While green starts from it, the savepoint is a referenced one:
	// history cleanup keeps it.
	f.refresh()
	if refs, err := f.caches.SnapshotReferrers(ns, snaps[0].Name); err != nil || len(refs) != 1 || refs[0] != "FlinkBlueGreenDeployment default/bg" {
		t.Errorf("referrers of the transition savepoint: %v %v", refs, err)
	}
	bg = f.until("bg", 6, "ACTIVE_GREEN", activeIn(v1beta1.BlueGreenActiveGreen))
	if f.child("bg-blue") != nil || f.child("bg-green") == nil {
		t.Errorf("children after the transition: %v, want only green", f.childNames())
	}
	if bg.Status.JobStatus.State != v1beta1.JobStatusRunning || bg.Status.TransitionSnapshot != "" || bg.Status.Error != "" {
		t.Errorf("active green: job %s, snapshot %q, error %q", bg.Status.JobStatus.State, bg.Status.TransitionSnapshot, bg.Status.Error)
	}
	events := strings.Join(f.events(), "\n")
	for _, step := range []string{"ACTIVE_BLUE -> SAVEPOINTING_BLUE", "SAVEPOINTING_BLUE -> TRANSITIONING_TO_GREEN", "TRANSITIONING_TO_GREEN -> ACTIVE_GREEN"} {
		if !strings.Contains(events, step) {
			t.Errorf("no event for %s in\n%s", step, events)
		}
	}
}

// Stateless: no savepoint, green from empty state.
func TestStatelessTransition(t *testing.T) {
	f := newFixture(t)
	f.create(newBlueGreen("bg", v1beta1.UpgradeModeStateless, nil))
	f.until("bg", 5, "ACTIVE_BLUE", activeIn(v1beta1.BlueGreenActiveBlue))
	f.edit("bg", setSlots("2"))
	f.step("bg")
	if bg := f.get("bg"); bg.Status.BlueGreenState != v1beta1.BlueGreenTransitioningToGreen {
		t.Fatalf("stateless change: %s, want TRANSITIONING_TO_GREEN at once", bg.Status.BlueGreenState)
	}
	if g := f.child("bg-green"); g == nil || g.Spec.Job.InitialSavepointPath != "" {
		t.Fatalf("green %+v", g)
	}
	f.until("bg", 6, "ACTIVE_GREEN", activeIn(v1beta1.BlueGreenActiveGreen))
	if n := len(f.snapshots()); n != 0 {
		t.Errorf("%d snapshots of a stateless transition", n)
	}
	// Back again: green to blue.
	f.edit("bg", setSlots("1"))
	f.until("bg", 8, "ACTIVE_BLUE again", activeIn(v1beta1.BlueGreenActiveBlue))
	if names := f.childNames(); len(names) != 1 || names[0] != "bg-blue" {
		t.Errorf("children %v, want only blue", names)
	}
}

// A new child that is not ready within the grace period: the transition is
// aborted, blue stays active and untouched, green is suspended, with a
// Warning and status.error.
func TestAbortAfterGracePeriod(t *testing.T) {
	f := newFixture(t)
	f.create(newBlueGreen("bg", v1beta1.UpgradeModeStateless, map[string]string{KeyAbortGracePeriod: "1 min"}))
	f.until("bg", 5, "ACTIVE_BLUE", activeIn(v1beta1.BlueGreenActiveBlue))
	blueBefore := f.child("bg-blue")
	f.broken["bg-green"] = true
	f.events()
	f.edit("bg", setSlots("2"))
	f.until("bg", 3, "TRANSITIONING_TO_GREEN", activeIn(v1beta1.BlueGreenTransitioningToGreen))
	start := f.clock.Now()
	bg := f.until("bg", 10, "aborted to ACTIVE_BLUE", activeIn(v1beta1.BlueGreenActiveBlue))
	if waited := f.clock.Since(start); waited < time.Minute {
		t.Errorf("aborted after %v, before the grace period", waited)
	}
	if !strings.Contains(bg.Status.Error, "Aborting deployment 'bg-green'") || !strings.Contains(bg.Status.Error, "the image does not exist") ||
		bg.Status.JobStatus.State != v1beta1.JobStatusFailing {
		t.Errorf("status after the abort: error %q, job %s", bg.Status.Error, bg.Status.JobStatus.State)
	}
	blue := f.child("bg-blue")
	if blue == nil || blue.Generation != blueBefore.Generation || blue.UID != blueBefore.UID {
		t.Errorf("blue was touched: %+v", blue)
	}
	if g := f.child("bg-green"); g == nil || g.Spec.Job.State != v1beta1.JobStateSuspended {
		t.Errorf("green after the abort: %+v, want suspended", g)
	}
	if n := countPrefix(f.events(), "Warning BlueGreenAborted"); n != 1 {
		t.Errorf("%d BlueGreenAborted warnings", n)
	}
	// Steady afterwards: no retry until the spec changes.
	for range 5 {
		f.step("bg")
	}
	if bg := f.get("bg"); bg.Status.BlueGreenState != v1beta1.BlueGreenActiveBlue {
		t.Errorf("retried the aborted transition: %s", bg.Status.BlueGreenState)
	}
	// A fixed spec transitions again, reusing the suspended child.
	delete(f.broken, "bg-green")
	f.edit("bg", setSlots("3"))
	f.until("bg", 10, "ACTIVE_GREEN", activeIn(v1beta1.BlueGreenActiveGreen))
	if g := f.child("bg-green"); g.Spec.Job.State == v1beta1.JobStateSuspended {
		t.Errorf("the new green is suspended")
	}
}

// A change that needs no redeploy (an operator option) is applied to the
// active child in place: no transition.
func TestPatchChildInPlace(t *testing.T) {
	f := newFixture(t)
	f.create(newBlueGreen("bg", v1beta1.UpgradeModeSavepoint, nil))
	f.until("bg", 5, "ACTIVE_BLUE", activeIn(v1beta1.BlueGreenActiveBlue))
	uid := f.child("bg-blue").UID
	f.edit("bg", func(bg *v1beta1.FlinkBlueGreenDeployment) {
		bg.Spec.Template.Spec.FlinkConfiguration = v1beta1.NewConfiguration(flinkConf("1",
			map[string]string{"kubernetes.operator.periodic.savepoint.interval": "1h"}))
	})
	for range 3 {
		f.step("bg")
	}
	bg := f.get("bg")
	blue := f.child("bg-blue")
	if bg.Status.BlueGreenState != v1beta1.BlueGreenActiveBlue || blue.UID != uid || f.child("bg-green") != nil || len(f.snapshots()) != 0 {
		t.Fatalf("patch: state %s, children %v, %d snapshots", bg.Status.BlueGreenState, f.childNames(), len(f.snapshots()))
	}
	if !strings.Contains(string(blue.Spec.FlinkConfiguration.Raw), "periodic.savepoint.interval") {
		t.Errorf("blue not patched: %s", blue.Spec.FlinkConfiguration.Raw)
	}
}

// spec.ingress: one Ingress named after the blue/green deployment, leading
// to the active child's REST Service, switched at the end of a transition.
func TestIngressFollowsActiveChild(t *testing.T) {
	f := newFixture(t)
	bgObj := newBlueGreen("bg", v1beta1.UpgradeModeStateless, nil)
	bgObj.Spec.Ingress = &v1beta1.IngressSpec{Template: "{{name}}.{{namespace}}.example.com", ClassName: "nginx",
		Annotations: map[string]string{"nginx.ingress.kubernetes.io/rewrite-target": "/"}}
	f.create(bgObj)
	f.until("bg", 5, "ACTIVE_BLUE", activeIn(v1beta1.BlueGreenActiveBlue))
	f.step("bg")
	backend := func() string {
		ing := f.ingress("bg")
		if ing == nil {
			return ""
		}
		return ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name
	}
	if got := backend(); got != "bg-blue-rest" {
		t.Fatalf("ingress backend %q, want bg-blue-rest", got)
	}
	if ing := f.ingress("bg"); ing.Spec.Rules[0].Host != "bg.default.example.com" || ing.Annotations["nginx.ingress.kubernetes.io/rewrite-target"] != "/" {
		t.Errorf("ingress %+v", ing)
	}
	f.edit("bg", setSlots("2"))
	f.until("bg", 8, "ACTIVE_GREEN", activeIn(v1beta1.BlueGreenActiveGreen))
	if got := backend(); got != "bg-green-rest" {
		t.Errorf("ingress backend %q after the transition, want bg-green-rest", got)
	}
}

// A failed transition savepoint aborts: blue stays, no green.
func TestSavepointFailureAborts(t *testing.T) {
	f := newFixture(t)
	f.create(newBlueGreen("bg", v1beta1.UpgradeModeSavepoint, nil))
	f.until("bg", 5, "ACTIVE_BLUE", activeIn(v1beta1.BlueGreenActiveBlue))
	f.failing = true
	f.edit("bg", setSlots("2"))
	bg := f.until("bg", 5, "aborted", func(bg *v1beta1.FlinkBlueGreenDeployment) bool { return bg.Status.Error != "" })
	if bg.Status.BlueGreenState != v1beta1.BlueGreenActiveBlue || f.child("bg-green") != nil || !strings.Contains(bg.Status.Error, "disk full") {
		t.Errorf("after a failed savepoint: %s, error %q, children %v", bg.Status.BlueGreenState, bg.Status.Error, f.childNames())
	}
}

// A bad option or a template without a job is reported (status.error and
// a Warning) and nothing is deployed.
func TestBadSpecReported(t *testing.T) {
	for name, bg := range map[string]*v1beta1.FlinkBlueGreenDeployment{
		"bad grace period": newBlueGreen("bg", v1beta1.UpgradeModeStateless, map[string]string{KeyAbortGracePeriod: "soon"}),
		"no job": func() *v1beta1.FlinkBlueGreenDeployment {
			bg := newBlueGreen("bg", v1beta1.UpgradeModeStateless, nil)
			bg.Spec.Template.Spec.Job = nil
			return bg
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.create(bg)
			f.step("bg")
			f.step("bg")
			got := f.get("bg")
			if got.Status.Error == "" || got.Status.BlueGreenState != "" || len(f.childNames()) != 0 {
				t.Errorf("status %+v, children %v", got.Status, f.childNames())
			}
			if n := countPrefix(f.events(), "Warning ValidationError"); n != 1 {
				t.Errorf("%d ValidationError warnings, want 1", n)
			}
		})
	}
}
