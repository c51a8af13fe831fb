package webhook

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

// accessReviews is a fake API server that allows what the webhook asks
// (update of a job, get of a snapshot) only to the users in may, and
// records each review.
func accessReviews(may ...string) (*fake.Clientset, *[]*authorizationv1.SubjectAccessReview) {
	client := fake.NewSimpleClientset()
	var seen []*authorizationv1.SubjectAccessReview
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		seen = append(seen, review)
		attrs := review.Spec.ResourceAttributes
		if attrs != nil && (attrs.Verb == "update" || attrs.Verb == "get") && slices.Contains(may, review.Spec.User) {
			review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "RBAC: allowed by RoleBinding"}
		} else {
			review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: false}
		}
		return true, review, nil
	})
	return client, &seen
}

func crossNamespaceSetup(enabled string, may ...string) (*Validator, *[]*authorizationv1.SubjectAccessReview) {
	client, seen := accessReviews(may...)
	cfg := config.Defaults()
	cfg[config.KeySnapshotCrossNamespaceReferencesEnabled] = enabled
	lookup := newLookup(application("team-b", "job"), sessionCluster("team-b", "session"), sessionJob("team-b", "sj", "session"))
	return NewValidator(Options{Config: cfg, Lookup: lookup, AccessReviews: client.AuthorizationV1().SubjectAccessReviews()}), seen
}

func crossRef(kind v1beta1.JobReferenceKind, name string) v1beta1.JobReference {
	return v1beta1.JobReference{Kind: kind, Name: name, Namespace: "team-b"}
}

func TestCrossNamespaceDisabled(t *testing.T) {
	v, seen := crossNamespaceSetup("false", "alice")
	resp := admit(t, v, request(admissionv1.Create, savepoint("team-a", "s", crossRef(v1beta1.JobReferenceKindDeployment, "job")), nil))
	denied(`spec.jobReference.namespace "team-b": references to a job in another namespace are disabled: the operator option kubernetes.operator.snapshot.cross-namespace-references.enabled is false (an administrator can enable it in the operator configuration)`).
		check(t, resp)
	if len(*seen) != 0 {
		t.Errorf("%d access reviews while the option is off", len(*seen))
	}
}

func TestCrossNamespaceUserWithoutUpdateIsDenied(t *testing.T) {
	v, seen := crossNamespaceSetup("true", "bob")
	req := request(admissionv1.Create, savepoint("team-a", "s", crossRef(v1beta1.JobReferenceKindDeployment, "job")), nil)
	req.UserInfo.Extra = map[string]authenticationExtra{"scopes": {"a", "b"}}
	denied(`user "alice" may not update flinkdeployments.flink.apache.org "job" in namespace "team-b", which this FlinkStateSnapshot refers to: a snapshot may refer to a job in another namespace only if its creator may update that job`).
		check(t, admit(t, v, req))
	if len(*seen) != 1 {
		t.Fatalf("%d access reviews, want 1", len(*seen))
	}
	spec := (*seen)[0].Spec
	want := authorizationv1.ResourceAttributes{Namespace: "team-b", Verb: "update", Group: "flink.apache.org", Resource: "flinkdeployments", Name: "job"}
	if spec.ResourceAttributes == nil || *spec.ResourceAttributes != want {
		t.Errorf("resource attributes %+v, want %+v", spec.ResourceAttributes, want)
	}
	if spec.User != "alice" || spec.UID != "alice-uid" || !slices.Equal(spec.Groups, []string{"team-a", "system:authenticated"}) ||
		!slices.Equal(spec.Extra["scopes"], authorizationv1.ExtraValue{"a", "b"}) {
		t.Errorf("review of %+v, want the request's user, uid, groups and extra", spec)
	}
}

func TestCrossNamespaceUserWithUpdateIsAdmitted(t *testing.T) {
	v, seen := crossNamespaceSetup("true", "alice")
	allowed.check(t, admit(t, v, request(admissionv1.Create, savepoint("team-a", "s", crossRef(v1beta1.JobReferenceKindDeployment, "job")), nil)))
	allowed.check(t, admit(t, v, request(admissionv1.Create, savepoint("team-a", "s2", crossRef(v1beta1.JobReferenceKindSessionJob, "sj")), nil)))
	if len(*seen) != 2 || (*seen)[1].Spec.ResourceAttributes.Resource != "flinksessionjobs" {
		t.Errorf("reviews %+v", *seen)
	}
	// Authorized, but the rules still apply to the target.
	denied("Target for snapshot team-b/missing was not found").
		check(t, admit(t, v, request(admissionv1.Create, savepoint("team-a", "s3", crossRef(v1beta1.JobReferenceKindDeployment, "missing")), nil)))
}

func TestCrossNamespaceAuthorizesBeforeLookingUp(t *testing.T) {
	v, _ := crossNamespaceSetup("true", "bob")
	// A user without rights learns nothing about whether the job exists.
	resp := admit(t, v, request(admissionv1.Create, savepoint("team-a", "s", crossRef(v1beta1.JobReferenceKindDeployment, "missing")), nil))
	deniedMentioning(`user "alice" may not update`).check(t, resp)
}

func TestCrossNamespaceReviewFailure(t *testing.T) {
	client := fake.NewSimpleClientset()
	client.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	cfg := config.Defaults()
	cfg[config.KeySnapshotCrossNamespaceReferencesEnabled] = "true"
	v := NewValidator(Options{Config: cfg, Lookup: newLookup(application("team-b", "job")), AccessReviews: client.AuthorizationV1().SubjectAccessReviews()})
	expect{want: "connection refused", code: http.StatusInternalServerError}.
		check(t, admit(t, v, request(admissionv1.Create, savepoint("team-a", "s", crossRef(v1beta1.JobReferenceKindDeployment, "job")), nil)))

	noClient := NewValidator(Options{Config: cfg, Lookup: newLookup(application("team-b", "job"))})
	expect{want: "no access to SubjectAccessReviews", code: http.StatusInternalServerError}.
		check(t, admit(t, noClient, request(admissionv1.Create, savepoint("team-a", "s", crossRef(v1beta1.JobReferenceKindDeployment, "job")), nil)))
}

func TestSameNamespaceNeedsNoReview(t *testing.T) {
	v, seen := crossNamespaceSetup("false")
	ref := crossRef(v1beta1.JobReferenceKindDeployment, "job")
	allowed.check(t, admit(t, v, request(admissionv1.Create, savepoint("team-b", "s", ref), nil)))
	if len(*seen) != 0 {
		t.Errorf("%d access reviews for a same-namespace reference", len(*seen))
	}
}

// TestCrossNamespaceInitialSnapshotRef: a job that starts from a snapshot
// in another namespace needs the option and the author's right to get it.
func TestCrossNamespaceInitialSnapshotRef(t *testing.T) {
	withRef := func(ns string) *v1beta1.FlinkDeployment {
		d := application("team-a", "job")
		d.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "sp", Namespace: ns}
		return d
	}
	sessionWithRef := func() *v1beta1.FlinkSessionJob {
		j := sessionJob("team-a", "sj", "session")
		j.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "sp", Namespace: "team-b"}
		return j
	}

	off, seen := crossNamespaceSetup("false", "alice")
	denied(`spec.job.initialStateSnapshotRef.namespace "team-b": references to a FlinkStateSnapshot in another namespace are disabled: the operator option kubernetes.operator.snapshot.cross-namespace-references.enabled is false (an administrator can enable it in the operator configuration)`).
		check(t, admit(t, off, request(admissionv1.Create, withRef("team-b"), nil)))
	allowed.check(t, admit(t, off, request(admissionv1.Create, withRef("team-a"), nil)))
	if len(*seen) != 0 {
		t.Errorf("%d access reviews with the option off or a same-namespace reference", len(*seen))
	}

	v, seen := crossNamespaceSetup("true", "bob")
	denied(`user "alice" may not get flinkstatesnapshots.flink.apache.org "sp" in namespace "team-b", which this FlinkDeployment starts from: a job may start from a snapshot in another namespace only if its author may read that snapshot`).
		check(t, admit(t, v, request(admissionv1.Create, withRef("team-b"), nil)))
	deniedMentioning("which this FlinkSessionJob starts from").check(t, admit(t, v, request(admissionv1.Create, sessionWithRef(), nil)))
	want := authorizationv1.ResourceAttributes{Namespace: "team-b", Verb: "get", Group: "flink.apache.org", Resource: "flinkstatesnapshots", Name: "sp"}
	if len(*seen) != 2 || *(*seen)[0].Spec.ResourceAttributes != want {
		t.Fatalf("reviews %+v, want two asking %+v", *seen, want)
	}

	// An update that keeps the reference does not ask again: it was
	// authorized when it was written.
	old := withRef("team-b")
	cur := old.DeepCopy()
	cur.Spec.Job.Parallelism = ptr(int32(7))
	allowed.check(t, admit(t, v, request(admissionv1.Update, cur, old)))
	moved := cur.DeepCopy()
	moved.Spec.Job.InitialStateSnapshotRef.Name = "other"
	deniedMentioning(`may not get flinkstatesnapshots.flink.apache.org "other"`).check(t, admit(t, v, request(admissionv1.Update, moved, cur)))

	ok, _ := crossNamespaceSetup("true", "alice")
	allowed.check(t, admit(t, ok, request(admissionv1.Create, withRef("team-b"), nil)))
	allowed.check(t, admit(t, ok, request(admissionv1.Create, sessionWithRef(), nil)))
}
