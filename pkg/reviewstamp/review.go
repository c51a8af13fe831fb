// Package reviewstamp is the proof, carried on an object, that the operator's
// admission webhook authorized that object's reference to another
// namespace: a FlinkStateSnapshot's spec.jobReference, or a FlinkDeployment's
// or FlinkSessionJob's spec.job.initialStateSnapshotRef.
//
// Checking at sync time whether a webhook is registered proves nothing
// about an object admitted before it was (or while it failed open, or
// outside its selectors). So the webhook, once its SubjectAccessReview
// allowed the reference, stamps the object with an annotation holding an
// HMAC, under a key only the operator holds, over the object's kind,
// namespace and name (and uid when it has one), the reference, the
// requesting user and the time. The controllers act on a cross-namespace
// reference only if that stamp verifies for the object as it is now:
//
//   - a stamp copied to another object names the wrong object;
//   - a reference edited after admission is not the one that was signed;
//   - a stamp made up or edited by a user fails the HMAC;
//   - a stamp copied into an object re-created under the same name (to
//     replay it while the webhook is down) is too far from the new
//     object's creationTimestamp: at CREATE the uid does not exist yet, so
//     a CREATE stamp is bound to the moment of admission instead, which the
//     API server's creationTimestamp (set right after mutating admission,
//     never writable by users) must match within CreateWindow.
//
// The package is pure: keys come from a Keys (pkg/webhook.ReviewKey keeps
// them in a Secret), and the same code signs (webhook) and verifies
// (webhook and controllers).
package reviewstamp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotation holds the stamp.
const Annotation = "flinkops.io/cross-namespace-review"

// CreateWindow is how far a CREATE stamp's time may be from the object's
// creationTimestamp: the admission chain between the two takes seconds,
// the rest is clock skew between the operator and the API server.
const CreateWindow = 5 * time.Minute

// version of the stamp format and of what the MAC covers.
const version = 1

// Keys gives the HMAC keys: the one to sign with first, then any still
// accepted. Empty while none is loaded: nothing is signed or accepted.
type Keys interface {
	Keys() [][]byte
}

// Reference is the object a reference names.
type Reference struct {
	// Kind is FlinkDeployment or FlinkSessionJob (a snapshot's target) or
	// FlinkStateSnapshot (a job's initial state).
	Kind      string
	Namespace string
	Name      string
}

func (r Reference) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// Stamp is the annotation's content.
type Stamp struct {
	Version int `json:"v"`
	// User is who the SubjectAccessReview was for (the requesting user).
	User string `json:"user"`
	// UID is the object's uid, empty when stamped at CREATE.
	UID types.UID `json:"uid,omitempty"`
	// Issued is when the webhook stamped the object, RFC 3339, UTC.
	Issued string `json:"issued"`
	// MAC is the base64url HMAC-SHA256 over everything the stamp vouches for.
	MAC string `json:"mac"`
}

// Sign returns the annotation value that vouches for obj's reference ref,
// reviewed for user at now. obj must have its namespace and name; its uid,
// when set (UPDATE), is bound too.
func Sign(key []byte, kind string, obj metav1.Object, ref Reference, user string, now time.Time) (string, error) {
	if len(key) == 0 {
		return "", errors.New("no review key")
	}
	if obj.GetName() == "" || obj.GetNamespace() == "" {
		return "", errors.New("the object has no name or namespace yet")
	}
	s := Stamp{Version: version, User: user, UID: obj.GetUID(), Issued: now.UTC().Format(time.RFC3339)}
	s.MAC = base64.RawURLEncoding.EncodeToString(mac(key, kind, obj, ref, &s))
	out, err := json.Marshal(s)
	return string(out), err
}

var errNoKey = errors.New("the operator has not loaded its review key yet, so it cannot check the stamp")

// Parse decodes an annotation value (without verifying it).
func Parse(value string) (*Stamp, error) {
	s := &Stamp{}
	if err := json.Unmarshal([]byte(value), s); err != nil {
		return nil, fmt.Errorf("annotation %s is not a review stamp: %v", Annotation, err)
	}
	if s.Version != version {
		return nil, fmt.Errorf("annotation %s has version %d, want %d", Annotation, s.Version, version)
	}
	return s, nil
}

// Verify checks that obj carries a stamp that vouches for its reference
// ref, and returns it. The error says what is wrong, for a status message.
func Verify(keys Keys, kind string, obj metav1.Object, ref Reference) (*Stamp, error) {
	if keys == nil || len(keys.Keys()) == 0 {
		return nil, errNoKey
	}
	value, ok := obj.GetAnnotations()[Annotation]
	if !ok {
		return nil, fmt.Errorf("it has no %s annotation: the operator's admission webhook never reviewed this reference", Annotation)
	}
	return VerifyValue(keys, value, kind, obj, ref)
}

// VerifyValue is Verify for an annotation value given apart from obj
// (the webhook checks whether an old object's stamp still holds).
func VerifyValue(keys Keys, value, kind string, obj metav1.Object, ref Reference) (*Stamp, error) {
	var ks [][]byte
	if keys != nil {
		ks = keys.Keys()
	}
	if len(ks) == 0 {
		return nil, errNoKey
	}
	s, err := Parse(value)
	if err != nil {
		return nil, err
	}
	got, err := base64.RawURLEncoding.DecodeString(s.MAC)
	if err != nil {
		return nil, fmt.Errorf("annotation %s: bad mac", Annotation)
	}
	valid := false
	for _, k := range ks {
		if len(k) > 0 && hmac.Equal(got, mac(k, kind, obj, ref, s)) {
			valid = true
			break
		}
	}
	if !valid {
		return nil, fmt.Errorf("annotation %s does not vouch for this %s %s/%s and its reference to %s: it was made for another object or reference, or altered",
			Annotation, kind, obj.GetNamespace(), obj.GetName(), ref)
	}
	if s.UID != "" {
		if s.UID != obj.GetUID() {
			return nil, fmt.Errorf("annotation %s was made for an earlier object of the same name (uid %s, this one is %s)", Annotation, s.UID, obj.GetUID())
		}
		return s, nil
	}
	issued, err := time.Parse(time.RFC3339, s.Issued)
	if err != nil {
		return nil, fmt.Errorf("annotation %s: bad issued time %q", Annotation, s.Issued)
	}
	created := obj.GetCreationTimestamp().Time
	if created.IsZero() || created.Sub(issued).Abs() > CreateWindow {
		return nil, fmt.Errorf("annotation %s was made at %s, for an object created then, not for this one (created %s)",
			Annotation, s.Issued, created.UTC().Format(time.RFC3339))
	}
	return s, nil
}

// mac is the HMAC over the version, the object (kind, namespace, name, the
// stamp's uid), the reference, the user and the time. A JSON array of
// strings keeps the fields apart whatever they contain.
func mac(key []byte, kind string, obj metav1.Object, ref Reference, s *Stamp) []byte {
	msg, _ := json.Marshal([]string{
		fmt.Sprint(s.Version), kind, obj.GetNamespace(), obj.GetName(), string(s.UID),
		ref.Kind, ref.Namespace, ref.Name, s.User, s.Issued,
	})
	h := hmac.New(sha256.New, key)
	h.Write([]byte("flink-operator cross-namespace review\x00"))
	h.Write(msg)
	return h.Sum(nil)
}
