package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// expect checks a decision: want "" means allowed; otherwise denied with
// code and a message that is exactly want (exact) or contains it.
type expect struct {
	want  string
	exact bool
	code  int32
}

func (e expect) check(t *testing.T, resp *admissionv1.AdmissionResponse) {
	t.Helper()
	if e.want == "" {
		if !resp.Allowed {
			t.Errorf("denied (%d): %s", resp.Result.Code, resp.Result.Message)
		}
		return
	}
	if resp.Allowed {
		t.Errorf("allowed, want denied with %q", e.want)
		return
	}
	code := e.code
	if code == 0 {
		code = http.StatusForbidden
	}
	if resp.Result == nil || resp.Result.Code != code {
		t.Errorf("result %+v, want code %d", resp.Result, code)
		return
	}
	if e.exact && resp.Result.Message != e.want {
		t.Errorf("message\n  %q\nwant\n  %q", resp.Result.Message, e.want)
	}
	if !e.exact && !strings.Contains(resp.Result.Message, e.want) {
		t.Errorf("message %q does not mention %q", resp.Result.Message, e.want)
	}
}

func denied(msg string) expect         { return expect{want: msg, exact: true} }
func deniedMentioning(s string) expect { return expect{want: s} }

var allowed = expect{}

func TestSnapshotCreate(t *testing.T) {
	app := application("ns", "job")
	noDir := application("ns", "nodir")
	noDir.Spec.Job.UpgradeMode = v1beta1.UpgradeModeStateless
	noDir.Spec.FlinkConfiguration = nil
	old := application("ns", "old")
	old.Spec.FlinkVersion = v1beta1.FlinkVersion1_16
	lookup := newLookup(app, noDir, old, sessionCluster("ns", "session"),
		sessionJob("ns", "sj", "session"), sessionJob("ns", "orphan", "gone"))

	withCheckpoint := func(s *v1beta1.FlinkStateSnapshot) *v1beta1.FlinkStateSnapshot {
		s.Spec.Savepoint, s.Spec.Checkpoint = nil, &v1beta1.CheckpointSpec{}
		return s
	}
	for _, tc := range []struct {
		name string
		snap *v1beta1.FlinkStateSnapshot
		exp  expect
	}{
		{"savepoint of an existing job", savepoint("ns", "s", deploymentRef("job")), allowed},
		{"target missing", savepoint("ns", "s", deploymentRef("missing")), denied("Target for snapshot ns/missing was not found")},
		{"no reference", func() *v1beta1.FlinkStateSnapshot {
			s := savepoint("ns", "s", deploymentRef("job"))
			s.Spec.JobReference = nil
			return s
		}(), denied("Job reference must be supplied for this snapshot")},
		{"neither kind", func() *v1beta1.FlinkStateSnapshot {
			s := savepoint("ns", "s", deploymentRef("job"))
			s.Spec.Savepoint = nil
			return s
		}(), denied("Exactly one of checkpoint or savepoint configurations has to be set.")},
		{"already exists, no target", func() *v1beta1.FlinkStateSnapshot {
			s := savepoint("ns", "s", deploymentRef("missing"))
			s.Spec.Savepoint = &v1beta1.SavepointSpec{Path: "s3://b/sp-1", AlreadyExists: ptr(true)}
			return s
		}(), allowed},
		{"savepoint without directory", savepoint("ns", "s", deploymentRef("nodir")), deniedMentioning(config.FlinkSavepointDir)},
		{"savepoint with a path", func() *v1beta1.FlinkStateSnapshot {
			s := savepoint("ns", "s", deploymentRef("nodir"))
			s.Spec.Savepoint.Path = "s3://b/sp"
			return s
		}(), allowed},
		{"checkpoint on 1.20", withCheckpoint(savepoint("ns", "s", deploymentRef("job"))), allowed},
		{"checkpoint on 1.16", withCheckpoint(savepoint("ns", "s", deploymentRef("old"))), deniedMentioning("Flink 1.17 or newer")},
		{"session job", savepoint("ns", "s", v1beta1.JobReference{Kind: v1beta1.JobReferenceKindSessionJob, Name: "sj"}), allowed},
		{"session job whose cluster is gone", withCheckpoint(savepoint("ns", "s", v1beta1.JobReference{Kind: v1beta1.JobReferenceKindSessionJob, Name: "orphan"})),
			deniedMentioning("session cluster FlinkDeployment ns/gone was not found")},
		{"missing session job", savepoint("ns", "s", v1beta1.JobReference{Kind: v1beta1.JobReferenceKindSessionJob, Name: "nope"}),
			denied("Target for snapshot ns/nope was not found")},
		{"unknown kind", savepoint("ns", "s", v1beta1.JobReference{Kind: "Pod", Name: "job"}), denied("Target for snapshot ns/job was not found")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.exp.check(t, admit(t, newValidator(lookup, nil), request(admissionv1.Create, tc.snap, nil)))
		})
	}
}

func TestSnapshotUpdate(t *testing.T) {
	v := newValidator(newLookup(), nil) // the target is gone: updates must still pass
	old := savepoint("ns", "s", deploymentRef("job"))
	for _, tc := range []struct {
		name   string
		change func(*v1beta1.FlinkStateSnapshot)
		exp    expect
	}{
		{"labels", func(s *v1beta1.FlinkStateSnapshot) { s.Labels = map[string]string{"snapshot.type": "SAVEPOINT"} }, allowed},
		{"finalizer removed while deleting", func(s *v1beta1.FlinkStateSnapshot) { s.DeletionTimestamp = &metav1.Time{} }, allowed},
		{"other job", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference.Name = "other" },
			denied("spec.jobReference cannot be changed after creation: create a new FlinkStateSnapshot instead")},
		{"savepoint to checkpoint", func(s *v1beta1.FlinkStateSnapshot) {
			s.Spec.Savepoint, s.Spec.Checkpoint = nil, &v1beta1.CheckpointSpec{}
		},
			denied("spec.savepoint and spec.checkpoint cannot be switched after creation: create a new FlinkStateSnapshot instead")},
		{"path", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.Savepoint.Path = "s3://x" }, denied("spec is immutable: create a new FlinkStateSnapshot instead")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := old.DeepCopy()
			tc.change(cur)
			tc.exp.check(t, admit(t, v, request(admissionv1.Update, cur, old)))
		})
	}
}

func TestDeploymentAdmission(t *testing.T) {
	v := newValidator(newLookup(), nil)
	for _, tc := range []struct {
		name   string
		change func(*v1beta1.FlinkDeployment)
		exp    expect
	}{
		{"valid", func(*v1beta1.FlinkDeployment) {}, allowed},
		{"savepoint mode without savepoint dir", func(d *v1beta1.FlinkDeployment) {
			d.Spec.FlinkConfiguration = conf(config.FlinkCheckpointDir, cpDir)
		}, denied("Job could not be upgraded with savepoint while config key[execution.checkpointing.savepoint-dir] is not set")},
		{"bad name", func(d *v1beta1.FlinkDeployment) { d.Name = "Job" }, deniedMentioning("The FlinkDeployment name: Job is invalid")},
		{"cluster build refuses", func(d *v1beta1.FlinkDeployment) {
			d.Spec.FlinkConfiguration = conf(config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir, "taskmanager.numberOfTaskSlots", "many")
		}, deniedMentioning("taskmanager.numberOfTaskSlots")},
		{"native mode", func(d *v1beta1.FlinkDeployment) { d.Spec.Mode = v1beta1.DeploymentModeNative }, allowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := application("ns", "job")
			tc.change(d)
			tc.exp.check(t, admit(t, v, request(admissionv1.Create, d, nil)))
		})
	}

	t.Run("version change after last-state suspend", func(t *testing.T) {
		old := application("ns", "job")
		old.Spec.Job.UpgradeMode = v1beta1.UpgradeModeLastState
		old.Spec.Job.State = v1beta1.JobStateSuspended
		old.Status.ReconciliationStatus.LastReconciledSpec = string(mustJSON(map[string]any{
			"spec": old.Spec, "resource_metadata": map[string]any{"apiVersion": "flink.apache.org/v1beta1", "firstDeployment": false},
		}))
		cur := old.DeepCopy()
		cur.Spec.FlinkVersion = v1beta1.FlinkVersion2_0
		denied("Changing flinkVersion after last-state suspend is not allowed. Restore your cluster with the current flinkVersion and perform the version upgrade afterwards.").
			check(t, admit(t, v, request(admissionv1.Update, cur, old)))

		// Metadata-only updates of the same (now invalid) object pass.
		relabelled := cur.DeepCopy()
		relabelled.Labels = map[string]string{"a": "b"}
		allowed.check(t, admit(t, v, request(admissionv1.Update, relabelled, cur)))
	})

	t.Run("warnings", func(t *testing.T) {
		d := application("ns", "job")
		d.Spec.FlinkConfiguration = conf(config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir, "kubernetes.operator.savepoint.histroy.max.count", "3")
		resp := admit(t, v, request(admissionv1.Create, d, nil))
		allowed.check(t, resp)
		if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "did you mean kubernetes.operator.savepoint.history.max.count") {
			t.Errorf("warnings %q", resp.Warnings)
		}
	})
}

func TestSessionJobAdmission(t *testing.T) {
	lookup := newLookup(sessionCluster("ns", "session"), application("ns", "app"))
	v := newValidator(lookup, nil)
	for _, tc := range []struct {
		name   string
		change func(*v1beta1.FlinkSessionJob)
		exp    expect
	}{
		{"valid", func(*v1beta1.FlinkSessionJob) {}, allowed},
		{"cluster not there yet", func(j *v1beta1.FlinkSessionJob) { j.Spec.DeploymentName = "later" }, allowed},
		{"no deploymentName", func(j *v1beta1.FlinkSessionJob) { j.Spec.DeploymentName = "" }, deniedMentioning("spec.deploymentName is required")},
		{"application cluster", func(j *v1beta1.FlinkSessionJob) { j.Spec.DeploymentName = "app" }, denied("Can not submit session job to application cluster")},
		{"local jar", func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "local:///opt/job.jar" }, deniedMentioning("local:// cannot be used by a session job")},
		{"no job", func(j *v1beta1.FlinkSessionJob) { j.Spec.Job = nil }, denied("The job spec should not be empty")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := sessionJob("ns", "sj", "session")
			tc.change(j)
			tc.exp.check(t, admit(t, v, request(admissionv1.Create, j, nil)))
		})
	}

	t.Run("deploymentName is immutable", func(t *testing.T) {
		old := sessionJob("ns", "sj", "session")
		cur := old.DeepCopy()
		cur.Spec.DeploymentName = "other"
		denied("The deploymentName can't be changed").check(t, admit(t, v, request(admissionv1.Update, cur, old)))
		cur = old.DeepCopy()
		cur.Spec.Job.Parallelism = ptr(int32(3))
		allowed.check(t, admit(t, v, request(admissionv1.Update, cur, old)))
	})

	t.Run("lookup error", func(t *testing.T) {
		broken := newLookup()
		broken.err = errors.New("cache exploded")
		expect{want: "cache exploded", code: http.StatusInternalServerError}.
			check(t, admit(t, newValidator(broken, nil), request(admissionv1.Create, sessionJob("ns", "sj", "session"), nil)))
	})
}

func TestNotSyncedAsksToRetry(t *testing.T) {
	lookup := newLookup(application("ns", "job"))
	lookup.unsynced = true
	v := newValidator(lookup, nil)
	exp := expect{want: "retry in a few seconds", code: http.StatusServiceUnavailable}
	exp.check(t, admit(t, v, request(admissionv1.Create, savepoint("ns", "s", deploymentRef("job")), nil)))
	exp.check(t, admit(t, v, request(admissionv1.Create, sessionJob("ns", "sj", "session"), nil)))
	// A FlinkDeployment needs no lookup.
	allowed.check(t, admit(t, v, request(admissionv1.Create, application("ns", "job"), nil)))
}

func TestOperationsAndKinds(t *testing.T) {
	v := newValidator(newLookup(), nil)
	bad := savepoint("ns", "s", deploymentRef("missing"))
	for _, op := range []admissionv1.Operation{admissionv1.Delete, admissionv1.Connect} {
		allowed.check(t, admit(t, v, request(op, bad, nil)))
	}
	statusUpdate := request(admissionv1.Update, bad, bad)
	statusUpdate.SubResource = "status"
	allowed.check(t, admit(t, v, statusUpdate))

	other := request(admissionv1.Create, bad, nil)
	other.Kind.Kind = "FlinkCluster"
	denied("Unexpected resource: FlinkCluster").check(t, admit(t, v, other))
	other.Kind = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	denied("Unexpected resource: Pod").check(t, admit(t, v, other))

	garbage := request(admissionv1.Create, bad, nil)
	garbage.Object = runtime.RawExtension{Raw: []byte(`{"spec": 7}`)}
	expect{want: "decoding request.object as FlinkStateSnapshot", code: http.StatusBadRequest}.check(t, admit(t, v, garbage))
	empty := request(admissionv1.Create, bad, nil)
	empty.Object = runtime.RawExtension{}
	expect{want: "request.object is empty", code: http.StatusBadRequest}.check(t, admit(t, v, empty))
	noOld := request(admissionv1.Update, bad, nil)
	expect{want: "request.oldObject is empty", code: http.StatusBadRequest}.check(t, admit(t, v, noOld))
}

func TestBadRequests(t *testing.T) {
	v := newValidator(newLookup(), nil)
	for _, tc := range []struct {
		name, contentType string
		body              string
		code              int
		want              string
	}{
		{"empty body", "application/json", "", http.StatusBadRequest, "empty request body"},
		{"not JSON", "application/json", "{", http.StatusBadRequest, "decoding AdmissionReview"},
		{"wrong kind", "application/json", `{"apiVersion":"v1","kind":"Pod"}`, http.StatusBadRequest, "want an admission.k8s.io/v1 AdmissionReview"},
		{"no request", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest, "has no request"},
		{"no uid", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}`, http.StatusBadRequest, "has no uid"},
		{"YAML", "application/yaml", `{}`, http.StatusUnsupportedMediaType, "want application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, v, tc.contentType, []byte(tc.body))
			if code != tc.code || !strings.Contains(string(body), tc.want) {
				t.Errorf("HTTP %d %q, want %d mentioning %q", code, body, tc.code, tc.want)
			}
		})
	}
	t.Run("GET", func(t *testing.T) {
		rec := newRecorder()
		v.Handler().ServeHTTP(rec, mustRequest(http.MethodGet, ValidatePath))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("GET: HTTP %d", rec.Code)
		}
	})
	t.Run("v1beta1 review is answered in v1beta1", func(t *testing.T) {
		body := strings.Replace(string(reviewBody(request(admissionv1.Delete, application("ns", "a"), nil))), "admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1)
		code, out := post(t, v, "application/json", []byte(body))
		if code != http.StatusOK || !strings.Contains(string(out), `"apiVersion":"admission.k8s.io/v1beta1"`) || !strings.Contains(string(out), `"allowed":true`) {
			t.Errorf("HTTP %d %s", code, out)
		}
	})
}

type panickingLookup struct{ *fakeLookup }

func (panickingLookup) Deployment(string, string) (*v1beta1.FlinkDeployment, error) { panic("boom") }

func TestPanicIsAnInternalErrorAnswer(t *testing.T) {
	v := newValidator(panickingLookup{newLookup()}, nil)
	expect{want: "internal error in the flink-operator webhook while validating FlinkSessionJob: boom", code: http.StatusInternalServerError}.
		check(t, admit(t, v, request(admissionv1.Create, sessionJob("ns", "sj", "session"), nil)))
}

// With CurrentConfig the validator judges each admission with the
// operator configuration in use then, read once per admission: an
// operator-wide savepoint directory makes a savepoint-mode deployment
// without its own valid, and the verdict follows the configuration as it
// changes, with no new Validator.
func TestValidatorJudgesWithCurrentConfig(t *testing.T) {
	inUse := config.Defaults()
	reads := 0
	v := NewValidator(Options{Lookup: newLookup(), Config: config.Config{config.FlinkSavepointDir: spDir},
		CurrentConfig: func() config.Config { reads++; return inUse }})
	d := application("ns", "job")
	d.Spec.FlinkConfiguration = conf(config.FlinkCheckpointDir, cpDir)
	noDir := denied("Job could not be upgraded with savepoint while config key[execution.checkpointing.savepoint-dir] is not set")

	noDir.check(t, admit(t, v, request(admissionv1.Create, d, nil)))
	if reads != 1 {
		t.Errorf("configuration read %d times for one admission, want once", reads)
	}
	reloaded := config.Defaults() // a snapshot is replaced, never changed
	reloaded[config.FlinkSavepointDir] = spDir
	inUse = reloaded
	allowed.check(t, admit(t, v, request(admissionv1.Create, d, nil)))
	inUse = config.Defaults()
	noDir.check(t, admit(t, v, request(admissionv1.Create, d, nil)))

	// Without CurrentConfig, Config is the configuration of every admission.
	allowed.check(t, admit(t, newValidator(newLookup(), config.Config{config.FlinkSavepointDir: spDir}), request(admissionv1.Create, d, nil)))
}
