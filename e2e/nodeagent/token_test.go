package nodeagent

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// TestRefreshTokens: the pod worker requests tokens as the kubelet does
// (the pod's ServiceAccount, bound to the pod, the projection's audience and
// lifetime) and replaces the file after 80% of the lifetime.
func TestRefreshTokens(t *testing.T) {
	a, err := New(Config{RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}, Dir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	var mu sync.Mutex
	var requests []*authenticationv1.TokenRequest
	client.PrependReactor("create", "serviceaccounts", func(action k8stesting.Action) (bool, runtime.Object, error) {
		create := action.(k8stesting.CreateAction)
		if create.GetSubresource() != "token" {
			return false, nil, nil
		}
		if action.GetNamespace() != "ns" || create.(k8stesting.CreateActionImpl).Name != "flink" {
			t.Errorf("token of %s/%s, want ns/flink", action.GetNamespace(), create.(k8stesting.CreateActionImpl).Name)
		}
		tr := create.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		mu.Lock()
		requests = append(requests, tr)
		n := len(requests)
		mu.Unlock()
		tr.Status = authenticationv1.TokenRequestStatus{
			Token:               "token-" + string(rune('0'+n)),
			ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second)),
		}
		return true, tr, nil
	})
	a.client = client
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "jm", UID: types.UID("jm-uid")},
		Spec:       corev1.PodSpec{ServiceAccountName: "flink"},
	}
	src := corev1.ServiceAccountTokenProjection{Path: "token", Audience: "flink", ExpirationSeconds: ptr.To[int64](1)}
	tok, err := a.serviceAccountToken(pod, &src)
	if err != nil || tok.Token != "token-1" {
		t.Fatalf("token %+v, %v", tok, err)
	}
	if d := time.Until(tok.RefreshAt); d <= 0 || d > 800*time.Millisecond {
		t.Errorf("refresh in %s, want 80%% of 1 s", d)
	}
	// A pod with the projection: the worker writes token-2 at setup, then
	// replaces it when due (through the token cache, which reuses it until
	// then).
	pod.Spec.Volumes = []corev1.Volume{{Name: "api", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &src}}}}}}
	w := newPodWorker(a, pod, 1)
	w.dir = t.TempDir()
	if err := w.setup(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(w.dir, "volumes", "api", "token")
	if b, err := os.ReadFile(file); err != nil || string(b) != "token-2" {
		t.Fatalf("token file %q, %v after setup", b, err)
	}
	due, _ := w.objects.nextRefresh()
	if _, err := w.objects.serviceAccountToken(pod, &src); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(requests) != 2 && time.Now().Before(due) {
		t.Errorf("%d token requests, want 2: the cache requests none before the token is due", len(requests))
	}
	mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.volumeLoop(ctx)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(file)
		if string(b) == "token-4" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("token file %q after 5 s, want token-4 (two refreshes)", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	for _, tr := range requests {
		ref := tr.Spec.BoundObjectRef
		if ref == nil || ref.Kind != "Pod" || ref.Name != "jm" || ref.UID != "jm-uid" ||
			len(tr.Spec.Audiences) != 1 || tr.Spec.Audiences[0] != "flink" || *tr.Spec.ExpirationSeconds != 1 {
			t.Errorf("token request %+v", tr.Spec)
		}
	}
}
