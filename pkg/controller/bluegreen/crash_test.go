package bluegreen

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// transitionRun drives a blue/green deployment from creation through a
// stateful transition (and, with broken, an aborted one) with a crash at
// the crashAt-th fault point (-1: none), checking after every step that
// a job runs (a child neither suspended nor deleted, unless the first one
// is still starting), that at most one transition savepoint exists and
// that no child was created twice; it returns the fault points passed.
func transitionRun(t *testing.T, crashAt int, broken bool) []string {
	f := newFixture(t)
	var points []string
	f.fault = func(_, point string) {
		points = append(points, point)
		if len(points)-1 == crashAt {
			panic(crash{})
		}
	}
	f.create(newBlueGreen("bg", v1beta1.UpgradeModeLastState, map[string]string{KeyAbortGracePeriod: "1 min"}))
	uids := map[string]types.UID{}
	check := func(when string) {
		t.Helper()
		running := 0
		for _, name := range []string{"bg-blue", "bg-green"} {
			d := f.child(name)
			if d == nil {
				continue
			}
			if uid, seen := uids[name]; seen && uid != d.UID {
				t.Fatalf("crash at %d, %s: %s created twice", crashAt, when, name)
			}
			uids[name] = d.UID
			if d.DeletionTimestamp == nil && !suspended(d) {
				running++
			}
		}
		if running == 0 && f.get("bg").Status.BlueGreenState != v1beta1.BlueGreenInitializingBlue && f.get("bg").Status.BlueGreenState != "" {
			t.Fatalf("crash at %d, %s: no child runs (children %v, state %s)", crashAt, when, f.childNames(), f.get("bg").Status.BlueGreenState)
		}
		if n := len(f.snapshots()); n > 1 {
			t.Fatalf("crash at %d, %s: %d transition savepoints", crashAt, when, n)
		}
	}
	for i := 0; f.get("bg").Status.BlueGreenState != v1beta1.BlueGreenActiveBlue; i++ {
		if i > 10 {
			t.Fatalf("crash at %d: not ACTIVE_BLUE", crashAt)
		}
		f.step("bg")
		check("creating")
	}
	if broken {
		f.broken["bg-green"] = true
	}
	f.edit("bg", setSlots("2"))
	wantState := v1beta1.BlueGreenActiveGreen
	if broken {
		wantState = v1beta1.BlueGreenActiveBlue
	}
	for i := 0; ; i++ {
		if i > 20 {
			t.Fatalf("crash at %d: transition did not end: %s, children %v", crashAt, f.get("bg").Status.BlueGreenState, f.childNames())
		}
		f.step("bg")
		check(fmt.Sprintf("transition step %d", i))
		bg := f.get("bg")
		if bg.Status.BlueGreenState == wantState && (broken || f.child("bg-blue") == nil) && (!broken || bg.Status.Error != "") {
			break
		}
	}
	// A few steady steps: the crash left nothing half done.
	for range 3 {
		f.step("bg")
		check("steady")
	}
	bg := f.get("bg")
	snaps := f.snapshots()
	if len(snaps) != 1 {
		t.Fatalf("crash at %d: %d transition savepoints, want 1", crashAt, len(snaps))
	}
	if broken {
		if g := f.child("bg-green"); g == nil || !suspended(g) || f.child("bg-blue") == nil || suspended(f.child("bg-blue")) {
			t.Errorf("crash at %d: after the abort children %v (green suspended %v)", crashAt, f.childNames(), g != nil && suspended(g))
		}
		return points
	}
	green := f.child("bg-green")
	if bg.Status.BlueGreenState != v1beta1.BlueGreenActiveGreen || green == nil || f.child("bg-blue") != nil {
		t.Fatalf("crash at %d: ended %s with children %v", crashAt, bg.Status.BlueGreenState, f.childNames())
	}
	if want := "/savepoints/" + snaps[0].Name; green.Spec.Job.InitialSavepointPath != want {
		t.Errorf("crash at %d: green restores from %q, want the transition savepoint %q", crashAt, green.Spec.Job.InitialSavepointPath, want)
	}
	return points
}

// A crash at every fault point of a stateful transition (and of an aborted
// one) ends as the run without a crash: one active child with the state of
// the savepoint, the savepoint taken once, no child created twice, a job
// running throughout.
func TestCrashAtEveryStep(t *testing.T) {
	for _, broken := range []bool{false, true} {
		points := transitionRun(t, -1, broken)
		if len(points) < 6 {
			t.Fatalf("only %d fault points: %v", len(points), points)
		}
		for i := range points {
			t.Run(fmt.Sprintf("broken=%v/crash-at-%d-%s", broken, i, points[i]), func(t *testing.T) {
				transitionRun(t, i, broken)
			})
		}
	}
}
