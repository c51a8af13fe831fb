package nodeagent_test

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/flinkops/flink-operator/e2e/nodeagent"
)

// TestPodFiles runs `sh -c` containers (HostCommandImage) on an agent of a
// local cluster and checks what a kubelet gives a pod: the service-account
// token from the TokenRequest API with ca.crt and namespace at
// /var/run/secrets/kubernetes.io/serviceaccount (the volume the API
// server's ServiceAccount admission adds), KUBERNETES_SERVICE_HOST/PORT
// leading to the API server, where an in-cluster client built from exactly
// these authenticates as the pod's ServiceAccount; volumes at their mount
// paths; two pods with different hostPaths at one mount path each see their
// own; and a hostPath that does not exist on the machine is kept in the
// agent's directory, nothing of it on the machine.
func TestPodFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	client, dir := agentOnCluster(t, ctx)
	waitFor(t, ctx, time.Minute, "the default ServiceAccount and kube-root-ca.crt", func() bool {
		_, err1 := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		_, err2 := client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err1 == nil && err2 == nil
	})
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "files"}, Data: map[string]string{"greeting": "hello"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	top := "/nodeagent-podfiles-" + strconv.Itoa(os.Getpid()) // on no machine
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount"
	script := `set -e
echo "TOKEN $(cat ` + sa + `/token)"
echo "CA $(base64 -w0 < ` + sa + `/ca.crt)"
echo "NS $(cat ` + sa + `/namespace)"
echo "API $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
echo "GREETING $(cat /etc/podfiles/greeting)"
echo "$WHO" > /flink-data/who
sleep 1
echo "WHO $(cat /flink-data/who)"
`
	pod := func(name, hostPath string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "main", Image: nodeagent.HostCommandImage, Command: []string{"sh", "-c", script},
					Env: []corev1.EnvVar{{Name: "WHO", Value: name}},
					VolumeMounts: []corev1.VolumeMount{
						{Name: "files", MountPath: "/etc/podfiles"},
						{Name: "data", MountPath: "/flink-data"},
					},
				}},
				Volumes: []corev1.Volume{
					{Name: "files", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "files"}}}},
					{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
						Path: hostPath, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
				},
			},
		}
	}
	for name, hostPath := range map[string]string{"one": top + "/one", "two": top + "/two"} {
		p, err := client.CoreV1().Pods("default").Create(ctx, pod(name, hostPath), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		admitted := false
		for _, v := range p.Spec.Volumes {
			admitted = admitted || (strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil)
		}
		if !admitted {
			t.Fatalf("pod %s: the API server added no kube-api-access-* volume: %v", name, p.Spec.Volumes)
		}
	}
	outputs := map[string]map[string]string{}
	for _, name := range []string{"one", "two"} {
		var p *corev1.Pod
		var err error
		waitFor(t, ctx, time.Minute, "pod "+name+" Succeeded", func() bool {
			p, err = client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err == nil && p.Status.Phase == corev1.PodFailed {
				dumpLog(t, filepath.Join(dir, "pods", "default_"+name+"_"+string(p.UID), "logs", "main.log"), 30)
				t.Fatalf("pod %s failed: %v", name, statusOf(p))
			}
			return err == nil && p.Status.Phase == corev1.PodSucceeded
		})
		b, err := os.ReadFile(filepath.Join(dir, "pods", "default_"+name+"_"+string(p.UID), "logs", "main.log"))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok {
				out[k] = v
			}
		}
		outputs[name] = out
	}
	for name, out := range outputs {
		if out["NS"] != "default" || out["GREETING"] != "hello" || out["WHO"] != name {
			t.Errorf("pod %s read %v", name, out)
		}
		// What an in-cluster client (fabric8's in Flink, client-go's
		// InClusterConfig) makes of the pod's files and environment.
		ca, err := base64.StdEncoding.DecodeString(out["CA"])
		if err != nil || !strings.Contains(string(ca), "BEGIN CERTIFICATE") {
			t.Fatalf("pod %s: ca.crt %q: %v", name, out["CA"], err)
		}
		inCluster := kubernetes.NewForConfigOrDie(&rest.Config{
			Host: "https://" + out["API"], BearerToken: out["TOKEN"], TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		})
		review, err := inCluster.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("pod %s: in-cluster client: %v", name, err)
		}
		u := review.Status.UserInfo
		if u.Username != "system:serviceaccount:default:default" || strings.Join(u.Extra["authentication.kubernetes.io/pod-name"], "") != name {
			t.Errorf("pod %s's token authenticates as %s %v", name, u.Username, u.Extra)
		}
	}
	for _, name := range []string{"one", "two"} {
		b, err := os.ReadFile(filepath.Join(dir, "hostpath", top, name, "who"))
		if err != nil || string(b) != name+"\n" {
			t.Errorf("hostPath %s/%s in the agent's directory: %q, %v", top, name, b, err)
		}
	}
	if _, err := os.Lstat(top); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists on the machine (%v)", top, err)
		os.RemoveAll(top)
	}
	if _, err := os.Lstat("/flink-data"); !errors.Is(err, os.ErrNotExist) {
		t.Logf("note: /flink-data exists on this machine (%v), not made by this test", err)
	}
}
