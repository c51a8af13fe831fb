package operator

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/rest"
	core "k8s.io/client-go/testing"

	flinkv1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/clients/kubernetes"
	"github.com/flinkops/flink-operator/pkg/config"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

// fakeDiscovery serves flink.apache.org/v1beta1 with the given resources
// (none: the group is not served). Resources can change under a lock.
type fakeDiscovery struct {
	*fakediscovery.FakeDiscovery
	mu sync.Mutex
}

func newFakeDiscovery(plurals ...string) *fakeDiscovery {
	d := &fakeDiscovery{FakeDiscovery: kubefake.NewSimpleClientset().Discovery().(*fakediscovery.FakeDiscovery)}
	d.set(plurals...)
	return d
}

func (d *fakeDiscovery) set(plurals ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Resources = nil
	if len(plurals) == 0 {
		return
	}
	list := &metav1.APIResourceList{GroupVersion: flinkv1beta1.SchemeGroupVersion.String()}
	for _, p := range plurals {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: p, Namespaced: true})
	}
	d.Resources = []*metav1.APIResourceList{list}
}

func (d *fakeDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.FakeDiscovery.ServerResourcesForGroupVersion(gv)
}

func TestCheckCRDs(t *testing.T) {
	cases := []struct {
		name        string
		plurals     []string
		snapshotCRD bool
		errSubstr   string
	}{
		{"all installed", []string{"flinkdeployments", "flinksessionjobs", "flinkstatesnapshots"}, true, ""},
		{"snapshot CRD missing: legacy mode, no error", []string{"flinkdeployments", "flinksessionjobs"}, false, ""},
		{"group missing", nil, false, "CRDs are not installed"},
		{"deployments missing", []string{"flinksessionjobs", "flinkstatesnapshots"}, false, "flinkdeployments.flink.apache.org CRD is not installed"},
		{"session jobs missing", []string{"flinkdeployments"}, false, "flinksessionjobs.flink.apache.org CRD is not installed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkCRDs(newFakeDiscovery(tc.plurals...), "https://api")
			if tc.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
					t.Fatalf("err %v, want %q", err, tc.errSubstr)
				}
				return
			}
			if err != nil || got != tc.snapshotCRD {
				t.Fatalf("got %v %v, want %v", got, err, tc.snapshotCRD)
			}
		})
	}
}

func TestSnapshotCRDInstalledDiscoveryError(t *testing.T) {
	d := newFakeDiscovery("flinkdeployments", "flinksessionjobs", "flinkstatesnapshots")
	d.PrependReactor("get", "resource", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if ok, err := snapshotCRDInstalled(d); ok || err == nil {
		t.Fatalf("got %v %v; want an error, not a decision", ok, err)
	}
}

func TestLegacyConfigDisablesSnapshotResources(t *testing.T) {
	cfg := config.Defaults()
	got := legacyConfig(cfg)
	on, err := config.SnapshotResourcesEnabled(got, config.Config{config.KeySnapshotResourceEnabled: "true"})
	if err != nil || on {
		t.Fatalf("a job's own setting re-enabled snapshot resources: %v %v", on, err)
	}
	if v, _ := cfg.Bool(config.KeySnapshotResourceEnabled); !v {
		t.Fatal("the caller's configuration was changed")
	}
}

// The watcher fires once the CRD appears (not before), and stops with ctx.
func TestWatchSnapshotCRD(t *testing.T) {
	d := newFakeDiscovery("flinkdeployments", "flinksessionjobs")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fired := make(chan struct{}, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchSnapshotCRD(ctx, d, 5*time.Millisecond, func() { fired <- struct{}{} })
	}()
	select {
	case <-fired:
		t.Fatal("fired without the CRD")
	case <-time.After(50 * time.Millisecond):
	}
	d.set("flinkdeployments", "flinksessionjobs", "flinkstatesnapshots")
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("the CRD was not noticed")
	}
	select {
	case <-done: // returns after firing once
	case <-time.After(5 * time.Second):
		t.Fatal("watcher did not return")
	}

	// Cancelled while the CRD is still missing: returns without firing.
	d.set("flinkdeployments", "flinksessionjobs")
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan struct{})
	go func() {
		defer close(done2)
		watchSnapshotCRD(ctx2, d, 5*time.Millisecond, func() { fired <- struct{}{} })
	}()
	time.Sleep(20 * time.Millisecond)
	cancel2()
	select {
	case <-done2:
	case <-time.After(5 * time.Second):
		t.Fatal("watcher ignored cancellation")
	}
	if len(fired) != 0 {
		t.Fatal("fired after cancellation")
	}
}

// restDiscovery reads the API server's resource list of the group version,
// and a group the server does not serve is an empty set, not an error.
func TestRESTDiscovery(t *testing.T) {
	served := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !served || r.URL.Path != "/apis/flink.apache.org/v1beta1" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"flink.apache.org/v1beta1","resources":[
			{"name":"flinkdeployments","namespaced":true,"kind":"FlinkDeployment","verbs":["get"]},
			{"name":"flinkdeployments/status","namespaced":true,"kind":"FlinkDeployment","verbs":["get"]},
			{"name":"flinksessionjobs","namespaced":true,"kind":"FlinkSessionJob","verbs":["get"]}]}`))
	}))
	defer srv.Close()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	d := restDiscovery{client: kube.CoreV1().RESTClient()}
	snapshotCRD, err := checkCRDs(d, srv.URL)
	if err != nil || snapshotCRD {
		t.Fatalf("checkCRDs: %v, %v; want the job CRDs found and no snapshot CRD", snapshotCRD, err)
	}
	served = false
	if _, err := checkCRDs(d, srv.URL); err == nil || !strings.Contains(err.Error(), "CRDs are not installed") {
		t.Fatalf("checkCRDs without the group: %v, want the CRDs reported missing", err)
	}
}

// lateDiscovery serves the group version only from its after-th request on,
// as an API server does for CRDs created a moment before; err, if set, is
// its answer to every request instead.
type lateDiscovery struct {
	calls, after int
	plurals      []string
	err          error
}

func (d *lateDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	d.calls++
	if d.err != nil {
		return nil, d.err
	}
	if d.calls < d.after {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "flink.apache.org"}, "v1beta1")
	}
	list := &metav1.APIResourceList{GroupVersion: gv}
	for _, p := range d.plurals {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: p, Namespaced: true})
	}
	return list, nil
}

// Missing job CRDs are asked for again until they are served or the
// connect timeout ends; other discovery errors end the wait at once.
func TestWaitForCRDs(t *testing.T) {
	ctx := context.Background()
	d := &lateDiscovery{after: 3, plurals: []string{"flinkdeployments", "flinksessionjobs", "flinkstatesnapshots"}}
	snapshotCRD, err := waitForCRDs(ctx, d, "https://api", time.Millisecond)
	if err != nil || !snapshotCRD || d.calls != 3 {
		t.Errorf("CRDs served at the third request: snapshotCRD %v, err %v after %d requests; want true, nil after 3", snapshotCRD, err, d.calls)
	}

	// Served without the session jobs' CRD: waited for as well.
	never := &lateDiscovery{plurals: []string{"flinkdeployments"}}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := waitForCRDs(short, never, "https://api", time.Millisecond); err == nil ||
		!strings.Contains(err.Error(), "flinksessionjobs.flink.apache.org CRD is not installed") {
		t.Errorf("never served: %v, want the session jobs' CRD reported missing", err)
	}
	if never.calls < 2 {
		t.Errorf("never served: asked %d times before giving up, want again until the timeout", never.calls)
	}

	forbidden := &lateDiscovery{err: apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no"))}
	if _, err := waitForCRDs(ctx, forbidden, "https://api", time.Millisecond); err == nil || forbidden.calls != 1 {
		t.Errorf("forbidden: %v after %d requests, want the error after one", err, forbidden.calls)
	}
}

// Without the FlinkBlueGreenDeployment CRD the run goes on without the
// blue/green controller and ends (to start over with it) once the CRD is
// served; with it nothing is polled.
func TestBlueGreenCRDOptional(t *testing.T) {
	d := newFakeDiscovery("flinkdeployments", "flinksessionjobs", "flinkstatesnapshots")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	r := &runState{crdPoll: 5 * time.Millisecond}
	if err := r.checkBlueGreenCRD(ctx, cancel, d); err != nil || !r.blueGreenCRDMissing {
		t.Fatalf("without the CRD: err %v, missing %v", err, r.blueGreenCRDMissing)
	}
	select {
	case <-ctx.Done():
		t.Fatal("the run ended without the CRD")
	case <-time.After(50 * time.Millisecond):
	}
	d.set("flinkdeployments", "flinksessionjobs", "flinkstatesnapshots", "flinkbluegreendeployments")
	select {
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), ErrBlueGreenCRDInstalled) {
			t.Fatalf("the run ended with %v", context.Cause(ctx))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the CRD was not noticed")
	}
	r2 := &runState{crdPoll: 5 * time.Millisecond}
	if err := r2.checkBlueGreenCRD(context.Background(), func(error) { t.Error("cancelled with the CRD served") }, d); err != nil || r2.blueGreenCRDMissing {
		t.Fatalf("with the CRD: err %v, missing %v", err, r2.blueGreenCRDMissing)
	}
}
