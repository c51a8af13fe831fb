package webhook

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

// The first replica creates the key; the next one adopts it: both sign and
// verify with the same key.
func TestReviewKeyShared(t *testing.T) {
	client := fake.NewSimpleClientset()
	a, _ := NewReviewKey(client, "flink-operator", "flink-operator-review-key")
	b, _ := NewReviewKey(client, "flink-operator", "flink-operator-review-key")
	if a.Keys() != nil {
		t.Fatal("a key before Ensure")
	}
	for _, k := range []*ReviewKey{a, b} {
		if err := k.Ensure(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.Keys()) != 1 || len(a.Keys()[0]) != reviewKeyBytes || !bytes.Equal(a.Keys()[0], b.Keys()[0]) {
		t.Fatalf("replicas hold different keys")
	}
	s, err := client.CoreV1().Secrets("flink-operator").Get(t.Context(), "flink-operator-review-key", metav1.GetOptions{})
	if err != nil || !bytes.Equal(s.Data[ReviewKeySecretKey], a.Keys()[0]) {
		t.Fatalf("Secret %v, %v", s, err)
	}
	// An administrator replaces it: every replica adopts the new key.
	s.Data[ReviewKeySecretKey] = bytes.Repeat([]byte{7}, reviewKeyBytes)
	if _, err := client.CoreV1().Secrets("flink-operator").Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Ensure(t.Context()); err != nil || !bytes.Equal(a.Keys()[0], s.Data[ReviewKeySecretKey]) {
		t.Errorf("replaced key not adopted: %v", err)
	}
}

// A replica that loses the create race adopts the winner's key.
func TestReviewKeyCreateRace(t *testing.T) {
	client := fake.NewSimpleClientset()
	winner := bytes.Repeat([]byte{1}, reviewKeyBytes)
	client.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "k", Namespace: "ns"}, Data: map[string][]byte{ReviewKeySecretKey: winner}}
		if err := client.Tracker().Add(s); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), "k")
	})
	k, _ := NewReviewKey(client, "ns", "k")
	if err := k.Ensure(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k.Keys()[0], winner) {
		t.Error("the winner's key was not adopted")
	}
}

// A key too short to be safe is refused, not replaced (another replica may
// sign with it), and keeps the replica from signing.
func TestReviewKeyTooShort(t *testing.T) {
	client := fake.NewSimpleClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "k", Namespace: "ns"},
		Data: map[string][]byte{ReviewKeySecretKey: []byte("short")}})
	k, _ := NewReviewKey(client, "ns", "k")
	if err := k.Ensure(t.Context()); err == nil || !strings.Contains(err.Error(), "holds 5 bytes") || k.Keys() != nil {
		t.Errorf("err %v, keys %d", err, len(k.Keys()))
	}
	if _, err := NewReviewKey(client, "", "k"); err == nil {
		t.Error("no namespace accepted")
	}
}
