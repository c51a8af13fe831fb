package webhook

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
)

type testKeys [][]byte

func (k testKeys) Keys() [][]byte { return k }

var (
	stampKey = []byte("0123456789abcdef0123456789abcdef")
	stampT0  = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

// stampSetup is crossNamespaceSetup with a review key and a fixed clock.
func stampSetup(keys reviewstamp.Keys, may ...string) (*Validator, *[]*authorizationv1.SubjectAccessReview) {
	client, seen := accessReviews(may...)
	cfg := config.Defaults()
	cfg[config.KeySnapshotCrossNamespaceReferencesEnabled] = "true"
	lookup := newLookup(application("team-b", "job"), sessionCluster("team-b", "session"), sessionJob("team-b", "sj", "session"))
	return NewValidator(Options{Config: cfg, Lookup: lookup, AccessReviews: client.AuthorizationV1().SubjectAccessReviews(),
		ReviewKeys: keys, Clock: testingclock.NewFakeClock(stampT0)}), seen
}

// mutate posts a review to MutatePath through a real HTTP server.
func mutate(t *testing.T, v *Validator, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	srv := httptest.NewServer(v.Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+MutatePath, "application/json", bytes.NewReader(reviewBody(req)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &out); err != nil || out.Response == nil {
		t.Fatalf("HTTP %d, %v: %s", resp.StatusCode, err, body)
	}
	if out.Response.UID != req.UID {
		t.Errorf("response uid %q, want %q", out.Response.UID, req.UID)
	}
	return out.Response
}

// stampAfter applies the response's patch to the annotations of obj and
// returns the resulting review annotation ("" when absent). It knows the
// three patches the webhook makes to it, and fails on anything else; the
// labels and finalizer of a new snapshot (snapshotmeta_test.go) are
// skipped.
func stampAfter(t *testing.T, resp *admissionv1.AdmissionResponse, obj metav1.Object) string {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied: %s", resp.Result.Message)
	}
	ann := obj.GetAnnotations()
	if resp.Patch == nil {
		return ann[reviewstamp.Annotation]
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v", resp.PatchType)
	}
	var ops []struct {
		Op, Path string
		Value    json.RawMessage
	}
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatalf("patch %s: %v", resp.Patch, err)
	}
	ops = slices.DeleteFunc(ops, func(op struct {
		Op, Path string
		Value    json.RawMessage
	}) bool {
		return op.Path == "/metadata/labels" || op.Path == "/metadata/finalizers"
	})
	if len(ops) == 0 {
		return ann[reviewstamp.Annotation]
	}
	if len(ops) != 1 {
		t.Fatalf("patch %s: more than one change of the annotations", resp.Patch)
	}
	op := ops[0]
	out := map[string]string{}
	for k, v := range ann {
		out[k] = v
	}
	switch {
	case op.Op == "remove" && op.Path == "/metadata/annotations/flinkops.io~1cross-namespace-review":
		delete(out, reviewstamp.Annotation)
	case op.Op == "add" && op.Path == "/metadata/annotations" && len(ann) == 0: // JSON drops an empty map
		if err := json.Unmarshal(op.Value, &out); err != nil {
			t.Fatal(err)
		}
	case op.Op == "add" && op.Path == "/metadata/annotations/flinkops.io~1cross-namespace-review" && len(ann) > 0:
		var s string
		if err := json.Unmarshal(op.Value, &s); err != nil {
			t.Fatal(err)
		}
		out[reviewstamp.Annotation] = s
	default:
		t.Fatalf("unexpected patch %s (annotations %v)", resp.Patch, ann)
	}
	obj.SetAnnotations(out)
	return out[reviewstamp.Annotation]
}

// stored is obj as the API server stores it after a CREATE: uid and
// creationTimestamp set.
func stored(obj metav1.Object) {
	obj.SetUID(types.UID("uid-" + obj.GetName()))
	obj.SetCreationTimestamp(metav1.NewTime(stampT0.Add(time.Second)))
}

var jobTarget = reviewstamp.Reference{Kind: "FlinkDeployment", Namespace: "team-b", Name: "job"}

func crossSnapshot(name string) *v1beta1.FlinkStateSnapshot {
	return savepoint("team-a", name, crossRef(v1beta1.JobReferenceKindDeployment, "job"))
}

// CREATE of an allowed cross-namespace snapshot: reviewed once, stamped for
// this snapshot, its reference and its user; the stamp verifies once the
// API server has stored it.
func TestMutateStampsAllowedReference(t *testing.T) {
	v, seen := stampSetup(testKeys{stampKey}, "alice")
	s := crossSnapshot("sp")
	resp := mutate(t, v, request(admissionv1.Create, s, nil))
	value := stampAfter(t, resp, s)
	if value == "" || len(*seen) != 1 {
		t.Fatalf("stamp %q after %d reviews, want a stamp after 1", value, len(*seen))
	}
	stored(s)
	st, err := reviewstamp.Verify(testKeys{stampKey}, "FlinkStateSnapshot", s, jobTarget)
	if err != nil {
		t.Fatal(err)
	}
	if st.User != "alice" || st.UID != "" || st.Issued != "2026-03-01T12:00:00Z" {
		t.Errorf("stamp %+v", st)
	}
	// The validating step admits it without a warning.
	if resp := admit(t, v, request(admissionv1.Create, s, nil)); !resp.Allowed || len(resp.Warnings) != 0 {
		t.Errorf("validating step: %+v", resp)
	}
}

func TestMutateDeniesUserWithoutRight(t *testing.T) {
	v, _ := stampSetup(testKeys{stampKey}, "bob")
	resp := mutate(t, v, request(admissionv1.Create, crossSnapshot("sp"), nil))
	if resp.Allowed || resp.Patch != nil || !strings.Contains(resp.Result.Message, `user "alice" may not update flinkdeployments`) {
		t.Errorf("response %+v, want the SubjectAccessReview's denial and no stamp", resp)
	}
}

// A stamp the request brings along (copied from another object) never
// survives CREATE: a reviewed reference gets a fresh one, an unreviewable
// one is denied, a reference in the same namespace loses it.
func TestMutateReplacesCopiedStamp(t *testing.T) {
	v, _ := stampSetup(testKeys{stampKey}, "alice")
	src := crossSnapshot("reviewed")
	copied := stampAfter(t, mutate(t, v, request(admissionv1.Create, src, nil)), src)

	s := crossSnapshot("copy")
	s.Annotations = map[string]string{reviewstamp.Annotation: copied, "keep": "me"}
	got := stampAfter(t, mutate(t, v, request(admissionv1.Create, s, nil)), s)
	if got == copied || s.Annotations["keep"] != "me" {
		t.Fatalf("copied stamp kept (%v) or other annotations lost: %v", got == copied, s.Annotations)
	}
	stored(s)
	if _, err := reviewstamp.Verify(testKeys{stampKey}, "FlinkStateSnapshot", s, jobTarget); err != nil {
		t.Errorf("fresh stamp: %v", err)
	}

	local := savepoint("team-a", "local", deploymentRef("job"))
	local.Annotations = map[string]string{reviewstamp.Annotation: copied}
	if got := stampAfter(t, mutate(t, v, request(admissionv1.Create, local, nil)), local); got != "" {
		t.Errorf("same-namespace reference kept a stamp")
	}

	denyAll, _ := stampSetup(testKeys{stampKey})
	s = crossSnapshot("copy")
	s.Annotations = map[string]string{reviewstamp.Annotation: copied}
	if resp := mutate(t, denyAll, request(admissionv1.Create, s, nil)); resp.Allowed {
		t.Errorf("user without the right admitted with a copied stamp")
	}
}

// Without a name (generateName) the stamp could not name the object.
func TestMutateRefusesGenerateName(t *testing.T) {
	v, seen := stampSetup(testKeys{stampKey}, "alice")
	s := crossSnapshot("")
	s.GenerateName = "sp-"
	resp := mutate(t, v, request(admissionv1.Create, s, nil))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "needs metadata.name (not generateName)") || len(*seen) != 0 {
		t.Errorf("response %+v after %d reviews", resp.Result, len(*seen))
	}
}

func TestMutateWithoutKey(t *testing.T) {
	v, _ := stampSetup(testKeys{}, "alice")
	resp := mutate(t, v, request(admissionv1.Create, crossSnapshot("sp"), nil))
	if resp.Allowed || resp.Result.Code != http.StatusServiceUnavailable {
		t.Errorf("response %+v, want 503 until the key is loaded", resp.Result)
	}
}

// UPDATEs that keep the reference: a valid stamp stays without a review; one
// the update replaced or dropped is put back; an object that never had one
// gets none from a metadata update (the operator's finalizer, say).
func TestMutateUpdateKeepsReference(t *testing.T) {
	v, seen := stampSetup(testKeys{stampKey}, "alice", "system:serviceaccount:flink-operator:flink-operator")
	old := crossSnapshot("sp")
	good := stampAfter(t, mutate(t, v, request(admissionv1.Create, old, nil)), old)
	stored(old)
	*seen = nil

	cur := old.DeepCopy()
	cur.Finalizers = []string{v1beta1.SnapshotFinalizer}
	if resp := mutate(t, v, request(admissionv1.Update, cur, old)); resp.Patch != nil || !resp.Allowed {
		t.Errorf("metadata update of a stamped snapshot: %+v", resp)
	}

	other := crossSnapshot("other")
	forged := stampAfter(t, mutate(t, v, request(admissionv1.Create, other, nil)), other)
	*seen = nil
	for name, value := range map[string]*string{"replaced": &forged, "dropped": nil} {
		cur := old.DeepCopy()
		if value == nil {
			delete(cur.Annotations, reviewstamp.Annotation)
		} else {
			cur.Annotations[reviewstamp.Annotation] = *value
		}
		if got := stampAfter(t, mutate(t, v, request(admissionv1.Update, cur, old)), cur); got != good {
			t.Errorf("%s stamp: now %q, want the old one back", name, got)
		}
	}

	unreviewed := crossSnapshot("legacy")
	stored(unreviewed)
	cur = unreviewed.DeepCopy()
	cur.Finalizers = []string{v1beta1.SnapshotFinalizer}
	cur.Annotations = map[string]string{reviewstamp.Annotation: forged}
	req := request(admissionv1.Update, cur, unreviewed)
	req.UserInfo.Username = "system:serviceaccount:flink-operator:flink-operator"
	if got := stampAfter(t, mutate(t, v, req), cur); got != "" {
		t.Errorf("an unreviewed snapshot got a stamp from a metadata update: %q", got)
	}
	if len(*seen) != 0 {
		t.Errorf("%d access reviews for updates that keep the reference", len(*seen))
	}
}

// A FlinkDeployment's reference may change: the new one is reviewed and
// stamped (bound to the uid); a user without the right is denied. A spec
// change by an allowed user stamps a reference admitted unreviewed; by
// another user it stays unstamped but is not blocked.
func TestMutateDeploymentReference(t *testing.T) {
	withRef := func(name, snap string) *v1beta1.FlinkDeployment {
		d := application("team-a", name)
		d.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: snap, Namespace: "team-b"}
		stored(d)
		return d
	}
	v, _ := stampSetup(testKeys{stampKey}, "alice")
	old := withRef("clone", "base")
	cur := withRef("clone", "newer")
	got := stampAfter(t, mutate(t, v, request(admissionv1.Update, cur, old)), cur)
	st, err := reviewstamp.Verify(testKeys{stampKey}, "FlinkDeployment", cur, reviewstamp.Reference{Kind: "FlinkStateSnapshot", Namespace: "team-b", Name: "newer"})
	if got == "" || err != nil || st.UID != "uid-clone" {
		t.Fatalf("changed reference: stamp %q, %v", got, err)
	}

	deny, _ := stampSetup(testKeys{stampKey}, "bob")
	if resp := mutate(t, deny, request(admissionv1.Update, withRef("clone", "newer"), old)); resp.Allowed {
		t.Error("a changed reference admitted for a user without the right")
	}

	// Admitted before the webhook: no stamp. A suspend by alice stamps it.
	cur = old.DeepCopy()
	cur.Spec.Job.State = v1beta1.JobStateSuspended
	if got := stampAfter(t, mutate(t, v, request(admissionv1.Update, cur, old)), cur); got == "" {
		t.Error("a spec change by an allowed user did not stamp the unreviewed reference")
	}
	cur = old.DeepCopy()
	cur.Spec.Job.State = v1beta1.JobStateSuspended
	if got := stampAfter(t, mutate(t, deny, request(admissionv1.Update, cur, old)), cur); got != "" {
		t.Errorf("a user without the right got the reference stamped: %q", got)
	}
}

// The validating step warns about a new reference the mutating step did not
// stamp (it is not registered) and denies one whose stamp does not vouch
// for the final object (changed after the mutating step).
func TestValidateChecksStamp(t *testing.T) {
	v, _ := stampSetup(testKeys{stampKey}, "alice")
	s := crossSnapshot("sp")
	stored(s)
	resp := admit(t, v, request(admissionv1.Create, s, nil))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "the operator will not act on this reference") {
		t.Errorf("unstamped: %+v", resp)
	}
	other := crossSnapshot("other")
	copied := stampAfter(t, mutate(t, v, request(admissionv1.Create, other, nil)), other)
	s.Annotations = map[string]string{reviewstamp.Annotation: copied}
	resp = admit(t, v, request(admissionv1.Create, s, nil))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "does not vouch for this FlinkStateSnapshot team-a/sp") {
		t.Errorf("copied stamp: %+v", resp.Result)
	}
}

// Nothing else is mutated: DELETE, subresources, and kinds the webhook
// does not know.
func TestMutateLeavesOtherRequestsAlone(t *testing.T) {
	v, _ := stampSetup(testKeys{stampKey}, "alice")
	del := request(admissionv1.Delete, crossSnapshot("sp"), nil)
	status := request(admissionv1.Update, crossSnapshot("sp"), crossSnapshot("sp"))
	status.SubResource = "status"
	for _, req := range []*admissionv1.AdmissionRequest{del, status} {
		if resp := v.Mutate(t.Context(), req); !resp.Allowed || resp.Patch != nil {
			t.Errorf("%s %s: %+v", req.Operation, req.SubResource, resp)
		}
	}
	bad := request(admissionv1.Create, crossSnapshot("sp"), nil)
	bad.Object = runtime.RawExtension{Raw: []byte("{")}
	if resp := v.Mutate(t.Context(), bad); resp.Allowed {
		t.Error("undecodable object admitted")
	}
}
