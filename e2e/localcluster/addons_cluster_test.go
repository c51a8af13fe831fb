package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// hostCommandImage is nodeagent.HostCommandImage (nodeagent imports this
// package): with --host-commands the agent runs such a container's command.
const hostCommandImage = "nodeagent.flinkops.io/host-command"

// TestStorageAndIngress runs, on one cluster with the node agent, the
// storage provisioner's and the ingress's cases (subtests in parallel).
func TestStorageAndIngress(t *testing.T) {
	start, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(start, Options{Out: testWriter{t}, NodeAgent: true, NodeAgentArgs: []string{"--host-commands"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	kube := kubernetes.NewForConfigOrDie(c.RESTConfig())
	t.Run("ClaimOutlivesPod", func(t *testing.T) { t.Parallel(); testClaimOutlivesPod(t, c, kube) })
	t.Run("RetainKeepsVolume", func(t *testing.T) { t.Parallel(); testRetainKeepsVolume(t, c, kube) })
	t.Run("IngressRoutes", func(t *testing.T) { t.Parallel(); testIngressRoutes(t, c, kube) })
}

// poll calls f every 100 ms until it returns true or an error, or d passes.
func poll(t *testing.T, d time.Duration, what string, f func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last error
	for {
		ok, err := f()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last error: %v)", what, d, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func testNamespace(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube-controller-manager makes the ServiceAccount; pods need it.
	poll(t, 30*time.Second, "ServiceAccount "+name+"/default", func() (bool, error) {
		_, err := kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}

func claimPod(name, claim, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "c", Image: hostCommandImage, Command: []string{"sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}}},
		},
	}
}

func waitPodPhase(t *testing.T, kube kubernetes.Interface, ns, name string, want corev1.PodPhase) {
	t.Helper()
	poll(t, 30*time.Second, fmt.Sprintf("pod %s/%s %s", ns, name, want), func() (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodFailed && want != corev1.PodFailed {
			t.Fatalf("pod %s/%s failed: %+v", ns, name, p.Status.ContainerStatuses)
		}
		return p.Status.Phase == want, nil
	})
}

func deletePodAndWait(t *testing.T, kube kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if err := kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "pod "+ns+"/"+name+" gone", func() (bool, error) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

func newClaim(name string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// waitBound waits for the claim to be Bound and checks its volume: made by
// the provisioner as the claim asked. It returns the volume.
func waitBound(t *testing.T, c *Cluster, kube kubernetes.Interface, ns, name, class string, reclaim corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
	t.Helper()
	ctx := context.Background()
	begin := time.Now()
	var claim *corev1.PersistentVolumeClaim
	poll(t, 30*time.Second, "claim "+ns+"/"+name+" Bound", func() (bool, error) {
		var err error
		claim, err = kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && claim.Status.Phase == corev1.ClaimBound, err
	})
	t.Logf("claim %s/%s Bound %s after the check began", ns, name, time.Since(begin).Round(time.Millisecond))
	if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != class {
		t.Errorf("claim's storageClassName %v, want %s", claim.Spec.StorageClassName, class)
	}
	if want := "pvc-" + string(claim.UID); claim.Spec.VolumeName != want {
		t.Errorf("claim bound to %q, want %q", claim.Spec.VolumeName, want)
	}
	if got := claim.Annotations[annStorageProvisioner]; got != StorageProvisioner {
		t.Errorf("claim's %s: %q", annStorageProvisioner, got)
	}
	pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(c.VolumesDir, pv.Name)
	if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != dir {
		t.Errorf("volume's hostPath %+v, want %s", pv.Spec.HostPath, dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Errorf("volume's directory: %v", err)
	}
	size := pv.Spec.Capacity[corev1.ResourceStorage]
	if size.Cmp(resource.MustParse("1Gi")) != 0 || len(pv.Spec.AccessModes) != 1 || pv.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("volume's capacity %s, access modes %v; want the claim's 1Gi, [ReadWriteOnce]", size.String(), pv.Spec.AccessModes)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != claim.UID || ref.Name != name || ref.Namespace != ns {
		t.Errorf("volume's claimRef %+v", pv.Spec.ClaimRef)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != reclaim || pv.Spec.StorageClassName != class || pv.Annotations[annProvisionedBy] != StorageProvisioner {
		t.Errorf("volume's reclaim policy %s, class %s, annotations %v", pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.StorageClassName, pv.Annotations)
	}
	return pv
}

// testClaimOutlivesPod: a pod of a claim that does not exist yet waits
// (ContainerCreating, saying why); the claim, with no class, gets the
// default class and a volume of the provisioner, and the pod runs once the
// claim is Bound: it writes a file that a second pod of the claim reads,
// after the first is deleted. Deleting the claim deletes the volume and its
// directory.
func testClaimOutlivesPod(t *testing.T, c *Cluster, kube kubernetes.Interface) {
	const ns = "storage-test"
	ctx := context.Background()
	testNamespace(t, kube, ns)
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, claimPod("writer", "data", `echo "written by writer" > /data/file`), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 20*time.Second, "writer waiting for its claim", func() (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "writer", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false, err
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		if w.Reason == "ContainerCreating" && strings.Contains(w.Message, `waiting for persistentvolumeclaim "data": not found`) {
			t.Logf("writer waits: %s: %s", w.Reason, w.Message)
			return p.Status.Phase == corev1.PodPending, nil
		}
		return false, nil
	})
	created := time.Now()
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, newClaim("data", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv := waitBound(t, c, kube, ns, "data", DefaultStorageClass, corev1.PersistentVolumeReclaimDelete)
	dir := pv.Spec.HostPath.Path
	waitPodPhase(t, kube, ns, "writer", corev1.PodSucceeded)
	t.Logf("writer Succeeded %s after its claim was created", time.Since(created).Round(time.Millisecond))
	b, err := os.ReadFile(filepath.Join(dir, "file"))
	if err != nil || string(b) != "written by writer\n" {
		t.Fatalf("the volume's file: %q, %v", b, err)
	}
	deletePodAndWait(t, kube, ns, "writer")
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, claimPod("reader", "data", `test "$(cat /data/file)" = "written by writer"`), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodPhase(t, kube, ns, "reader", corev1.PodSucceeded)
	deletePodAndWait(t, kube, ns, "reader")

	deleted := time.Now()
	if err := kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "volume "+pv.Name+" deleted", func() (bool, error) {
		_, err := kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the volume's directory is still there: %v", err)
	}
	t.Logf("volume and directory gone %s after the claim's deletion", time.Since(deleted).Round(time.Millisecond))
}

// testRetainKeepsVolume: a class of the provisioner with reclaimPolicy
// Retain: the deleted claim's volume is Released and stays, with its
// directory and files.
func testRetainKeepsVolume(t *testing.T, c *Cluster, kube kubernetes.Interface) {
	const ns = "retain-test"
	ctx := context.Background()
	testNamespace(t, kube, ns)
	retain := corev1.PersistentVolumeReclaimRetain
	if _, err := kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:    metav1.ObjectMeta{Name: "keep"},
		Provisioner:   StorageProvisioner,
		ReclaimPolicy: &retain,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	class := "keep"
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, newClaim("kept", &class), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv := waitBound(t, c, kube, ns, "kept", "keep", corev1.PersistentVolumeReclaimRetain)
	file := filepath.Join(pv.Spec.HostPath.Path, "file")
	if err := os.WriteFile(file, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "volume "+pv.Name+" Released", func() (bool, error) {
		v, err := kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return err == nil && v.Status.Phase == corev1.VolumeReleased, err
	})
	time.Sleep(2 * time.Second) // time to delete it, if it were deleted
	if _, err := kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("Retain: volume %s: %v", pv.Name, err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "kept" {
		t.Errorf("Retain: the volume's file: %q, %v", b, err)
	}
}

func ingressGet(t *testing.T, c *Cluster, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.IngressURL(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func newIngress(name, path string, class *string, annotations map[string]string) *networkingv1.Ingress {
	impl := networkingv1.PathTypeImplementationSpecific
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: networkingv1.IngressSpec{
			IngressClassName: class,
			Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: path, PathType: &impl, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "basic-rest", Port: networkingv1.ServiceBackendPort{Name: "rest"}},
				}}},
			}}}},
		},
	}
}

// testIngressRoutes: the Ingress the operator makes for a FlinkDeployment
// with upstream's e2e data (path /default/basic(/|$)(.*), rewrite-target
// /$2, class nginx) sends /default/basic/config to /config of the pod
// behind the Service (a fake JobManager, by pod IP and the Service's named
// target port): 503 while no pod is Ready, 200 once one is, 404 for a path
// no Ingress has; an Ingress without a class gets the default class nginx
// and is served; one of another controller's class is not. Served
// Ingresses get the address 127.0.0.1 in their status.
func testIngressRoutes(t *testing.T, c *Cluster, kube kubernetes.Interface) {
	const ns = "default"
	ctx := context.Background()
	if c.IngressAddress == "" || !strings.HasPrefix(c.IngressAddress, "127.0.0.1:") {
		t.Fatalf("IngressAddress %q", c.IngressAddress)
	}
	if _, err := kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "basic-rest"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "basic"},
			Ports:    []corev1.ServicePort{{Name: "rest", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nginx := IngressClassName
	rewrite := map[string]string{annRewriteTarget: "/$2"}
	for _, ing := range []*networkingv1.Ingress{
		newIngress("basic", "/default/basic(/|$)(.*)", &nginx, rewrite),
		newIngress("no-class", "/default/no-class(/|$)(.*)", nil, rewrite),
	} {
		if _, err := kube.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kube.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/other"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := "other"
	if _, err := kube.NetworkingV1().Ingresses(ns).Create(ctx, newIngress("other", "/default/other(/|$)(.*)", &other, rewrite), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No pod behind the Service yet: 503, saying so.
	poll(t, 10*time.Second, "503 without a Ready pod", func() (bool, error) {
		code, body := ingressGet(t, c, "", "/default/basic/config")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "no ready pod of Service default/basic-rest") {
			return true, nil
		}
		return false, fmt.Errorf("HTTP %d: %s", code, body)
	})
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "basic-jobmanager", Labels: map[string]string{"app": "basic"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "jobmanager", Image: "flinkops/fake-jobmanager:latest",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8081}},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	poll(t, 30*time.Second, "GET /default/basic/config through the ingress", func() (bool, error) {
		code, body := ingressGet(t, c, "", "/default/basic/config")
		if code == http.StatusOK && strings.Contains(body, `"flink-version"`) {
			return true, nil
		}
		return false, fmt.Errorf("HTTP %d: %s", code, body)
	})
	t.Logf("the fake JobManager's /config through the ingress %s after the pod was created", time.Since(begin).Round(time.Millisecond))
	for _, tc := range []struct {
		host, path string
		code       int
		body       string
	}{
		{"", "/default/basic/jobs/overview", http.StatusOK, `"jobs"`},
		{"some.host.example", "/default/basic/config", http.StatusOK, `"flink-version"`}, // the host-less rule takes any host
		{"", "/default/no-class/config", http.StatusOK, `"flink-version"`},
		{"", "/default/basicx/config", http.StatusNotFound, "no Ingress path"},
		{"", "/default/other/config", http.StatusNotFound, "no Ingress path"},
		{"", "/", http.StatusNotFound, "no Ingress path"},
	} {
		if code, body := ingressGet(t, c, tc.host, tc.path); code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s (host %q): HTTP %d %q, want %d with %q", tc.path, tc.host, code, body, tc.code, tc.body)
		}
	}
	noClass, err := kube.NetworkingV1().Ingresses(ns).Get(ctx, "no-class", metav1.GetOptions{})
	if err != nil || noClass.Spec.IngressClassName == nil || *noClass.Spec.IngressClassName != IngressClassName {
		t.Errorf("Ingress without a class: class %v (%v), want the default %s", noClass.Spec.IngressClassName, err, IngressClassName)
	}
	for _, name := range []string{"basic", "no-class"} {
		poll(t, 10*time.Second, "status address of Ingress "+name, func() (bool, error) {
			ing, err := kube.NetworkingV1().Ingresses(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			lb := ing.Status.LoadBalancer.Ingress
			return len(lb) == 1 && lb[0].IP == "127.0.0.1", fmt.Errorf("status %+v", ing.Status.LoadBalancer)
		})
	}
	if ing, err := kube.NetworkingV1().Ingresses(ns).Get(ctx, "other", metav1.GetOptions{}); err != nil || len(ing.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("another controller's Ingress: status %+v (%v), want none", ing.Status.LoadBalancer, err)
	}
	// The pod goes: 503 again.
	deletePodAndWait(t, kube, ns, "basic-jobmanager")
	if code, body := ingressGet(t, c, "", "/default/basic/config"); code != http.StatusServiceUnavailable {
		t.Errorf("after the pod's deletion: HTTP %d %q, want 503", code, body)
	}
}
