package cluster

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/upstreamtest"
)

func TestJobManagerArgs(t *testing.T) {
	ha := flinkConf(map[string]any{"high-availability.type": "kubernetes"})
	tests := []struct {
		name   string
		d      *v1beta1.FlinkDeployment
		change func(*Input)
		want   []string
	}{
		{name: "session", d: session(), want: []string{"jobmanager"}},
		{name: "session with HA", d: session(), change: func(in *Input) { in.Spec.FlinkConfiguration = ha },
			want: []string{"jobmanager", "-Djobmanager.rpc.address=$(_POD_IP_ADDRESS)"}},
		{name: "application, empty state", d: application(),
			want: []string{"standalone-job", "--job-classname", "org.example.Job"}},
		{name: "application without entry class", d: application(),
			change: func(in *Input) { in.Spec.Job.EntryClass = "" },
			want:   []string{"standalone-job"}},
		{name: "restore", d: application(), change: func(in *Input) { in.RestorePath = "s3://b/savepoint-1" },
			want: []string{"standalone-job", "--job-classname", "org.example.Job", "--fromSavepoint", "s3://b/savepoint-1"}},
		{name: "restore allowing non-restored state", d: application(), change: func(in *Input) {
			in.RestorePath = "s3://b/sp"
			in.AllowNonRestoredState = true
		}, want: []string{"standalone-job", "--job-classname", "org.example.Job", "--allowNonRestoredState", "--fromSavepoint", "s3://b/sp"}},
		{name: "allowNonRestoredState from the spec", d: application(), change: func(in *Input) {
			in.Spec.Job.AllowNonRestoredState = ptr.To(true)
		}, want: []string{"standalone-job", "--job-classname", "org.example.Job", "--allowNonRestoredState"}},
		{name: "job args last, HA before them", d: application(), change: func(in *Input) {
			in.Spec.Job.Args = []string{"--input", "kafka", "--fromSavepoint-like"}
			in.Spec.FlinkConfiguration = ha
			in.RestorePath = "s3://b/chk-7"
		}, want: []string{"standalone-job", "--job-classname", "org.example.Job", "--fromSavepoint", "s3://b/chk-7",
			"-Djobmanager.rpc.address=$(_POD_IP_ADDRESS)", "--input", "kafka", "--fromSavepoint-like"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var changes []func(*Input)
			if tt.change != nil {
				changes = append(changes, tt.change)
			}
			c := mustBuild(t, input(tt.d, changes...))
			main := mainContainer(t, c.JobManager.Spec.Template.Spec)
			if diff := cmp.Diff([]string{"/docker-entrypoint.sh"}, main.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, main.Args); diff != "" {
				t.Errorf("JM args (-want +got):\n%s", diff)
			}
			tm := mainContainer(t, c.TaskManager.Spec.Template.Spec)
			if diff := cmp.Diff([]string{"taskmanager"}, tm.Args); diff != "" {
				t.Errorf("TM args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobManagerDeployment(t *testing.T) {
	c := mustBuild(t, input(application(), func(in *Input) {
		in.Spec.ImagePullPolicy = "IfNotPresent"
		in.Spec.FlinkConfiguration = flinkConf(map[string]any{
			"rest.port":                         9091,
			"containerized.master.env.FOO":      "bar",
			"containerized.taskmanager.env.TMV": "1",
			"kubernetes.flink.log.dir":          "/logs",
		})
	}))
	jm := c.JobManager
	if jm.Name != "demo" || jm.Namespace != "jobs" {
		t.Errorf("JM Deployment %s/%s", jm.Namespace, jm.Name)
	}
	if got := *jm.Spec.Replicas; got != 1 {
		t.Errorf("JM replicas %d, want 1", got)
	}
	if jm.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("JM strategy %q, want Recreate", jm.Spec.Strategy.Type)
	}
	wantLabels := map[string]string{"app": "demo", "component": "jobmanager", "type": "flink-standalone-kubernetes"}
	if diff := cmp.Diff(wantLabels, jm.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantLabels, jm.Spec.Template.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	pod := jm.Spec.Template.Spec
	if pod.ServiceAccountName != "flink" {
		t.Errorf("serviceAccountName %q", pod.ServiceAccountName)
	}
	main := mainContainer(t, pod)
	if main.Image != "flink:1.20" || main.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %q %q", main.Image, main.ImagePullPolicy)
	}
	wantPorts := []corev1.ContainerPort{
		{Name: "jobmanager-rpc", ContainerPort: 6123, Protocol: corev1.ProtocolTCP},
		{Name: "blobserver", ContainerPort: 6124, Protocol: corev1.ProtocolTCP},
		{Name: "rest", ContainerPort: 9091, Protocol: corev1.ProtocolTCP},
	}
	if diff := cmp.Diff(wantPorts, main.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	wantEnv := []corev1.EnvVar{
		{Name: "_POD_IP_ADDRESS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
		{Name: "FLINK_LOG_DIR", Value: "/logs"},
		{Name: "FOO", Value: "bar"},
	}
	if diff := cmp.Diff(wantEnv, main.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if p := main.ReadinessProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromInt32(9091) {
		t.Errorf("readiness probe %+v, want TCP 9091", p)
	}
	wantMounts := []corev1.VolumeMount{{Name: "flink-config-volume", MountPath: "/opt/flink/conf"}}
	if diff := cmp.Diff(wantMounts, main.VolumeMounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	wantVolumes := []corev1.Volume{{Name: "flink-config-volume", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "flink-config-demo"}}}}}
	if diff := cmp.Diff(wantVolumes, pod.Volumes); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	if h := jm.Spec.Template.Annotations[AnnotationConfigHash]; h != ConfigHash(c.ConfigMap.Data) {
		t.Errorf("config hash annotation %q, want %q", h, ConfigHash(c.ConfigMap.Data))
	}

	tm := c.TaskManager
	if tm.Name != "demo-taskmanager" {
		t.Errorf("TM name %q", tm.Name)
	}
	tmMain := mainContainer(t, tm.Spec.Template.Spec)
	if diff := cmp.Diff([]corev1.ContainerPort{{Name: "taskmanager-rpc", ContainerPort: 6122, Protocol: corev1.ProtocolTCP}}, tmMain.Ports); diff != "" {
		t.Errorf("TM ports (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(tmMain.Env, func(e corev1.EnvVar) bool { return e.Name == "TMV" && e.Value == "1" }) ||
		slices.ContainsFunc(tmMain.Env, func(e corev1.EnvVar) bool { return e.Name == "FOO" }) {
		t.Errorf("TM env %v: want TMV only", tmMain.Env)
	}
	if tmMain.ReadinessProbe != nil {
		t.Errorf("TM readiness probe set")
	}
	if tm.Spec.Template.Annotations[AnnotationConfigHash] != jm.Spec.Template.Annotations[AnnotationConfigHash] {
		t.Errorf("JM and TM config hashes differ")
	}
	if got := TaskManagerSelector(Standalone, "demo"); got != "app=demo,component=taskmanager,type=flink-standalone-kubernetes" {
		t.Errorf("TaskManagerSelector = %q", got)
	}
}

func TestReplicas(t *testing.T) {
	tests := []struct {
		name        string
		d           *v1beta1.FlinkDeployment
		slots       any
		jm, tm      *int32
		wantJM      int32
		wantTM      int32
		parallelism *int32
	}{
		{name: "session default", d: session(), wantJM: 1, wantTM: 1},
		{name: "session replicas", d: session(), jm: ptr.To[int32](2), tm: ptr.To[int32](3), wantJM: 2, wantTM: 3},
		{name: "application: parallelism 2, 1 slot", d: application(), wantJM: 1, wantTM: 2},
		{name: "application: parallelism 5, 2 slots", d: application(), slots: 2, parallelism: ptr.To[int32](5), wantJM: 1, wantTM: 3},
		{name: "application: parallelism 4, 4 slots", d: application(), slots: 4, parallelism: ptr.To[int32](4), wantJM: 1, wantTM: 1},
		{name: "application: explicit replicas win", d: application(), tm: ptr.To[int32](4), wantJM: 1, wantTM: 4},
		{name: "application: scaled to zero", d: application(), tm: ptr.To[int32](0), wantJM: 1, wantTM: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustBuild(t, input(tt.d, func(in *Input) {
				if tt.slots != nil {
					in.Spec.FlinkConfiguration = flinkConf(map[string]any{"taskmanager.numberOfTaskSlots": tt.slots})
				}
				if tt.parallelism != nil {
					in.Spec.Job.Parallelism = tt.parallelism
				}
				in.Spec.JobManager = &v1beta1.JobManagerSpec{Replicas: tt.jm}
				in.Spec.TaskManager = &v1beta1.TaskManagerSpec{Replicas: tt.tm}
			}))
			if got := *c.JobManager.Spec.Replicas; got != tt.wantJM {
				t.Errorf("JM replicas %d, want %d", got, tt.wantJM)
			}
			if got := *c.TaskManager.Spec.Replicas; got != tt.wantTM {
				t.Errorf("TM replicas %d, want %d", got, tt.wantTM)
			}
		})
	}
}

func TestServices(t *testing.T) {
	in := input(application(), func(in *Input) {
		in.Spec.FlinkConfiguration = flinkConf(map[string]any{"rest.port": 8082, "rest.bind-port": 8090})
	})
	svcs, err := Services(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 2 {
		t.Fatalf("%d services", len(svcs))
	}
	rpc, rest := svcs[0], svcs[1]
	selector := map[string]string{"app": "demo", "component": "jobmanager", "type": "flink-standalone-kubernetes"}
	if rpc.Name != "demo" || rpc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("RPC service %s clusterIP %q", rpc.Name, rpc.Spec.ClusterIP)
	}
	wantRPC := []corev1.ServicePort{
		{Name: "jobmanager-rpc", Port: 6123, TargetPort: intstr.FromInt32(6123), Protocol: corev1.ProtocolTCP},
		{Name: "blobserver", Port: 6124, TargetPort: intstr.FromInt32(6124), Protocol: corev1.ProtocolTCP},
	}
	if diff := cmp.Diff(wantRPC, rpc.Spec.Ports); diff != "" {
		t.Errorf("RPC ports (-want +got):\n%s", diff)
	}
	if rest.Name != "demo-rest" || rest.Spec.Type != corev1.ServiceTypeClusterIP || rest.Spec.ClusterIP != "" {
		t.Errorf("REST service %s type %q clusterIP %q", rest.Name, rest.Spec.Type, rest.Spec.ClusterIP)
	}
	wantREST := []corev1.ServicePort{{Name: "rest", Port: 8082, TargetPort: intstr.FromInt32(8090), Protocol: corev1.ProtocolTCP}}
	if diff := cmp.Diff(wantREST, rest.Spec.Ports); diff != "" {
		t.Errorf("REST ports (-want +got):\n%s", diff)
	}
	for _, s := range svcs {
		if diff := cmp.Diff(selector, s.Spec.Selector); diff != "" {
			t.Errorf("%s selector (-want +got):\n%s", s.Name, diff)
		}
	}
	conf, _ := FlinkConfig(in)
	if p, err := RESTPort(conf); err != nil || p != 8082 {
		t.Errorf("RESTPort = %d, %v", p, err)
	}
	if p, err := RESTPort(nil); err != nil || p != 8081 {
		t.Errorf("RESTPort(nil) = %d, %v", p, err)
	}

	for typ, want := range map[string]corev1.ServiceType{"NodePort": corev1.ServiceTypeNodePort, "LoadBalancer": corev1.ServiceTypeLoadBalancer} {
		svcs, err := Services(input(session(), func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"kubernetes.rest-service.exposed.type": typ})
		}))
		if err != nil || svcs[1].Spec.Type != want {
			t.Errorf("exposed.type %s: %v, %v", typ, err, svcs)
		}
	}
}

func TestOwnerReferences(t *testing.T) {
	d := application()
	c := mustBuild(t, input(d))
	want := []metav1.OwnerReference{{
		APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Name: "demo", UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	objects := []metav1.Object{c.ConfigMap, c.JobManager, c.TaskManager, c.RPCService, c.RESTService}
	for _, o := range objects {
		if diff := cmp.Diff(want, o.GetOwnerReferences()); diff != "" {
			t.Errorf("%s owner references (-want +got):\n%s", o.GetName(), diff)
		}
		if o.GetNamespace() != "jobs" {
			t.Errorf("%s in namespace %q", o.GetName(), o.GetNamespace())
		}
		if o.GetLabels()["app"] != "demo" || o.GetLabels()["type"] != TypeStandalone {
			t.Errorf("%s labels %v", o.GetName(), o.GetLabels())
		}
		if o.GetAnnotations()[AnnotationSpecHash] == "" {
			t.Errorf("%s has no spec hash", o.GetName())
		}
	}
}

func TestHashes(t *testing.T) {
	base := mustBuild(t, input(application()))
	same := mustBuild(t, input(application()))
	if SpecHashChanged(base.JobManager, same.JobManager) || SpecHashChanged(base.ConfigMap, same.ConfigMap) {
		t.Error("identical inputs give different hashes")
	}

	// A new job id changes only the configuration, yet both Deployments roll.
	rotated := mustBuild(t, input(application(), func(in *Input) { in.JobID = strings.Repeat("f", 32) }))
	if !SpecHashChanged(rotated.ConfigMap, base.ConfigMap) {
		t.Error("ConfigMap hash unchanged after a job id change")
	}
	for _, pair := range [][2]*appsv1.Deployment{{rotated.JobManager, base.JobManager}, {rotated.TaskManager, base.TaskManager}} {
		if pair[0].Spec.Template.Annotations[AnnotationConfigHash] == pair[1].Spec.Template.Annotations[AnnotationConfigHash] {
			t.Errorf("%s config hash unchanged after a job id change", pair[0].Name)
		}
		if !SpecHashChanged(pair[0], pair[1]) {
			t.Errorf("%s spec hash unchanged after a job id change", pair[0].Name)
		}
	}
	if SpecHashChanged(rotated.RESTService, base.RESTService) {
		t.Error("REST Service hash changed though the Service did not")
	}

	// A restore path changes the JM only.
	restored := mustBuild(t, input(application(), func(in *Input) { in.RestorePath = "s3://b/sp" }))
	if !SpecHashChanged(restored.JobManager, base.JobManager) || SpecHashChanged(restored.TaskManager, base.TaskManager) {
		t.Error("restore path: want the JM hash changed and the TM hash unchanged")
	}
	// The file says where the job starts too (the JobManager logs it), for
	// this deploy only.
	if got := restored.FlinkConfig["execution.savepoint.path"]; got != "s3://b/sp" {
		t.Errorf("restored application's execution.savepoint.path = %q, want s3://b/sp", got)
	}
	if file := restored.ConfigMap.Data["config.yaml"]; !strings.Contains(file, "execution.savepoint.path: s3://b/sp\n") {
		t.Errorf("restored application's config.yaml lacks execution.savepoint.path:\n%s", file)
	}
	if _, ok := base.FlinkConfig["execution.savepoint.path"]; ok {
		t.Error("an application started from empty state has execution.savepoint.path in its file")
	}

	// restartNonce replaces pods.
	nonce := mustBuild(t, input(application(), func(in *Input) { in.Spec.RestartNonce = ptr.To[int64](3) }))
	if nonce.TaskManager.Spec.Template.Annotations[AnnotationRestartNonce] != "3" || !SpecHashChanged(nonce.TaskManager, base.TaskManager) {
		t.Error("restartNonce did not change the TM pod template")
	}

	// A live object without the annotation (created by someone else) is updated.
	if !SpecHashChanged(base.JobManager, &appsv1.Deployment{}) {
		t.Error("a live object without a hash counts as up to date")
	}
}

func TestResources(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name    string
		jm      *v1beta1.JobManagerSpec
		conf    map[string]any
		want    corev1.ResourceRequirements
		process string
	}{
		{
			name:    "none",
			jm:      nil,
			want:    corev1.ResourceRequirements{},
			process: "1600m",
		},
		{
			name: "Flink form: requests = limits",
			jm:   &v1beta1.JobManagerSpec{Resource: &v1beta1.ResourceSpec{CPU: ptr.To(0.5), Memory: "2048m", EphemeralStorage: "1Gi"}},
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("2Gi"), corev1.ResourceEphemeralStorage: q("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("2Gi"), corev1.ResourceEphemeralStorage: q("1Gi")},
			},
			process: "2048m",
		},
		{
			name: "Flink form with limit factors",
			jm:   &v1beta1.JobManagerSpec{Resource: &v1beta1.ResourceSpec{CPU: ptr.To(1.0), Memory: "1g"}},
			conf: map[string]any{"kubernetes.jobmanager.cpu.limit-factor": 2, "kubernetes.jobmanager.memory.limit-factor": 1.5},
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("1536Mi")},
			},
			process: "1024m",
		},
		{
			name: "Kubernetes form as written, memory read Flink-first",
			jm: &v1beta1.JobManagerSpec{Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("2048m")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("3Gi")},
			}},
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("3Gi")},
			},
			process: "2048m",
		},
		{
			name: "resources win per resource name over resource",
			jm: &v1beta1.JobManagerSpec{
				Resource:  &v1beta1.ResourceSpec{CPU: ptr.To(4.0), Memory: "8g"},
				Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")}},
			},
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("8Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("8Gi")},
			},
			process: "8192m",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustBuild(t, input(session(), func(in *Input) {
				in.Spec.JobManager = tt.jm
				if tt.conf != nil {
					in.Spec.FlinkConfiguration = flinkConf(tt.conf)
				}
			}))
			got := mainContainer(t, c.JobManager.Spec.Template.Spec).Resources
			if !resourcesEqual(tt.want, got) {
				t.Errorf("resources = %v, want %v", got, tt.want)
			}
			if p := c.FlinkConfig["jobmanager.memory.process.size"]; p != tt.process {
				t.Errorf("process size %q, want %q", p, tt.process)
			}
		})
	}
}

func resourcesEqual(a, b corev1.ResourceRequirements) bool {
	eq := func(x, y corev1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || v.Cmp(w) != 0 {
				return false
			}
		}
		return true
	}
	return eq(a.Requests, b.Requests) && eq(a.Limits, b.Limits)
}

func TestPodTemplateMerge(t *testing.T) {
	common := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"team": "data", "app": "hijack", "component": "x", "type": "y"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", AnnotationConfigHash: "forged"},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: "template-sa",
			SecurityContext:    &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](9999), FSGroup: ptr.To[int64](9999)},
			NodeSelector:       map[string]string{"pool": "flink"},
			Tolerations:        []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "flink", Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{
				{
					Name:    MainContainerName,
					Image:   "template-image",
					Command: []string{"/bin/sh"},
					Args:    []string{"-c", "sleep"},
					Env: []corev1.EnvVar{
						{Name: "_POD_IP_ADDRESS", Value: "overridden"},
						{Name: "EXTRA", Value: "1"},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					},
					Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9249}},
				},
				{Name: "sidecar", Image: "busybox"},
			},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: ConfigVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	jmTemplate := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"role": "jm"}},
		Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "flink", Effect: corev1.TaintEffectNoSchedule}, // duplicate
				{Key: "jm-only", Operator: corev1.TolerationOpExists},
			},
			InitContainers: []corev1.Container{{Name: "fetch", Image: "busybox"}},
			Containers: []corev1.Container{{
				Name: MainContainerName,
				Env:  []corev1.EnvVar{{Name: "EXTRA", Value: "jm"}},
			}},
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
		},
	}
	c := mustBuild(t, input(application(), func(in *Input) {
		in.Spec.PodTemplate = common
		in.Spec.JobManager = &v1beta1.JobManagerSpec{
			PodTemplate: jmTemplate,
			Resource:    &v1beta1.ResourceSpec{Memory: "2g"},
		}
	}))
	jmPod, tmPod := c.JobManager.Spec.Template, c.TaskManager.Spec.Template

	t.Run("selector labels protected, user labels added", func(t *testing.T) {
		want := map[string]string{"app": "demo", "component": "jobmanager", "type": TypeStandalone, "team": "data", "role": "jm"}
		if diff := cmp.Diff(want, jmPod.Labels); diff != "" {
			t.Errorf("JM pod labels (-want +got):\n%s", diff)
		}
		if tmPod.Labels["component"] != "taskmanager" || tmPod.Labels["role"] != "" || tmPod.Labels["team"] != "data" {
			t.Errorf("TM pod labels %v", tmPod.Labels)
		}
	})
	t.Run("annotations merged, config hash protected", func(t *testing.T) {
		if jmPod.Annotations["prometheus.io/scrape"] != "true" || jmPod.Annotations[AnnotationConfigHash] != ConfigHash(c.ConfigMap.Data) {
			t.Errorf("annotations %v", jmPod.Annotations)
		}
	})
	t.Run("main container: user env wins by name, command/args/image owned", func(t *testing.T) {
		main := mainContainer(t, jmPod.Spec)
		wantEnv := []corev1.EnvVar{{Name: "_POD_IP_ADDRESS", Value: "overridden"}, {Name: "EXTRA", Value: "jm"}}
		if diff := cmp.Diff(wantEnv, main.Env); diff != "" {
			t.Errorf("env (-want +got):\n%s", diff)
		}
		if main.Image != "flink:1.20" {
			t.Errorf("image %q: spec.image must win over the template", main.Image)
		}
		if main.Command[0] != "/docker-entrypoint.sh" || main.Args[0] != "standalone-job" {
			t.Errorf("command %v args %v", main.Command, main.Args)
		}
		wantMounts := []string{"/opt/flink/conf", "/data"}
		var mounts []string
		for _, m := range main.VolumeMounts {
			mounts = append(mounts, m.MountPath)
		}
		if diff := cmp.Diff(wantMounts, mounts); diff != "" {
			t.Errorf("mounts (-want +got):\n%s", diff)
		}
		if !slices.ContainsFunc(main.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" }) || len(main.Ports) != 4 {
			t.Errorf("ports %v: want the operator's three plus metrics", main.Ports)
		}
	})
	t.Run("resources: spec wins per name, template's others kept", func(t *testing.T) {
		r := mainContainer(t, jmPod.Spec).Resources
		if got := r.Requests[corev1.ResourceMemory]; got.Cmp(resource.MustParse("2Gi")) != 0 {
			t.Errorf("memory request %s, want 2Gi from spec.jobManager.resource", got.String())
		}
		if got := r.Requests["nvidia.com/gpu"]; got.Cmp(resource.MustParse("1")) != 0 {
			t.Errorf("gpu request %s, want 1 from the template", got.String())
		}
		// The TM has no spec resources: the template's memory stays.
		tmr := mainContainer(t, tmPod.Spec).Resources
		if got := tmr.Requests[corev1.ResourceMemory]; got.Cmp(resource.MustParse("1Gi")) != 0 {
			t.Errorf("TM memory request %s, want 1Gi from the template", got.String())
		}
	})
	t.Run("sidecar and init container appended", func(t *testing.T) {
		var names []string
		for _, c := range jmPod.Spec.Containers {
			names = append(names, c.Name)
		}
		if diff := cmp.Diff([]string{MainContainerName, "sidecar"}, names); diff != "" {
			t.Errorf("containers (-want +got):\n%s", diff)
		}
		if len(jmPod.Spec.InitContainers) != 1 || jmPod.Spec.InitContainers[0].Name != "fetch" {
			t.Errorf("JM init containers %v", jmPod.Spec.InitContainers)
		}
		if len(tmPod.Spec.InitContainers) != 0 {
			t.Errorf("TM got the JM's init containers")
		}
	})
	t.Run("volumes added, config volume protected", func(t *testing.T) {
		var names []string
		for _, v := range jmPod.Spec.Volumes {
			names = append(names, v.Name)
			if v.Name == ConfigVolumeName && (v.ConfigMap == nil || v.ConfigMap.Name != "flink-config-demo") {
				t.Errorf("config volume replaced by the template: %+v", v)
			}
		}
		if diff := cmp.Diff([]string{ConfigVolumeName, "data"}, names); diff != "" {
			t.Errorf("volumes (-want +got):\n%s", diff)
		}
	})
	t.Run("pod fields from the user", func(t *testing.T) {
		if sc := jmPod.Spec.SecurityContext; sc == nil || *sc.RunAsUser != 1000 || sc.FSGroup != nil {
			t.Errorf("JM securityContext %+v: want the JM template's, replacing the common one", sc)
		}
		if sc := tmPod.Spec.SecurityContext; sc == nil || *sc.RunAsUser != 9999 {
			t.Errorf("TM securityContext %+v: want the common template's", sc)
		}
		if jmPod.Spec.NodeSelector["pool"] != "flink" {
			t.Errorf("nodeSelector %v", jmPod.Spec.NodeSelector)
		}
		if len(jmPod.Spec.Tolerations) != 2 || len(tmPod.Spec.Tolerations) != 1 {
			t.Errorf("tolerations JM %v TM %v", jmPod.Spec.Tolerations, tmPod.Spec.Tolerations)
		}
		if jmPod.Spec.ServiceAccountName != "flink" {
			t.Errorf("serviceAccountName %q: spec.serviceAccount must win", jmPod.Spec.ServiceAccountName)
		}
	})
	t.Run("templates not modified", func(t *testing.T) {
		if len(common.Spec.Containers[0].Env) != 2 || common.Labels["app"] != "hijack" || len(jmTemplate.Spec.Containers[0].Env) != 1 {
			t.Error("Build modified the user's pod templates")
		}
	})
	t.Run("service account from the template when the spec has none", func(t *testing.T) {
		c := mustBuild(t, input(application(), func(in *Input) {
			in.Spec.ServiceAccount = ""
			in.Spec.PodTemplate = common
		}))
		if sa := c.TaskManager.Spec.Template.Spec.ServiceAccountName; sa != "template-sa" {
			t.Errorf("serviceAccountName %q", sa)
		}
	})
}

// TestUpstreamExamples builds the upstream samples in standalone mode.
func TestUpstreamExamples(t *testing.T) {
	load := func(t *testing.T, file string) *v1beta1.FlinkDeployment {
		t.Helper()
		data, err := upstreamtest.ReadFile("examples/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var d v1beta1.FlinkDeployment
		if err := yaml.UnmarshalStrict(data, &d); err != nil {
			t.Fatal(err)
		}
		d.Namespace = "default"
		d.UID = "uid-x"
		d.Spec.Mode = v1beta1.DeploymentModeStandalone
		return &d
	}

	t.Run("basic.yaml", func(t *testing.T) {
		d := load(t, "basic.yaml")
		c := mustBuild(t, input(d))
		conf, err := config.FlattenYAML([]byte(c.ConfigMap.Data[ConfigYAMLFile]))
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range map[string]string{
			"taskmanager.numberOfTaskSlots":   "2",
			"parallelism.default":             "2",
			"jobmanager.memory.process.size":  "2048m",
			"taskmanager.memory.process.size": "2048m",
			"pipeline.classpaths":             "file:///opt/flink/examples/streaming/StateMachineExample.jar",
			"jobmanager.rpc.address":          "basic-example.default",
		} {
			if conf[k] != want {
				t.Errorf("%s = %q, want %q", k, conf[k], want)
			}
		}
		if *c.TaskManager.Spec.Replicas != 1 {
			t.Errorf("TM replicas %d, want 1 (parallelism 2 / 2 slots)", *c.TaskManager.Spec.Replicas)
		}
		main := mainContainer(t, c.JobManager.Spec.Template.Spec)
		if diff := cmp.Diff([]string{"standalone-job"}, main.Args); diff != "" {
			t.Errorf("args (-want +got):\n%s", diff)
		}
		if got := main.Resources.Requests[corev1.ResourceMemory]; got.String() != "2Gi" {
			t.Errorf("memory request %s, want 2Gi (upstream's 2048m)", got.String())
		}
	})

	t.Run("pod-template.yaml", func(t *testing.T) {
		d := load(t, "pod-template.yaml")
		c := mustBuild(t, input(d))
		for _, dep := range []*appsv1.Deployment{c.JobManager, c.TaskManager} {
			pod := dep.Spec.Template.Spec
			var containers, volumes []string
			for _, x := range pod.Containers {
				containers = append(containers, x.Name)
			}
			for _, v := range pod.Volumes {
				volumes = append(volumes, v.Name)
			}
			if diff := cmp.Diff([]string{MainContainerName, "fluentbit"}, containers); diff != "" {
				t.Errorf("%s containers (-want +got):\n%s", dep.Name, diff)
			}
			if diff := cmp.Diff([]string{ConfigVolumeName, "flink-logs", "downloads"}, volumes); diff != "" {
				t.Errorf("%s volumes (-want +got):\n%s", dep.Name, diff)
			}
			var mounts []string
			for _, m := range mainContainer(t, pod).VolumeMounts {
				mounts = append(mounts, m.MountPath)
			}
			if diff := cmp.Diff([]string{"/opt/flink/conf", "/opt/flink/log", "/opt/flink/downloads"}, mounts); diff != "" {
				t.Errorf("%s mounts (-want +got):\n%s", dep.Name, diff)
			}
		}
		if n := len(c.JobManager.Spec.Template.Spec.InitContainers); n != 1 {
			t.Errorf("JM init containers: %d, want 1", n)
		}
		if n := len(c.TaskManager.Spec.Template.Spec.InitContainers); n != 0 {
			t.Errorf("TM init containers: %d, want 0", n)
		}
		main := mainContainer(t, c.JobManager.Spec.Template.Spec)
		want := []string{"standalone-job", "--job-classname", "org.apache.flink.streaming.examples.statemachine.StateMachineExample"}
		if diff := cmp.Diff(want, main.Args); diff != "" {
			t.Errorf("args (-want +got):\n%s", diff)
		}
		if c.FlinkConfig["pipeline.classpaths"] != "file:///opt/flink/downloads/flink-examples-streaming.jar" {
			t.Errorf("pipeline.classpaths %q", c.FlinkConfig["pipeline.classpaths"])
		}
	})

	t.Run("every example builds", func(t *testing.T) {
		files, err := upstreamtest.Glob("examples", "*.yaml")
		if err != nil {
			t.Fatal(err)
		}
		built := 0
		defer func() {
			if built < 5 {
				t.Errorf("only %d FlinkDeployments found in the examples", built)
			}
		}()
		for _, f := range files {
			data, err := upstreamtest.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, doc := range strings.Split(string(data), "\n---") {
				var meta metav1.TypeMeta
				if err := yaml.Unmarshal([]byte(doc), &meta); err != nil || meta.Kind != "FlinkDeployment" {
					continue
				}
				var d v1beta1.FlinkDeployment
				if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
					t.Errorf("%s #%d: %v", filepath.Base(f), i, err)
					continue
				}
				d.Namespace = "default"
				if _, err := Build(input(&d)); err != nil {
					t.Errorf("%s #%d: %v", filepath.Base(f), i, err)
				}
				built++
			}
		}
	})
}
