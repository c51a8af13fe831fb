package cluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// Rules of buildConfig's steps that the FlinkConfig tables in config_test.go
// do not pin.

func TestFlinkConfigStepRules(t *testing.T) {
	tests := []struct {
		name string
		d    *v1beta1.FlinkDeployment
		conf map[string]any
		want map[string]string // keys checked; "" = absent
	}{
		{
			name: "taskmanager.rpc.port 0 becomes the fixed port",
			d:    session(),
			conf: map[string]any{"taskmanager.rpc.port": 0},
			want: map[string]string{"taskmanager.rpc.port": "6122"},
		},
		{
			name: "the user's taskmanager.rpc.port is kept",
			d:    session(),
			conf: map[string]any{"taskmanager.rpc.port": 6200},
			want: map[string]string{"taskmanager.rpc.port": "6200"},
		},
		{
			name: "a taskmanager.rpc.port range is kept",
			d:    session(),
			conf: map[string]any{"taskmanager.rpc.port": "6200-6210"},
			want: map[string]string{"taskmanager.rpc.port": "6200-6210"},
		},
		{
			name: "a heap size alone suppresses the default process size",
			d:    session(),
			conf: map[string]any{"jobmanager.memory.heap.size": "1g", "taskmanager.memory.task.heap.size": "1g"},
			want: map[string]string{"jobmanager.memory.process.size": "", "taskmanager.memory.process.size": ""},
		},
		{
			name: "the deprecated HA key turns HA on",
			d:    session(),
			conf: map[string]any{"high-availability": "kubernetes"},
			want: map[string]string{"high-availability.cluster-id": "demo", "high-availability.jobmanager.port": "6123"},
		},
		{
			name: "HA jobmanager.port 0 becomes the RPC port",
			d:    session(),
			conf: map[string]any{"high-availability.type": "kubernetes", "high-availability.jobmanager.port": 0},
			want: map[string]string{"high-availability.jobmanager.port": "6123"},
		},
		{
			name: "the user's HA jobmanager.port is kept",
			d:    session(),
			conf: map[string]any{"high-availability.type": "kubernetes", "high-availability.jobmanager.port": "7000-7010"},
			want: map[string]string{"high-availability.jobmanager.port": "7000-7010"},
		},
		{
			name: "HA off leaves the HA port alone",
			d:    session(),
			want: map[string]string{"high-availability.jobmanager.port": ""},
		},
		{
			name: "the user's high-availability.cluster-id is overwritten",
			d:    session(),
			conf: map[string]any{"high-availability.type": "kubernetes", "high-availability.cluster-id": "other"},
			want: map[string]string{"high-availability.cluster-id": "demo"},
		},
		{
			name: "a jarURI without local:// is kept",
			d: func() *v1beta1.FlinkDeployment {
				d := application()
				d.Spec.Job.JarURI = "file:///opt/flink/job.jar"
				return d
			}(),
			want: map[string]string{"pipeline.classpaths": "file:///opt/flink/job.jar"},
		},
		{
			name: "no jarURI, no classpath",
			d: func() *v1beta1.FlinkDeployment {
				d := application()
				d.Spec.Job.JarURI = " "
				return d
			}(),
			want: map[string]string{"pipeline.classpaths": ""},
		},
		{
			name: "scaled to zero TaskManagers, the job parallelism applies",
			d: func() *v1beta1.FlinkDeployment {
				d := application()
				d.Spec.TaskManager = &v1beta1.TaskManagerSpec{Replicas: ptr.To[int32](0)}
				return d
			}(),
			want: map[string]string{"parallelism.default": "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf, err := FlinkConfig(input(tt.d, func(in *Input) {
				if tt.conf != nil {
					in.Spec.FlinkConfiguration = flinkConf(tt.conf)
				}
			}))
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tt.want {
				got, ok := conf[k]
				if want == "" && ok {
					t.Errorf("%s = %q, want absent", k, got)
				} else if want != "" && got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestFlinkConfigStepErrors(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Input)
		want   string
	}{
		{"JobManager replicas 0", func(in *Input) {
			in.Spec.JobManager = &v1beta1.JobManagerSpec{Replicas: ptr.To[int32](0)}
		}, "spec.jobManager.replicas"},
		{"slots not an integer", func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"taskmanager.numberOfTaskSlots": "two"})
		}, "numberOfTaskSlots"},
		{"parallelism.default not an integer", func(in *Input) {
			in.Spec.Job.Parallelism = nil
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"parallelism.default": "many"})
		}, "parallelism.default"},
		{"bad jarURI", func(in *Input) { in.Spec.Job.JarURI = "http://[::1" }, "spec.job.jarURI"},
		{"bad JobManager memory", func(in *Input) {
			in.Spec.JobManager = &v1beta1.JobManagerSpec{Resource: &v1beta1.ResourceSpec{Memory: "lots"}}
		}, "spec.jobManager.resource.memory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FlinkConfig(input(application(), tt.change))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestHAEnabled(t *testing.T) {
	tests := []struct {
		conf map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"high-availability.type": "kubernetes"}, true},
		{map[string]string{"high-availability.type": "zookeeper"}, true},
		{map[string]string{"high-availability.type": "NONE"}, false},
		{map[string]string{"high-availability.type": " none "}, false},
		{map[string]string{"high-availability": "kubernetes"}, true},
		{map[string]string{"high-availability": "none"}, false},
		// The new key wins over the deprecated one, either way.
		{map[string]string{"high-availability.type": "NONE", "high-availability": "kubernetes"}, false},
		{map[string]string{"high-availability.type": "kubernetes", "high-availability": "NONE"}, true},
		// A blank new key counts as unset.
		{map[string]string{"high-availability.type": " ", "high-availability": "kubernetes"}, true},
	}
	for _, tt := range tests {
		if got := haEnabled(tt.conf); got != tt.want {
			t.Errorf("haEnabled(%v) = %v, want %v", tt.conf, got, tt.want)
		}
	}
}

func TestJobParallelism(t *testing.T) {
	tests := []struct {
		name   string
		tm     *int32
		job    *int32
		slots  int
		want   int
		wantOK bool
	}{
		{name: "replicas × slots", tm: ptr.To[int32](3), job: ptr.To[int32](100), slots: 2, want: 6, wantOK: true},
		{name: "job parallelism without replicas", job: ptr.To[int32](5), slots: 2, want: 5, wantOK: true},
		{name: "zero replicas fall back to the job", tm: ptr.To[int32](0), job: ptr.To[int32](5), slots: 2, want: 5, wantOK: true},
		{name: "neither", slots: 2},
		{name: "zero job parallelism", job: ptr.To[int32](0), slots: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := application().Spec
			spec.Job.Parallelism = tt.job
			if tt.tm != nil {
				spec.TaskManager = &v1beta1.TaskManagerSpec{Replicas: tt.tm}
			}
			got, ok := jobParallelism(&spec, tt.slots)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("jobParallelism = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestTaskManagerReplicas(t *testing.T) {
	tests := []struct {
		name    string
		session bool
		tm      *int32
		par     string // parallelism.default; "" = unset
		slots   int
		want    int32
		wantErr bool
	}{
		{name: "explicit replicas", tm: ptr.To[int32](4), par: "100", slots: 1, want: 4},
		{name: "explicit zero", tm: ptr.To[int32](0), par: "2", slots: 1, want: 0},
		{name: "negative", tm: ptr.To[int32](-1), slots: 1, wantErr: true},
		{name: "ceil(parallelism / slots)", par: "5", slots: 2, want: 3},
		{name: "no parallelism", slots: 2, want: 1},
		{name: "parallelism 0", par: "0", slots: 2, want: 1},
		{name: "negative parallelism", par: "-4", slots: 2, want: 1},
		{name: "parallelism not an integer", par: "x", slots: 2, wantErr: true},
		{name: "a session cluster ignores parallelism", session: true, par: "8", slots: 1, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := application()
			if tt.session {
				d = session()
			}
			if tt.tm != nil {
				d.Spec.TaskManager = &v1beta1.TaskManagerSpec{Replicas: tt.tm}
			}
			conf := map[string]string{}
			if tt.par != "" {
				conf[keyParallelism] = tt.par
			}
			got, err := taskManagerReplicas(&d.Spec, conf, tt.slots)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("taskManagerReplicas = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestJobManagerReplicas(t *testing.T) {
	tests := []struct {
		jm      *v1beta1.JobManagerSpec
		want    int32
		wantErr bool
	}{
		{nil, 1, false},
		{&v1beta1.JobManagerSpec{}, 1, false},
		{&v1beta1.JobManagerSpec{Replicas: ptr.To[int32](2)}, 2, false},
		{&v1beta1.JobManagerSpec{Replicas: ptr.To[int32](0)}, 0, true},
		{&v1beta1.JobManagerSpec{Replicas: ptr.To[int32](-1)}, 0, true},
	}
	for _, tt := range tests {
		spec := v1beta1.FlinkDeploymentSpec{JobManager: tt.jm}
		got, err := jobManagerReplicas(&spec)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("jobManagerReplicas(%+v) = %d, %v; want %d, error %v", tt.jm, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestTaskSlots(t *testing.T) {
	tests := []struct {
		value   string
		want    int
		wantErr bool
	}{
		{"1", 1, false},
		{" 4 ", 4, false},
		{"0", 0, true},
		{"-2", 0, true},
		{"two", 0, true},
		{"", 0, true}, // defaulted before; unset here is a bug
	}
	for _, tt := range tests {
		got, err := taskSlots(map[string]string{keySlots: tt.value})
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("taskSlots(%q) = %d, %v; want %d, error %v", tt.value, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestStandaloneClasspath(t *testing.T) {
	tests := []struct {
		jar, want string
		wantErr   bool
	}{
		{jar: "local:///opt/flink/usrlib/job.jar", want: "file:///opt/flink/usrlib/job.jar"},
		{jar: "LOCAL:///opt/job.jar", want: "file:///opt/job.jar"},
		{jar: "file:///opt/job.jar", want: "file:///opt/job.jar"},
		{jar: "s3://bucket/job.jar", want: "s3://bucket/job.jar"},
		{jar: "file:///opt/a;b.jar", want: "'file:///opt/a;b.jar'"},
		{jar: "http://[::1", wantErr: true},
	}
	for _, tt := range tests {
		got, err := standaloneClasspath(tt.jar)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("standaloneClasspath(%q) = %q, %v; want %q, error %v", tt.jar, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestTaskManagerRPCContainerPort(t *testing.T) {
	tests := []struct {
		name string
		port any // taskmanager.rpc.port; nil = unset
		want []corev1.ContainerPort
	}{
		{name: "default", want: []corev1.ContainerPort{{Name: "taskmanager-rpc", ContainerPort: 6122, Protocol: corev1.ProtocolTCP}}},
		{name: "user port", port: 6200, want: []corev1.ContainerPort{{Name: "taskmanager-rpc", ContainerPort: 6200, Protocol: corev1.ProtocolTCP}}},
		{name: "a range declares no port", port: "6200-6210"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustBuild(t, input(session(), func(in *Input) {
				if tt.port != nil {
					in.Spec.FlinkConfiguration = flinkConf(map[string]any{"taskmanager.rpc.port": tt.port})
				}
			}))
			got := mainContainer(t, c.TaskManager.Spec.Template.Spec).Ports
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("TM ports (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLegacyList(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{in: "[a, b]", want: "a;b", ok: true},
		{in: " ['x;y', \"it's\"] ", want: "'x;y';'it''s'", ok: true},
		{in: "[]", want: "", ok: true},
		{in: "a;b"},      // already legacy
		{in: "[a, [b]]"}, // nested: not a list of scalars
		{in: "[{a: 1}]"}, // maps inside
		{in: "[a, b"},    // not closed
		// Text around a list is not a list: Flink < 1.19 reads the whole
		// value as written, so it stays as written.
		{in: "[a] and [b]"},
		{in: "[a], [b]"},
		{in: "[a] [b]"},
		{in: "[a]]"},
		{in: "[a]\n---\n[b]"}, // a second YAML document
		{in: "[a] # b]"},      // a YAML comment: Flink < 1.19 cannot read '#'
	}
	for _, tt := range tests {
		got, ok := legacyList(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("legacyList(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
