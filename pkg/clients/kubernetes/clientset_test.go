package kubernetes_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/flinkops/flink-operator/pkg/clients/flink"
	"github.com/flinkops/flink-operator/pkg/clients/kubernetes"
	flinkfake "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

// The generated fake clientsets stand in for the operator's clients in tests.
var (
	_ kubernetes.Interface = (*kubefake.Clientset)(nil)
	_ kubernetes.Interface = (*kubernetes.Clientset)(nil)
	_ flink.Interface      = (*flinkfake.Clientset)(nil)
	_ flink.Interface      = (*flink.Clientset)(nil)
)

// The clients reach the API server at the group's path, asking for
// protobuf as client-go's clients for built-in types do.
func TestClientsetRequests(t *testing.T) {
	var paths, accepts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		accepts = append(accepts, r.Header.Get("Accept"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: 10, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, _ = cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	_, _ = cs.AppsV1().Deployments("ns").Get(ctx, "d", metav1.GetOptions{})
	_, _ = cs.CoordinationV1().Leases("ns").Get(ctx, "l", metav1.GetOptions{})
	fl, err := flink.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fl.FlinkV1beta1().FlinkDeployments("ns").Get(ctx, "f", metav1.GetOptions{})
	want := []string{
		"/api/v1/namespaces/ns/pods/p",
		"/apis/apps/v1/namespaces/ns/deployments/d",
		"/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
		"/apis/flink.apache.org/v1beta1/namespaces/ns/flinkdeployments/f",
	}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("requests %v, want %v", paths, want)
	}
	if !strings.HasPrefix(accepts[0], "application/vnd.kubernetes.protobuf") {
		t.Errorf("pods asked for %q, want protobuf first", accepts[0])
	}
}

func TestClientsetRejectsQPSWithoutBurst(t *testing.T) {
	if _, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1", QPS: 5}); err == nil {
		t.Fatal("QPS without burst accepted")
	}
}
