package deployment

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// The objects upstream's operator left on a cluster, recorded from real
// runs of its releases 1.15.0 and 1.10.0 (testdata/upstream-<release>,
// SOURCES.md there says how): the tests below load one scenario's objects
// as they were and let this operator take over, for every recording.

// recordings are the recorded upstream releases (testdata/upstream-*),
// by release: 1.15.0 and 1.10.0 at least.
func recordings(t *testing.T) map[string]string {
	return controllertest.RecordedUpstream(t, "testdata", "")
}

// loadRecorded creates every object of a recorded scenario (a directory of
// a recording) in the fake API servers, in namespace ns (the recording's
// namespace is kept in the files; the fixture's is used instead), status,
// UIDs and owner references included.
func (f *takeoverFixture) loadRecorded(dir string) (deployments []string) {
	f.T.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.T.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.T.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(raw, &tm); err != nil {
			f.T.Fatalf("%s: %v", e.Name(), err)
		}
		// Added to the trackers, not created: the fakes' create reactors
		// would give new UIDs, which the owner references name.
		kinds := map[string]struct {
			obj     func() runtime.Object
			tracker k8stesting.ObjectTracker
		}{
			"FlinkDeployment":    {func() runtime.Object { return &v1beta1.FlinkDeployment{} }, f.Client.Tracker()},
			"FlinkSessionJob":    {func() runtime.Object { return &v1beta1.FlinkSessionJob{} }, f.Client.Tracker()},
			"FlinkStateSnapshot": {func() runtime.Object { return &v1beta1.FlinkStateSnapshot{} }, f.Client.Tracker()},
			"Deployment":         {func() runtime.Object { return &appsv1.Deployment{} }, f.Kube.Tracker()},
			"Service":            {func() runtime.Object { return &corev1.Service{} }, f.Kube.Tracker()},
			"ConfigMap":          {func() runtime.Object { return &corev1.ConfigMap{} }, f.Kube.Tracker()},
			"Pod":                {func() runtime.Object { return &corev1.Pod{} }, f.Kube.Tracker()},
		}
		k, ok := kinds[tm.Kind]
		if !ok {
			f.T.Fatalf("%s: kind %q", e.Name(), tm.Kind)
		}
		o := k.obj()
		if err := yaml.Unmarshal(raw, o); err != nil {
			f.T.Fatalf("%s: %v", e.Name(), err)
		}
		m := o.(metav1.Object)
		m.SetNamespace(ns)
		m.SetResourceVersion("")
		if tm.Kind == "FlinkDeployment" {
			deployments = append(deployments, m.GetName())
		}
		err = k.tracker.Add(o)
		if err != nil {
			f.T.Fatalf("%s: %v", e.Name(), err)
		}
	}
	return deployments
}

// seatRecordedJobManager plays the JobManager process the recorded
// Deployment runs: its job (the ConfigMap's id) running since before the
// takeover, not started from a restore point (the recorded paths are the
// recording machine's), so that the fixture's kubeTick keeps it.
func (f *takeoverFixture) seatRecordedJobManager(name string) {
	f.T.Helper()
	jm, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, name, metav1.GetOptions{})
	if err != nil {
		return // none left (a standalone suspend deletes it)
	}
	jobID, restore := f.jobOf(name, jm)
	srv := f.StartJobManager(f.jmOpt)
	if jobID != "" {
		srv.MustAddJob(fakejm.JobSpec{ID: jobID})
	}
	f.jms[name] = &jmProcess{Server: srv, jobID: jobID, restore: restore, deploy: jm.UID}
}

// writes are the create, update and delete requests of the operator's
// last sync to Kubernetes, and its updates of a FlinkDeployment's spec.
func (f *takeoverFixture) writes() []string {
	var out []string
	for _, a := range f.Kube.Actions() {
		switch a.GetVerb() {
		case "create", "update", "delete", "delete-collection", "patch":
			if r := a.GetResource().Resource; r != "events" && r != "subjectaccessreviews" {
				name := ""
				if n, ok := a.(interface{ GetName() string }); ok {
					name = n.GetName()
				}
				out = append(out, a.GetVerb()+" "+r+"/"+name)
			}
		}
	}
	for _, a := range f.Client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetResource().Resource == "flinkdeployments" && a.GetSubresource() == "" {
			out = append(out, "update flinkdeployments/"+u.GetObject().(metav1.Object).GetName())
		}
	}
	return out
}

// TestTakeOverRecordedUpstream: for each FlinkDeployment state recorded
// from upstream's operator (each release recorded, subtests
// <release>/<scenario>), the syncs after the takeover write no spec
// change, start no upgrade, update or delete nothing of the cluster (the
// standalone TaskManager Deployment is not rolled, nor the JobManager
// replaced; only a missing headless Service is created), record no error,
// and keep reporting what upstream reported: its lifecycle state, job id
// and job state, its lastReconciledSpec (upstream's, although it says
// upgradeMode stateless where the spec says savepoint: upstream records a
// first deployment so).
func TestTakeOverRecordedUpstream(t *testing.T) {
	recs := recordings(t)
	for _, release := range slices.Sorted(maps.Keys(recs)) {
		t.Run(release, func(t *testing.T) { takeOverRecordedUpstream(t, recs[release]) })
	}
}

func takeOverRecordedUpstream(t *testing.T, rec string) {
	for _, scenario := range []string{
		"native-running-with-snapshots", "native-suspended-savepoint", "native-resumed-from-savepoint",
		"native-upgraded-savepoint", "native-session-with-sessionjob", "standalone-application-running",
		"standalone-suspended-savepoint",
	} {
		t.Run(scenario, func(t *testing.T) {
			f := newTakeoverFixture(t)
			names := f.loadRecorded(filepath.Join(rec, scenario))
			if len(names) != 1 {
				t.Fatalf("%d FlinkDeployments in %s", len(names), scenario)
			}
			name := names[0]
			up := f.Get(name)
			f.seatRecordedJobManager(name)
			f.Tick()
			f.Restart()
			f.Events()
			for i := range 6 {
				when := "sync " + strconv.Itoa(i+1)
				f.Kube.ClearActions()
				f.Client.ClearActions()
				f.MustSync(name)
				for _, w := range f.writes() {
					// The one object this operator adds: the headless
					// JobManager Service, which Flink's client leaves out
					// of a native cluster with HA (its
					// InternalServiceDecorator); nothing uses it then.
					if w != "create services/" {
						t.Fatalf("%s: the takeover wrote %v", when, f.writes())
					}
				}
				for _, e := range f.Events() {
					for _, reason := range []string{reasons.ReasonSpecChanged, reasons.ReasonDeploymentError, reasons.ReasonUpgradeFailed} {
						if strings.Contains(e, " "+reason+" ") {
							t.Fatalf("%s: event %q", when, e)
						}
					}
				}
				got := f.Get(name)
				if msg := jobengine.ErrorMessage(got.Status.Error); msg != "" {
					t.Fatalf("%s: status.error %q", when, msg)
				}
				rs, urs := got.Status.ReconciliationStatus, up.Status.ReconciliationStatus
				if rs.State != urs.State || rs.LastReconciledSpec != urs.LastReconciledSpec {
					t.Fatalf("%s: reconciliation %s %s, upstream's %s %s", when, rs.State, rs.LastReconciledSpec, urs.State, urs.LastReconciledSpec)
				}
				js, ujs := got.Status.JobStatus, up.Status.JobStatus
				if got.Status.LifecycleState != up.Status.LifecycleState || js.JobID != ujs.JobID || js.State != ujs.State {
					t.Fatalf("%s: %s; upstream reported lifecycle %s, job %s %s", when, statusString(got), up.Status.LifecycleState, ujs.JobID, ujs.State)
				}
				f.Tick()
			}
			if slices.Contains([]string{"native-running-with-snapshots", "standalone-application-running"}, scenario) && f.stops() != 0 {
				t.Errorf("%d stops of the running job", f.stops())
			}
		})
	}
}
