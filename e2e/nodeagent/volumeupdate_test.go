package nodeagent_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flinkops/flink-operator/e2e/nodeagent"
)

// volumeUpdateBound is the README's bound on how soon a running pod's
// ConfigMap, Secret or downwardAPI volume shows a change: the agent's
// periodic resync (a kubelet's sync period), which catches an informer
// event that was missed. With the event it is about a second.
const volumeUpdateBound = time.Minute

// TestVolumesFollowObjects runs a `sh` container (HostCommandImage) that
// prints its ConfigMap, Secret and downwardAPI volume files every 50 ms,
// then changes the ConfigMap (a value changed, a key removed), the Secret
// and a pod label while it runs: each change reaches the running container
// within volumeUpdateBound (measured and logged), the ConfigMap's two
// changes at once (one atomic version), while a subPath mount of the
// ConfigMap keeps its first content, as with a kubelet. The volume
// directory keeps one version only.
func TestVolumesFollowObjects(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	client, dir := agentOnCluster(t, ctx)
	waitFor(t, ctx, time.Minute, "the default ServiceAccount", func() bool {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	cms, secrets := client.CoreV1().ConfigMaps("default"), client.CoreV1().Secrets("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "live"}, Data: map[string]string{"greeting": "v1", "other": "o1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"password": []byte("p1")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	script := `while true; do
  echo "READ $(date +%s.%N) greeting=$(cat /etc/live/greeting) other=$(cat /etc/live/other 2>/dev/null || echo -) sub=$(cat /etc/sub-greeting) password=$(cat /etc/creds/password) stage=$(cat /etc/podinfo/stage)"
  sleep 0.05
done`
	pod, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Labels: map[string]string{"stage": "one"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name: "main", Image: nodeagent.HostCommandImage, Command: []string{"sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "live", MountPath: "/etc/live"},
					{Name: "live", MountPath: "/etc/sub-greeting", SubPath: "greeting"},
					{Name: "creds", MountPath: "/etc/creds"},
					{Name: "podinfo", MountPath: "/etc/podinfo"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "live", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "live"}}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
				{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
					Items: []corev1.DownwardAPIVolumeFile{{Path: "stage", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['stage']"}}}}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(dir, "pods", "default_reader_"+string(pod.UID))
	logFile := filepath.Join(podDir, "logs", "main.log")

	// latest is the newest complete READ line the container printed.
	latest := func() (map[string]string, time.Time) {
		b, _ := os.ReadFile(logFile)
		text := string(b)
		text = text[:max(strings.LastIndexByte(text, '\n'), 0)] // a line being written is not read yet
		lines := strings.Split(text, "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			f := strings.Fields(lines[i])
			if len(f) < 2 || f[0] != "READ" {
				continue
			}
			out := map[string]string{}
			for _, kv := range f[2:] {
				k, v, _ := strings.Cut(kv, "=")
				out[k] = v
			}
			secs, _ := strconv.ParseFloat(f[1], 64)
			return out, time.Unix(0, int64(secs*1e9))
		}
		return nil, time.Time{}
	}
	var seen map[string]string
	waitForf(t, ctx, time.Minute, func() string { return "the first read, last seen " + strings.Join(fmtMap(seen), " ") }, func() bool {
		seen, _ = latest()
		return seen["greeting"] == "v1" && seen["other"] == "o1" && seen["password"] == "p1" && seen["stage"] == "one" && seen["sub"] == "v1"
	})

	// awaitChange changes something and waits until the container reads
	// want; it logs the delay (as the test saw the line, and by the
	// container's clock when it read it) and returns what it read.
	awaitChange := func(what string, change func() error, want func(map[string]string) bool) map[string]string {
		t.Helper()
		begin := time.Now()
		if err := change(); err != nil {
			t.Fatal(err)
		}
		var got map[string]string
		var readAt time.Time
		deadline := time.Now().Add(volumeUpdateBound + 30*time.Second) // to measure a miss, not to pass one
		for {
			got, readAt = latest()
			if want(got) {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("%s: the container still reads %v after %s", what, got, time.Since(begin).Round(time.Millisecond))
			}
			time.Sleep(20 * time.Millisecond)
		}
		seenAfter := time.Since(begin)
		t.Logf("%s: the running container read it %s after the update was sent (its clock), the test saw it after %s",
			what, readAt.Sub(begin).Round(time.Millisecond), seenAfter.Round(time.Millisecond))
		if seenAfter > volumeUpdateBound {
			t.Errorf("%s: %s, more than the bound %s", what, seenAfter.Round(time.Millisecond), volumeUpdateBound)
		}
		return got
	}

	got := awaitChange("ConfigMap greeting v1→v2 and key other removed", func() error {
		_, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}, Data: map[string]string{"greeting": "v2"}}, metav1.UpdateOptions{})
		return err
	}, func(m map[string]string) bool { return m["greeting"] == "v2" })
	if got["other"] != "-" {
		t.Errorf("the first read of greeting v2 still read other=%s: not one version", got["other"])
	}
	if got["sub"] != "v1" {
		t.Errorf("the subPath mount reads %s, want v1 (not updated, as with a kubelet)", got["sub"])
	}
	awaitChange("Secret password p1→p2", func() error {
		_, err := secrets.Update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"password": []byte("p2")}}, metav1.UpdateOptions{})
		return err
	}, func(m map[string]string) bool { return m["password"] == "p2" })
	awaitChange("pod label stage one→two (downwardAPI)", func() error {
		_, err := client.CoreV1().Pods("default").Patch(ctx, "reader", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"stage":"two"}}}`), metav1.PatchOptions{})
		return err
	}, func(m map[string]string) bool { return m["stage"] == "two" })

	for _, vol := range []string{"live", "creds", "podinfo"} {
		entries, err := os.ReadDir(filepath.Join(podDir, "volumes", vol))
		if err != nil {
			t.Fatal(err)
		}
		var versions []string
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "..") {
				versions = append(versions, e.Name())
			}
		}
		if len(versions) != 1 {
			t.Errorf("volume %s keeps versions %v, want one", vol, versions)
		}
	}
	if p, err := client.CoreV1().Pods("default").Get(ctx, "reader", metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount != 0 || cs[0].State.Running == nil {
		t.Errorf("the container did not run throughout: %v", statusOf(p))
	}
}

func fmtMap(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}
