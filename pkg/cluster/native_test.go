package cluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// native sets Input.Native (and spec.mode native, as the controller will).
func native(in *Input) {
	in.Native = true
	in.Spec.Mode = v1beta1.DeploymentModeNative
}

func nativeInput(d *v1beta1.FlinkDeployment, changes ...func(*Input)) Input {
	return input(d, append([]func(*Input){native}, changes...)...)
}

func TestNativeObjects(t *testing.T) {
	ha := func(in *Input) {
		in.Spec.FlinkConfiguration = flinkConf(map[string]any{"high-availability.type": "kubernetes", "high-availability.storageDir": "file:///flink-data/ha"})
	}
	tests := []struct {
		name       string
		d          *v1beta1.FlinkDeployment
		change     func(*Input)
		target     string
		entryClass string
		ha         bool
	}{
		{name: "application", d: application(), target: "kubernetes-application",
			entryClass: "org.apache.flink.kubernetes.entrypoint.KubernetesApplicationClusterEntrypoint"},
		{name: "application with HA", d: application(), change: ha, target: "kubernetes-application",
			entryClass: "org.apache.flink.kubernetes.entrypoint.KubernetesApplicationClusterEntrypoint", ha: true},
		{name: "session", d: session(), target: "kubernetes-session",
			entryClass: "org.apache.flink.kubernetes.entrypoint.KubernetesSessionClusterEntrypoint"},
		{name: "session with HA", d: session(), change: ha, target: "kubernetes-session",
			entryClass: "org.apache.flink.kubernetes.entrypoint.KubernetesSessionClusterEntrypoint", ha: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes := []func(*Input){}
			if tt.change != nil {
				changes = append(changes, tt.change)
			}
			c := mustBuild(t, nativeInput(tt.d, changes...))
			if !c.Native || c.TaskManager != nil {
				t.Fatalf("Native %v, TaskManager %v: want a native cluster without TaskManager Deployment", c.Native, c.TaskManager)
			}
			if c.PodTemplateConfigMap != nil {
				t.Errorf("pod template ConfigMap %s without any pod template", c.PodTemplateConfigMap.Name)
			}
			common := map[string]string{"app": "demo", "type": "flink-native-kubernetes"}
			jmLabels := map[string]string{"app": "demo", "component": "jobmanager", "type": "flink-native-kubernetes"}

			// JobManager Deployment.
			jm := c.JobManager
			if jm.Name != "demo" || jm.Namespace != "jobs" {
				t.Errorf("JM Deployment %s/%s", jm.Namespace, jm.Name)
			}
			for what, got := range map[string]map[string]string{
				"labels": jm.Labels, "selector": jm.Spec.Selector.MatchLabels, "pod labels": jm.Spec.Template.Labels,
			} {
				if diff := cmp.Diff(jmLabels, got); diff != "" {
					t.Errorf("JM %s (-want +got):\n%s", what, diff)
				}
			}
			if jm.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				t.Errorf("strategy %q", jm.Spec.Strategy.Type)
			}
			if got := jm.OwnerReferences; len(got) != 1 || got[0].Kind != "FlinkDeployment" || got[0].UID != "uid-1" {
				t.Errorf("JM owner references %+v", got)
			}
			main := mainContainer(t, jm.Spec.Template.Spec)
			if diff := cmp.Diff([]string{"/docker-entrypoint.sh"}, main.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			wantArgs := []string{"bash", "-c", "kubernetes-jobmanager.sh " + tt.target + " "}
			if diff := cmp.Diff(wantArgs, main.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if jm.Spec.Template.Spec.ServiceAccountName != "flink" {
				t.Errorf("serviceAccountName %q", jm.Spec.Template.Spec.ServiceAccountName)
			}

			// Services.
			if c.RPCService.Name != "demo" || c.RPCService.Spec.ClusterIP != corev1.ClusterIPNone {
				t.Errorf("internal Service %s clusterIP %q, want headless demo", c.RPCService.Name, c.RPCService.Spec.ClusterIP)
			}
			if c.RESTService.Name != "demo-rest" || c.RESTService.Spec.Type != corev1.ServiceTypeClusterIP {
				t.Errorf("REST Service %s type %q", c.RESTService.Name, c.RESTService.Spec.Type)
			}
			for _, s := range c.Services() {
				if diff := cmp.Diff(common, s.Labels); diff != "" {
					t.Errorf("%s labels (-want +got):\n%s", s.Name, diff)
				}
				if diff := cmp.Diff(jmLabels, s.Spec.Selector); diff != "" {
					t.Errorf("%s selector (-want +got):\n%s", s.Name, diff)
				}
			}

			// ConfigMap and configuration.
			if c.ConfigMap.Name != "flink-config-demo" {
				t.Errorf("ConfigMap %s", c.ConfigMap.Name)
			}
			if diff := cmp.Diff(common, c.ConfigMap.Labels); diff != "" {
				t.Errorf("ConfigMap labels (-want +got):\n%s", diff)
			}
			for _, k := range []string{"config.yaml", "log4j-console.properties"} {
				if _, ok := c.ConfigMap.Data[k]; !ok {
					t.Errorf("ConfigMap has no %s", k)
				}
			}
			want := map[string]string{
				"execution.target": tt.target,
				"kubernetes.internal.jobmanager.entrypoint.class": tt.entryClass,
				"kubernetes.cluster-id":                           "demo",
				"kubernetes.namespace":                            "jobs",
				"kubernetes.container.image.ref":                  "flink:1.20",
				"kubernetes.service-account":                      "flink",
				"kubernetes.rest-service.exposed.type":            "ClusterIP",
				"kubernetes.jobmanager.replicas":                  "1",
				"kubernetes.jobmanager.owner.reference":           `[{"apiVersion":"flink.apache.org/v1beta1","blockOwnerDeletion":"true","controller":"false","kind":"FlinkDeployment","name":"demo","uid":"uid-1"}]`,
				"jobmanager.rpc.address":                          "demo.jobs",
				"taskmanager.memory.process.size":                 "1728m",
				"taskmanager.rpc.port":                            "6122",
				"blob.server.port":                                "6124",
			}
			if tt.ha {
				want["high-availability.cluster-id"] = "demo"
				want["high-availability.jobmanager.port"] = "6123"
			}
			if tt.d.Spec.Job != nil {
				want["pipeline.jars"] = "local:///opt/flink/usrlib/job.jar"
				want["$internal.application.main"] = "org.example.Job"
				want["$internal.pipeline.job-id"] = testJobID
				want["parallelism.default"] = "2"
				want["execution.shutdown-on-application-finish"] = "false"
			}
			for k, v := range want {
				if got := c.FlinkConfig[k]; got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			for _, k := range []string{"pipeline.classpaths", "kubernetes.pod-template-file.taskmanager"} {
				if v, ok := c.FlinkConfig[k]; ok {
					t.Errorf("%s = %q, want unset", k, v)
				}
			}
			if _, ok := c.FlinkConfig["high-availability.cluster-id"]; ok != tt.ha {
				t.Errorf("high-availability.cluster-id set %v, want %v", ok, tt.ha)
			}
			if !strings.Contains(c.ConfigMap.Data["config.yaml"], "execution.target: "+tt.target+"\n") {
				t.Errorf("config.yaml lacks execution.target:\n%s", c.ConfigMap.Data["config.yaml"])
			}
		})
	}
}

func TestNativeClusterID(t *testing.T) {
	for name, ok := range map[string]bool{
		strings.Repeat("a", 45): true,
		strings.Repeat("a", 46): false,
		"my.flink":              false,
		"1flink":                false,
	} {
		d := application()
		d.Name = name
		_, err := Build(nativeInput(d))
		if (err == nil) != ok {
			t.Errorf("name %q: error %v, want ok %v", name, err, ok)
		}
	}
}

func TestNativeTaskManagerDeploymentShortcut(t *testing.T) {
	if _, err := TaskManagerDeployment(nativeInput(application())); err == nil {
		t.Error("TaskManagerDeployment of a native cluster: no error")
	}
}

func TestNativeConfigByVersion(t *testing.T) {
	tests := []struct {
		version   v1beta1.FlinkVersion
		file      string
		set, nots []string
		contains  []string
	}{
		{version: v1beta1.FlinkVersion1_16, file: "flink-conf.yaml",
			set:      []string{"kubernetes.container.image", "kubernetes.taskmanager.cpu", "kubernetes.taskmanager.cpu.amount", "execution.savepoint.path", "execution.savepoint.ignore-unclaimed-state"},
			nots:     []string{"kubernetes.container.image.ref", "execution.state-recovery.path"},
			contains: []string{"$internal.application.program-args: --input;a b;x;'y''z'\n", "kubernetes.jobmanager.owner.reference: apiVersion:flink.apache.org/v1beta1,blockOwnerDeletion:true,controller:false,kind:FlinkDeployment,name:demo,uid:uid-1\n"}},
		{version: v1beta1.FlinkVersion1_18, file: "flink-conf.yaml",
			set:      []string{"kubernetes.container.image.ref", "kubernetes.taskmanager.cpu.amount", "execution.savepoint.path", "execution.savepoint.ignore-unclaimed-state"},
			nots:     []string{"kubernetes.container.image", "kubernetes.taskmanager.cpu", "execution.state-recovery.path"},
			contains: []string{"$internal.application.program-args: --input;a b;x;'y''z'\n", "pipeline.jars: local:///opt/flink/usrlib/job.jar\n"}},
		{version: v1beta1.FlinkVersion1_19, file: "config.yaml",
			set:      []string{"kubernetes.container.image.ref", "execution.savepoint.path"},
			nots:     []string{"execution.state-recovery.path"},
			contains: []string{`$internal.application.program-args: "[\"--input\",\"a b\",\"x\",\"y'z\"]"` + "\n"}},
		{version: v1beta1.FlinkVersion1_20, file: "config.yaml",
			set:      []string{"kubernetes.container.image.ref", "execution.savepoint.path", "execution.savepoint.ignore-unclaimed-state"},
			nots:     []string{"execution.state-recovery.path", "execution.state-recovery.ignore-unclaimed-state", "kubernetes.container.image"},
			contains: []string{"execution.savepoint.path: s3://b/sp-1\n"}},
		{version: v1beta1.FlinkVersion2_1, file: "config.yaml",
			set:      []string{"kubernetes.container.image.ref", "execution.savepoint.path", "kubernetes.taskmanager.cpu.amount"},
			nots:     []string{"execution.state-recovery.path", "kubernetes.taskmanager.cpu"},
			contains: []string{"execution.target: kubernetes-application\n"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.version), func(t *testing.T) {
			c := mustBuild(t, nativeInput(application(), func(in *Input) {
				in.Spec.FlinkVersion = tt.version
				in.Spec.Job.Args = []string{"--input", "a b", "x", "y'z"}
				in.Spec.TaskManager = &v1beta1.TaskManagerSpec{Resource: &v1beta1.ResourceSpec{CPU: ptr.To(0.5), Memory: "2g"}}
				in.RestorePath = "s3://b/sp-1"
				in.AllowNonRestoredState = true
			}))
			if len(c.ConfigMap.Data) != 2 {
				t.Errorf("ConfigMap keys %v", mapsKeys(c.ConfigMap.Data))
			}
			file, ok := c.ConfigMap.Data[tt.file]
			if !ok {
				t.Fatalf("no %s in %v", tt.file, mapsKeys(c.ConfigMap.Data))
			}
			for _, k := range tt.set {
				if _, ok := c.FlinkConfig[k]; !ok {
					t.Errorf("%s unset", k)
				}
			}
			for _, k := range tt.nots {
				if v, ok := c.FlinkConfig[k]; ok {
					t.Errorf("%s = %q, want unset", k, v)
				}
			}
			for _, s := range tt.contains {
				if !strings.Contains(file, s) {
					t.Errorf("%s lacks %q:\n%s", tt.file, s, file)
				}
			}
			if got := c.FlinkConfig["taskmanager.memory.process.size"]; got != "2048m" {
				t.Errorf("taskmanager.memory.process.size %q", got)
			}
			if got := c.FlinkConfig["kubernetes.taskmanager.cpu.amount"]; got != "0.5" {
				t.Errorf("kubernetes.taskmanager.cpu.amount %q", got)
			}
		})
	}
}

func mapsKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func TestNativeJobKeys(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Input)
		want   map[string]string // "" means unset
	}{
		{name: "empty state", want: map[string]string{
			"execution.savepoint.path": "", "execution.savepoint.ignore-unclaimed-state": "",
			"execution.state-recovery.path": "", "execution.state-recovery.ignore-unclaimed-state": "",
			"$internal.application.program-args": "", "$internal.application.main": "org.example.Job",
		}},
		{name: "restore, args, allowNonRestoredState from the spec", change: func(in *Input) {
			in.RestorePath = "s3://b/chk-7"
			in.Spec.Job.Args = []string{"--input", "kafka"}
			in.Spec.Job.AllowNonRestoredState = ptr.To(true)
		}, want: map[string]string{
			"execution.savepoint.path":                   "s3://b/chk-7",
			"execution.savepoint.ignore-unclaimed-state": "true",
			"execution.state-recovery.path":              "",
			"$internal.application.program-args":         `["--input","kafka"]`,
		}},
		{name: "allowNonRestoredState false is written", change: func(in *Input) {
			in.Spec.Job.AllowNonRestoredState = ptr.To(false)
		}, want: map[string]string{"execution.savepoint.ignore-unclaimed-state": "false"}},
		{name: "a user's restore path is dropped", change: func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"execution.savepoint.path": "s3://old", "execution.state-recovery.path": "s3://old"})
		}, want: map[string]string{"execution.state-recovery.path": "", "execution.savepoint.path": ""}},
		{name: "no entry class", change: func(in *Input) { in.Spec.Job.EntryClass = "" },
			want: map[string]string{"$internal.application.main": ""}},
		{name: "replicas decide parallelism", change: func(in *Input) {
			in.Spec.TaskManager = &v1beta1.TaskManagerSpec{Replicas: ptr.To[int32](3)}
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"taskmanager.numberOfTaskSlots": 2})
		}, want: map[string]string{"parallelism.default": "6"}},
		{name: "client-only keys are dropped", change: func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"taskmanager.host": "h", "jobmanager.bind-host": "0.0.0.0", "rest.bind-address": "x"})
		}, want: map[string]string{"taskmanager.host": "", "jobmanager.bind-host": "", "rest.bind-address": ""}},
		{name: "user REST service type wins", change: func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"kubernetes.rest-service.exposed.type": "NodePort"})
		}, want: map[string]string{"kubernetes.rest-service.exposed.type": "NodePort"}},
		{name: "image pull policy", change: func(in *Input) { in.Spec.ImagePullPolicy = "Always" },
			want: map[string]string{"kubernetes.container.image.pull-policy": "Always"}},
		{name: "entrypoint args", change: func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"kubernetes.jobmanager.entrypoint.args": "-Dfoo=bar"})
		}, want: map[string]string{"kubernetes.jobmanager.entrypoint.args": "-Dfoo=bar"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes := []func(*Input){}
			if tt.change != nil {
				changes = append(changes, tt.change)
			}
			c := mustBuild(t, nativeInput(application(), changes...))
			for k, v := range tt.want {
				got, ok := c.FlinkConfig[k]
				if v == "" && ok {
					t.Errorf("%s = %q, want unset", k, got)
				} else if v != "" && got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if tt.name == "entrypoint args" {
				args := mainContainer(t, c.JobManager.Spec.Template.Spec).Args
				if want := []string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-application -Dfoo=bar"}; !cmp.Equal(want, args) {
					t.Errorf("args %q, want %q", args, want)
				}
			}
		})
	}
}

func TestNativeResources(t *testing.T) {
	tests := []struct {
		name    string
		tm      *v1beta1.TaskManagerSpec
		want    map[string]string
		wantErr string
	}{
		{name: "Flink form", tm: &v1beta1.TaskManagerSpec{Resource: &v1beta1.ResourceSpec{CPU: ptr.To(2.0), Memory: "4g"}},
			want: map[string]string{"kubernetes.taskmanager.cpu.amount": "2", "taskmanager.memory.process.size": "4096m", "kubernetes.taskmanager.cpu.limit-factor": ""}},
		{name: "Kubernetes form with limits", tm: &v1beta1.TaskManagerSpec{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("3Gi")},
		}}, want: map[string]string{
			"kubernetes.taskmanager.cpu.amount": "0.5", "taskmanager.memory.process.size": "2048m",
			"kubernetes.taskmanager.cpu.limit-factor": "2", "kubernetes.taskmanager.memory.limit-factor": "1.5",
		}},
		{name: "limit only", tm: &v1beta1.TaskManagerSpec{Resources: &corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
		}}, want: map[string]string{"kubernetes.taskmanager.cpu.amount": "1.5", "kubernetes.taskmanager.cpu.limit-factor": ""}},
		{name: "none", want: map[string]string{"kubernetes.taskmanager.cpu.amount": "", "taskmanager.memory.process.size": "1728m"}},
		{name: "limit below request", tm: &v1beta1.TaskManagerSpec{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}, wantErr: "cpu limit must be at least the request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Build(nativeInput(application(), func(in *Input) { in.Spec.TaskManager = tt.tm }))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				got, ok := c.FlinkConfig[k]
				if v == "" && ok {
					t.Errorf("%s = %q, want unset", k, got)
				} else if v != "" && got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if c.PodTemplateConfigMap != nil {
				t.Errorf("cpu/memory alone made a pod template:\n%s", c.PodTemplateConfigMap.Data[TaskManagerPodTemplateFile])
			}
		})
	}
}

func TestNativeJobManagerReplicas(t *testing.T) {
	two := func(in *Input) { in.Spec.JobManager = &v1beta1.JobManagerSpec{Replicas: ptr.To[int32](2)} }
	if _, err := Build(nativeInput(application(), two)); err == nil || !strings.Contains(err.Error(), "high availability") {
		t.Errorf("2 JobManagers without HA: error %v", err)
	}
	c := mustBuild(t, nativeInput(application(), two, func(in *Input) {
		in.Spec.FlinkConfiguration = flinkConf(map[string]any{"high-availability.type": "kubernetes"})
	}))
	if got := c.FlinkConfig["kubernetes.jobmanager.replicas"]; got != "2" || *c.JobManager.Spec.Replicas != 2 {
		t.Errorf("kubernetes.jobmanager.replicas %q, Deployment replicas %d", got, *c.JobManager.Spec.Replicas)
	}
}

func TestNativePodTemplate(t *testing.T) {
	common := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"pool": "flink"},
			Containers:   []corev1.Container{{Name: MainContainerName, Env: []corev1.EnvVar{{Name: "COMMON", Value: "1"}}}},
		},
	}
	tmTemplate := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"tm": "yes"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: MainContainerName, Env: []corev1.EnvVar{{Name: "TM", Value: "2"}}},
				{Name: "sidecar", Image: "busybox"},
			},
		},
	}
	jmTemplate := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "jm-only"}}
	tests := []struct {
		name   string
		change func(*Input)
		check  func(t *testing.T, pod *corev1.Pod)
	}{
		{name: "common template only", change: func(in *Input) { in.Spec.PodTemplate = common },
			check: func(t *testing.T, pod *corev1.Pod) {
				if pod.Labels["team"] != "a" || pod.Spec.NodeSelector["pool"] != "flink" {
					t.Errorf("common template lost: %+v", pod)
				}
			}},
		{name: "common and TaskManager templates, JobManager template stays out", change: func(in *Input) {
			in.Spec.PodTemplate = common
			in.Spec.TaskManager = &v1beta1.TaskManagerSpec{PodTemplate: tmTemplate}
			in.Spec.JobManager = &v1beta1.JobManagerSpec{PodTemplate: jmTemplate}
		}, check: func(t *testing.T, pod *corev1.Pod) {
			if pod.Annotations["tm"] != "yes" || pod.Labels["team"] != "a" {
				t.Errorf("metadata %+v", pod.ObjectMeta)
			}
			if pod.Spec.PriorityClassName != "" {
				t.Errorf("JobManager template in the TaskManager template")
			}
			main := mainContainer(t, pod.Spec)
			want := []corev1.EnvVar{{Name: "COMMON", Value: "1"}, {Name: "TM", Value: "2"}}
			if diff := cmp.Diff(want, main.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			if len(pod.Spec.Containers) != 2 || pod.Spec.Containers[1].Name != "sidecar" {
				t.Errorf("containers %+v", pod.Spec.Containers)
			}
		}},
		{name: "ephemeral storage alone", change: func(in *Input) {
			in.Spec.TaskManager = &v1beta1.TaskManagerSpec{Resource: &v1beta1.ResourceSpec{CPU: ptr.To(1.0), Memory: "2g", EphemeralStorage: "10Gi"}}
		}, check: func(t *testing.T, pod *corev1.Pod) {
			main := mainContainer(t, pod.Spec)
			want := corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("10Gi")}
			if !resourcesEqual(corev1.ResourceRequirements{Requests: want, Limits: want}, main.Resources) {
				t.Errorf("resources %+v, want only ephemeral-storage 10Gi", main.Resources)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustBuild(t, nativeInput(application(), tt.change))
			cm := c.PodTemplateConfigMap
			if cm == nil {
				t.Fatal("no pod template ConfigMap")
			}
			if cm.Name != "pod-template-demo" || cm.Namespace != "jobs" {
				t.Errorf("ConfigMap %s/%s", cm.Namespace, cm.Name)
			}
			if diff := cmp.Diff(map[string]string{"app": "demo", "type": "flink-native-kubernetes"}, cm.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if got := c.FlinkConfig["kubernetes.pod-template-file.taskmanager"]; got != "/opt/flink/pod-template/taskmanager-pod-template.yaml" {
				t.Errorf("kubernetes.pod-template-file.taskmanager %q", got)
			}
			var pod corev1.Pod
			if err := yaml.UnmarshalStrict([]byte(cm.Data["taskmanager-pod-template.yaml"]), &pod); err != nil {
				t.Fatalf("template: %v\n%s", err, cm.Data["taskmanager-pod-template.yaml"])
			}
			if pod.Kind != "Pod" || pod.APIVersion != "v1" {
				t.Errorf("template kind %s/%s", pod.APIVersion, pod.Kind)
			}
			tt.check(t, &pod)

			// The JobManager mounts it where the option points.
			jmPod := c.JobManager.Spec.Template.Spec
			var vol *corev1.Volume
			for i := range jmPod.Volumes {
				if jmPod.Volumes[i].Name == "pod-template-volume" {
					vol = &jmPod.Volumes[i]
				}
			}
			if vol == nil || vol.ConfigMap == nil || vol.ConfigMap.Name != "pod-template-demo" {
				t.Fatalf("JM volumes %+v", jmPod.Volumes)
			}
			if diff := cmp.Diff([]corev1.KeyToPath{{Key: "taskmanager-pod-template.yaml", Path: "taskmanager-pod-template.yaml"}}, vol.ConfigMap.Items); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			main := mainContainer(t, jmPod)
			found := false
			for _, m := range main.VolumeMounts {
				found = found || (m.Name == "pod-template-volume" && m.MountPath == "/opt/flink/pod-template")
			}
			if !found {
				t.Errorf("JM mounts %+v", main.VolumeMounts)
			}
		})
	}
}

func TestNativeConfigHashCoversPodTemplate(t *testing.T) {
	withEnv := func(v string) func(*Input) {
		return func(in *Input) {
			in.Spec.TaskManager = &v1beta1.TaskManagerSpec{PodTemplate: &corev1.Pod{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: MainContainerName, Env: []corev1.EnvVar{{Name: "X", Value: v}}}},
			}}}
		}
	}
	a := mustBuild(t, nativeInput(application(), withEnv("1")))
	b := mustBuild(t, nativeInput(application(), withEnv("2")))
	if a.JobManager.Spec.Template.Annotations[AnnotationConfigHash] == b.JobManager.Spec.Template.Annotations[AnnotationConfigHash] {
		t.Error("a TaskManager pod template change does not change the JobManager's config hash")
	}
	if !SpecHashChanged(b.PodTemplateConfigMap, a.PodTemplateConfigMap) || !SpecHashChanged(b.JobManager, a.JobManager) {
		t.Error("spec hashes unchanged")
	}
}

func TestNativeStandaloneUntouched(t *testing.T) {
	// The same input with and without Native: standalone objects carry no
	// native keys or labels.
	s := mustBuild(t, input(application()))
	if s.Native || s.TaskManager == nil || s.PodTemplateConfigMap != nil {
		t.Fatalf("standalone: Native %v TaskManager %v", s.Native, s.TaskManager)
	}
	for _, k := range []string{"execution.target", "kubernetes.container.image.ref", "pipeline.jars", "$internal.application.main", "kubernetes.jobmanager.owner.reference"} {
		if v, ok := s.FlinkConfig[k]; ok {
			t.Errorf("standalone %s = %q", k, v)
		}
	}
	if s.JobManager.Labels[LabelType] != TypeStandalone || s.ConfigMap.Labels[LabelType] != TypeStandalone {
		t.Error("standalone type label")
	}
}

func TestNativeNamesAndSelectors(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{PodTemplateConfigMapName("demo"), "pod-template-demo"},
		{TaskManagerPodNamePrefix("demo"), "demo-taskmanager-"},
		{HAClusterConfigMapName("demo"), "demo-cluster-config-map"},
		{HAJobConfigMapName("demo", testJobID), "demo-" + testJobID + "-config-map"},
		{TaskManagerSelector(Native, "demo"), "app=demo,component=taskmanager,type=flink-native-kubernetes"},
		{JobManagerSelector(Native, "demo"), "app=demo,component=jobmanager,type=flink-native-kubernetes"},
		{HAConfigMapSelector("demo"), "app=demo,configmap-type=high-availability,type=flink-native-kubernetes"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	for mode, want := range map[v1beta1.KubernetesDeploymentMode]bool{
		"": true, v1beta1.DeploymentModeNative: true, v1beta1.DeploymentModeStandalone: false,
	} {
		if got := NativeMode(mode); got != want {
			t.Errorf("NativeMode(%q) = %v", mode, got)
		}
	}
}
