package nodeagent

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "POD_IP": "127.100.0.7"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for in, want := range map[string]string{
		"":                                   "",
		"plain":                              "plain",
		"$(A)":                               "a",
		"x$(A)y$(A)":                         "xaya",
		"-Djobmanager.rpc.address=$(POD_IP)": "-Djobmanager.rpc.address=127.100.0.7",
		"$(MISSING)":                         "$(MISSING)",
		"$$(A)":                              "$(A)",
		"$$":                                 "$",
		"cost $5":                            "cost $5",
		"$(unterminated":                     "$(unterminated",
		"end$":                               "end$",
	} {
		if got := Expand(in, lookup); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	entry := []string{"/docker-entrypoint.sh"}
	for _, tc := range []struct {
		name          string
		image         string
		command, args []string
		kind          Kind
		mode          flinkjvm.Mode
		rest          []string
	}{
		{"operator JM", "flink:1.20", entry, []string{"standalone-job", "--job-classname", "X"}, Flink, flinkjvm.StandaloneJob, []string{"--job-classname", "X"}},
		{"operator session JM", "apache/flink:2.3.0-java17", entry, []string{"jobmanager"}, Flink, flinkjvm.JobManager, []string{}},
		{"operator TM", "registry.local:5000/my/flink-job:v3", entry, []string{"taskmanager"}, Flink, flinkjvm.TaskManager, []string{}},
		{"flink image default entrypoint", "flink:1.20", nil, []string{"taskmanager"}, Flink, flinkjvm.TaskManager, []string{}},
		{"flink image other command", "flink:1.20", []string{"bash", "-c", "sleep 1"}, nil, Unsupported, "", nil},
		{"flink image other mode", "flink:1.20", entry, []string{"history-server"}, Unsupported, "", nil},
		{"custom image without entrypoint", "my/job:1", nil, []string{"taskmanager"}, Unsupported, "", nil},
		{"fake flags", "flinkops/fake-jobmanager:latest", nil, []string{"--jobs", "3"}, FakeJobManager, "", []string{"--jobs", "3"}},
		{"fake as operator JM", "flinkops/fake-jobmanager:latest", entry, []string{"standalone-job", "--job-classname", "X"}, FakeJobManager, flinkjvm.StandaloneJob, []string{"--job-classname", "X"}},
		{"fake own command", "flinkops/fake-jobmanager:latest", []string{"/bin/sh"}, nil, Unsupported, "", nil},
		{"nginx", "nginx", nil, nil, Unsupported, "", nil},
		// Native mode: Flink's bash -c wrapper through the entrypoint.
		{"native application JM", "flink:1.20", entry, []string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-application "},
			Flink, flinkjvm.KubernetesApplication, []string{}},
		{"native session JM with entrypoint args", "flink:2.3", nil, []string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-session -Dk='a b'"},
			Flink, flinkjvm.KubernetesSession, []string{"-Dk=a b"}},
		{"native TM", "flink:1.20", entry, []string{"bash", "-c",
			"kubernetes-taskmanager.sh -Dtaskmanager.resource-id='n-taskmanager-1-1' -Dx='it'\\''s' -D taskmanager.memory.network.min=134217730b"},
			Flink, flinkjvm.KubernetesTaskManager, []string{"-Dtaskmanager.resource-id=n-taskmanager-1-1", "-Dx=it's", "-D", "taskmanager.memory.network.min=134217730b"}},
		{"native JM by path", "flink:1.20", entry, []string{"bash", "-c", "/opt/flink/bin/kubernetes-jobmanager.sh kubernetes-application"},
			Flink, flinkjvm.KubernetesApplication, []string{}},
		{"native unknown target", "flink:1.20", entry, []string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-per-job"}, Unsupported, "", nil},
		{"native with an expansion", "flink:1.20", entry, []string{"bash", "-c", "kubernetes-taskmanager.sh $(id)"}, Unsupported, "", nil},
		{"other bash -c", "flink:1.20", entry, []string{"bash", "-c", "sleep 1"}, Unsupported, "", nil},
		{"native mode as a plain argument", "flink:1.20", entry, []string{"kubernetes-taskmanager"}, Unsupported, "", nil},
		{"fake as native JM", "flinkops/fake-jobmanager:latest", entry, []string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-application "},
			FakeJobManager, flinkjvm.KubernetesApplication, []string{}},
		{"fake as native TM", "flinkops/fake-jobmanager:latest", entry, []string{"bash", "-c", "kubernetes-taskmanager.sh -Dk=v"},
			FakeJobManager, flinkjvm.KubernetesTaskManager, []string{"-Dk=v"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(&corev1.Container{Image: tc.image}, tc.command, tc.args)
			if got.Kind != tc.kind || got.Mode != tc.mode {
				t.Fatalf("Classify = %v %q (%s), want %v %q", got.Kind, got.Mode, got.Message, tc.kind, tc.mode)
			}
			if tc.kind == Unsupported {
				if !strings.Contains(got.Message, tc.image) {
					t.Errorf("message %q does not name the image", got.Message)
				}
				return
			}
			if diff := cmp.Diff(tc.rest, got.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPinnedFlinkVersion(t *testing.T) {
	versions := flinkjvm.Versions()
	newest := versions[len(versions)-1]
	pinned1, pinned2 := "", ""
	for _, v := range versions {
		if strings.HasPrefix(v, "1.") {
			pinned1 = v
		}
		if strings.HasPrefix(v, "2.") {
			pinned2 = v
		}
	}
	for _, tc := range []struct {
		image, annotation, want string
		err                     bool
	}{
		{image: "flink:1.20", want: pinned1},
		{image: "flink:1.20.1-scala_2.12-java17", want: pinned1},
		{image: "flink:1.17", want: pinned1},
		{image: "flink:2.0", want: pinned2},
		{image: "flink:2.2", want: pinned2},
		{image: "flink:2.3", want: pinned2},
		{image: "docker.io/library/flink:2.1.0-java21@sha256:abc", want: pinned2},
		{image: "localhost:5000/flink", want: newest},
		{image: "flink:latest", want: newest},
		{image: "flink:java17", want: newest},
		{image: "flink:3.0", err: true},
		{image: "flink:latest", annotation: "v1_20", want: pinned1},
		{image: "flink:2.3", annotation: "1", want: pinned1},
	} {
		pod := &corev1.Pod{}
		if tc.annotation != "" {
			pod.Annotations = map[string]string{AnnotationFlinkVersion: tc.annotation}
		}
		got, err := PinnedFlinkVersion(pod, tc.image)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("PinnedFlinkVersion(%q, annotation %q) = %q, %v; want %q (error %v)", tc.image, tc.annotation, got, err, tc.want, tc.err)
		}
	}
	if got := fakeFlinkVersion(&corev1.Pod{}, "flinkops/fake-jobmanager:latest"); got != newest[:strings.LastIndexByte(newest, '.')] {
		t.Errorf("fakeFlinkVersion(latest) = %q", got)
	}
	if got := fakeFlinkVersion(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationFlinkVersion: "v1_18"}}}, "x"); got != "1.18" {
		t.Errorf("fakeFlinkVersion(annotation v1_18) = %q", got)
	}
}

// fakeObjects is an objectSource over fixed objects.
type fakeObjects struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (f fakeObjects) configMap(ns, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.cms[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f fakeObjects) secret(ns, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (f fakeObjects) serviceAccountToken(pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (serviceAccountToken, error) {
	return serviceAccountToken{Token: "token-of-" + pod.Name + "-for-" + p.Audience, RefreshAt: time.Now().Add(time.Hour)}, nil
}

func testObjects() fakeObjects {
	return fakeObjects{
		cms: map[string]*corev1.ConfigMap{"ns/conf": {Data: map[string]string{
			"config.yaml": "rest.port: 8081\n", "log4j-console.properties": "x", "mode": "fast",
		}}, "ns/kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA"}}},
		secrets: map[string]*corev1.Secret{"ns/creds": {Data: map[string][]byte{"password": []byte("s3cret")}}},
	}
}

func TestContainerEnv(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "jm-0", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "demo"}},
		Spec:       corev1.PodSpec{NodeName: "local-node", ServiceAccountName: "flink"},
	}
	c := &corev1.Container{
		EnvFrom: []corev1.EnvFromSource{
			{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
		},
		Env: []corev1.EnvVar{
			{Name: "_POD_IP_ADDRESS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, Key: "mode"}}},
			{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
			{Name: "OPTIONAL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, Key: "nope", Optional: ptr.To(true)}}},
			{Name: "MEM_MB", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
				Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "ADDR", Value: "$(_POD_IP_ADDRESS):6123 $(UNDEFINED)"},
			{Name: "MODE", Value: "override-$(MODE)"},
		},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("768Mi")}},
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "API", Value: "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: "mine"})
	f := podFields{pod: pod, podIP: "127.100.0.9", hostIP: HostIP, serviceEnv: serviceEnv("https://127.0.0.1:6443")}
	got, err := containerEnv(c, f, testObjects())
	if err != nil {
		t.Fatal(err)
	}
	want := []EnvVar{
		{"CM_config.yaml", "rest.port: 8081\n"}, {"CM_log4j-console.properties", "x"}, {"CM_mode", "fast"},
		{"_POD_IP_ADDRESS", "127.100.0.9"}, {"POD_NAME", "jm-0"}, {"NS", "ns"}, {"APP", "demo"},
		{"MODE", "override-fast"}, {"PASSWORD", "s3cret"}, {"MEM_MB", "768"}, {"ADDR", "127.100.0.9:6123 $(UNDEFINED)"},
		{"API", "127.0.0.1:6443"}, {"KUBERNETES_SERVICE_PORT_HTTPS", "mine"},
		{"KUBERNETES_SERVICE_HOST", "127.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "6443"},
		{"KUBERNETES_PORT", "tcp://127.0.0.1:6443"}, {"KUBERNETES_PORT_6443_TCP", "tcp://127.0.0.1:6443"},
		{"KUBERNETES_PORT_6443_TCP_PROTO", "tcp"}, {"KUBERNETES_PORT_6443_TCP_PORT", "6443"}, {"KUBERNETES_PORT_6443_TCP_ADDR", "127.0.0.1"},
	}
	// envFrom keys come in map order; compare as sets for them.
	gotMap, wantMap := map[string]string{}, map[string]string{}
	for _, e := range got {
		gotMap[e.Name] = e.Value
	}
	for _, e := range want {
		wantMap[e.Name] = e.Value
	}
	if diff := cmp.Diff(wantMap, gotMap); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}

	c.Env = append(c.Env, corev1.EnvVar{Name: "BAD", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, Key: "nope"}}})
	if _, err := containerEnv(c, podFields{pod: pod}, testObjects()); err == nil || !strings.Contains(err.Error(), `no key "nope"`) {
		t.Errorf("missing key: err = %v", err)
	}
}

func TestPrepareVolumes(t *testing.T) {
	dir := t.TempDir()
	hostDir := filepath.Join(dir, "host") // exists: the hostPath is the machine's path
	if err := os.Mkdir(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A hostPath that does not exist on the machine: created below the
	// agent's hostpath directory, never at its own path.
	missingHost := "/nodeagent-test-" + strconv.Itoa(os.Getpid()) + "/data"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "flink-config-volume", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "conf"},
					Items:                []corev1.KeyToPath{{Key: "config.yaml", Path: "config.yaml"}, {Key: "log4j-console.properties", Path: "log4j-console.properties"}},
				}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: hostDir, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}},
				{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "state"}}},
				{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
				}}}},
				{Name: "missing", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: missingHost}}},
			},
			Containers: []corev1.Container{{Name: "main", VolumeMounts: []corev1.VolumeMount{
				{Name: "flink-config-volume", MountPath: "/opt/flink/conf"},
				{Name: "data", MountPath: "/flink-data/"},
				{Name: "creds", MountPath: "/etc/pw", SubPath: "password"},
				{Name: "scratch", MountPath: "/scratch", SubPath: "a/b", ReadOnly: true},
			}}},
		},
	}
	hostPathDir := filepath.Join(dir, "hostpath")
	volumes, err := prepareVolumes(pod, filepath.Join(dir, "pod"), filepath.Join(dir, "claims"), hostPathDir, podFields{pod: pod}, testObjects())
	if err != nil {
		t.Fatal(err)
	}
	vols := map[string]string{}
	for name, v := range volumes {
		vols[name] = v.Path
		if want := name == "flink-config-volume" || name == "creds" || name == "info" || name == "token"; v.APIData != want {
			t.Errorf("volume %s: APIData %v", name, v.APIData)
		}
	}
	if _, err := os.Stat(filepath.Dir(missingHost)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the missing hostPath was created on the machine: %v", err)
	}
	if want := filepath.Join(hostPathDir, missingHost); vols["missing"] != want {
		t.Errorf("missing hostPath at %s, want %s", vols["missing"], want)
	}
	for file, want := range map[string]string{
		filepath.Join(vols["flink-config-volume"], "config.yaml"): "rest.port: 8081\n",
		filepath.Join(vols["creds"], "password"):                  "s3cret",
		filepath.Join(vols["info"], "labels"):                     `a="b"`,
		filepath.Join(vols["token"], "token"):                     "token-of-p-for-vault",
		filepath.Join(vols["token"], "ca.crt"):                    "CA",
		filepath.Join(vols["token"], "namespace"):                 "ns",
	} {
		if got, err := os.ReadFile(file); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", file, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(vols["flink-config-volume"], "mode")); err == nil {
		t.Errorf("configMap items: key mode written though not listed")
	}
	if vols["data"] != hostDir || vols["claim"] != filepath.Join(dir, "claims", "ns", "state") {
		t.Errorf("hostPath/claim dirs: %v", vols)
	}
	for _, d := range []string{hostDir, vols["scratch"], vols["claim"]} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	specs, err := containerMounts(&pod.Spec.Containers[0], volumes)
	if err != nil {
		t.Fatal(err)
	}
	wantSpecs := []mountSpec{
		{Source: vols["flink-config-volume"], Target: "/opt/flink/conf", ReadOnly: true},
		{Source: hostDir, Target: "/flink-data"},
		{Source: filepath.Join(vols["creds"], "password"), Target: "/etc/pw", ReadOnly: true},
		{Source: filepath.Join(vols["scratch"], "a", "b"), Target: "/scratch", ReadOnly: true},
	}
	if diff := cmp.Diff(wantSpecs, specs); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	if st, err := os.Stat(filepath.Join(vols["scratch"], "a", "b")); err != nil || !st.IsDir() {
		t.Errorf("subPath a/b not created in the volume: %v", err)
	}
	mounts := mountPaths(specs)
	if p, ok := mapPath("file:///flink-data/savepoints", mounts); !ok || p != hostDir+"/savepoints" {
		t.Errorf("mapPath = %q, %v", p, ok)
	}
	if _, ok := mapPath("s3://bucket/x", mounts); ok {
		t.Errorf("mapPath mapped an s3 URI")
	}

	pod.Spec.Volumes[1].Secret.SecretName = "absent"
	if _, err := prepareVolumes(pod, filepath.Join(dir, "pod2"), filepath.Join(dir, "claims"), hostPathDir, podFields{pod: pod}, testObjects()); err == nil {
		t.Error("missing secret: no error")
	}
	pod.Spec.Volumes[1].Secret.SecretName = "creds"
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "must-exist", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
		Path: "/nodeagent-test-absent", Type: ptr.To(corev1.HostPathDirectory)}}})
	if _, err := prepareVolumes(pod, filepath.Join(dir, "pod3"), filepath.Join(dir, "claims"), hostPathDir, podFields{pod: pod}, testObjects()); err == nil ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Errorf("hostPath of type Directory that does not exist: err = %v", err)
	}
}

func TestRefreshAt(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		requested int64
		expires   time.Time
		want      time.Duration
	}{
		{3607, issued.Add(365 * 24 * time.Hour), 3607 * time.Second * 8 / 10}, // extended by the API server
		{3600, issued.Add(time.Hour), 48 * time.Minute},
		{3600, issued.Add(10 * time.Minute), 8 * time.Minute}, // issued for less
	} {
		if got := refreshAt(issued, tc.requested, tc.expires).Sub(issued); got != tc.want {
			t.Errorf("refreshAt(%d s, expires %s) = +%s, want +%s", tc.requested, tc.expires, got, tc.want)
		}
	}
}

func TestServiceEnv(t *testing.T) {
	for host, want := range map[string]string{
		"https://127.0.0.1:38211": "127.0.0.1 38211",
		"127.0.0.1:6443":          "127.0.0.1 6443",
		"https://[::1]:6443":      "::1 6443",
		"https://api.example":     "api.example 443",
	} {
		env := map[string]string{}
		for _, e := range serviceEnv(host) {
			env[e.Name] = e.Value
		}
		if got := env["KUBERNETES_SERVICE_HOST"] + " " + env["KUBERNETES_SERVICE_PORT"]; got != want {
			t.Errorf("serviceEnv(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestHostsFile(t *testing.T) {
	jmLabels := map[string]string{"app": "demo", "component": "jobmanager", "type": "flink-standalone-kubernetes"}
	svc := func(name, ns string, headless bool) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{Selector: jmLabels}}
		if headless {
			s.Spec.ClusterIP = corev1.ClusterIPNone
		}
		return s
	}
	services := []*corev1.Service{
		svc("demo-rest", "jobs", false), svc("demo", "jobs", true), svc("other", "elsewhere", false),
		{ObjectMeta: metav1.ObjectMeta{Name: "no-selector", Namespace: "jobs"}},
	}
	tm := Endpoint{Namespace: "jobs", Name: "demo-taskmanager-1", Hostname: "demo-taskmanager-1", IP: "127.100.0.3",
		Labels: map[string]string{"app": "demo", "component": "taskmanager"}, Ready: true, Seq: 3}
	jmStarting := Endpoint{Namespace: "jobs", Name: "demo-1", Hostname: "demo-1", IP: "127.100.0.2", Labels: jmLabels, Seq: 2}
	oldJM := Endpoint{Namespace: "jobs", Name: "demo-0", Hostname: "demo-0", IP: "127.100.0.1", Labels: jmLabels, Ready: true, Terminating: true, Seq: 1}

	// The JobManager is running but not ready: the headless RPC Service
	// resolves, the REST Service does not; a terminating pod never does.
	got := string(HostsFile(tm, "machine", []Endpoint{oldJM, jmStarting, tm}, services))
	want := "127.100.0.3 localhost demo-taskmanager-1 machine\n" +
		"127.100.0.2 demo demo.jobs demo.jobs.svc demo.jobs.svc.cluster.local\n"
	if got != want {
		t.Errorf("hosts:\n%s\nwant:\n%s", got, want)
	}

	jmStarting.Ready = true
	other := Endpoint{Namespace: "elsewhere", Name: "x", IP: "127.100.0.9", Labels: jmLabels, Ready: true, Seq: 9}
	got = string(HostsFile(tm, "", []Endpoint{oldJM, jmStarting, tm, other}, services))
	want = "127.100.0.3 localhost demo-taskmanager-1\n" +
		"127.100.0.9 other.elsewhere other.elsewhere.svc other.elsewhere.svc.cluster.local\n" +
		"127.100.0.2 demo demo.jobs demo.jobs.svc demo.jobs.svc.cluster.local\n" +
		"127.100.0.2 demo-rest demo-rest.jobs demo-rest.jobs.svc demo-rest.jobs.svc.cluster.local\n"
	if got != want {
		t.Errorf("hosts:\n%s\nwant:\n%s", got, want)
	}
}

func TestPodPhase(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	exited := func(code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonImageNotSupported}}
	started := ptr.To(true)
	for _, tc := range []struct {
		name   string
		policy corev1.RestartPolicy
		cs     []corev1.ContainerStatus
		want   corev1.PodPhase
	}{
		{"none yet", corev1.RestartPolicyAlways, nil, corev1.PodPending},
		{"never started", corev1.RestartPolicyAlways, []corev1.ContainerStatus{{State: waiting}}, corev1.PodPending},
		{"one of two never started", corev1.RestartPolicyAlways, []corev1.ContainerStatus{{State: running, Started: started}, {State: waiting}}, corev1.PodPending},
		{"running", corev1.RestartPolicyAlways, []corev1.ContainerStatus{{State: running, Started: started}}, corev1.PodRunning},
		{"back-off", corev1.RestartPolicyAlways, []corev1.ContainerStatus{{State: waiting, LastTerminationState: exited(1), RestartCount: 1}}, corev1.PodRunning},
		{"never: failed", corev1.RestartPolicyNever, []corev1.ContainerStatus{{State: exited(2)}}, corev1.PodFailed},
		{"never: succeeded", corev1.RestartPolicyNever, []corev1.ContainerStatus{{State: exited(0)}}, corev1.PodSucceeded},
		{"on-failure: succeeded", corev1.RestartPolicyOnFailure, []corev1.ContainerStatus{{State: exited(0)}}, corev1.PodSucceeded},
		{"never: one still running", corev1.RestartPolicyNever, []corev1.ContainerStatus{{State: exited(0)}, {State: running, Started: started}}, corev1.PodRunning},
	} {
		if got := podPhase(tc.policy, tc.cs); got != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestIPAM(t *testing.T) {
	m := newIPAM(netip.MustParsePrefix("127.101.0.0/23"))
	a, _ := m.claim("")
	b, _ := m.claim("")
	if a != "127.101.0.1" || b != "127.101.0.2" {
		t.Fatalf("first IPs %s %s", a, b)
	}
	if c, _ := m.claim("127.101.1.7"); c != "127.101.1.7" {
		t.Errorf("claim of a wanted free IP = %s", c)
	}
	if c, _ := m.claim("127.101.0.1"); c == "127.101.0.1" {
		t.Errorf("claim handed out an IP in use")
	}
	if c, _ := m.claim("10.0.0.1"); !strings.HasPrefix(c, "127.101.") {
		t.Errorf("claim handed out %s outside the range", c)
	}
	m.release(a)
	// Freed addresses are reused only after the others.
	if c, _ := m.claim(""); c == a {
		t.Errorf("claim reused a freed IP at once")
	}
	n := 0
	for {
		ip, err := m.claim("")
		if err != nil {
			break
		}
		if ip == "127.101.0.0" || strings.HasSuffix(ip, ".255") || strings.HasSuffix(ip, ".0") {
			t.Errorf("claim handed out %s", ip)
		}
		n++
	}
	// 6 claimed before the loop, one of them released: 5 held.
	if total := 2 * 254; n+5 != total {
		t.Errorf("range held %d addresses, want %d", n+5, total)
	}
}

func TestClaimPodRange(t *testing.T) {
	dir := t.TempDir()
	p1, release1, err := claimPodRange(dir)
	if err != nil {
		t.Fatal(err)
	}
	p2, release2, err := claimPodRange(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p1 == p2 || p1 != firstPodRange {
		t.Errorf("ranges %s and %s", p1, p2)
	}
	release1()
	p3, release3, err := claimPodRange(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p3 != p1 {
		t.Errorf("released range not reused: %s", p3)
	}
	release2()
	release3()
}

func TestRestBindPort(t *testing.T) {
	for _, tc := range []struct {
		conf map[string]string
		want int
	}{
		{map[string]string{}, 8081},
		{map[string]string{"rest.port": "9000"}, 9000},
		{map[string]string{"rest.port": "9000", "rest.bind-port": "9100"}, 9100},
		{map[string]string{"rest.port": "9000", "rest.bind-port": "50100-50200"}, 9000},
	} {
		if got := restBindPort(tc.conf); got != tc.want {
			t.Errorf("restBindPort(%v) = %d, want %d", tc.conf, got, tc.want)
		}
	}
}
