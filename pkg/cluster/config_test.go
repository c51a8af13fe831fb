package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

func TestFlinkConfigPrecedence(t *testing.T) {
	op := config.Defaults()
	op["state.backend.type"] = "hashmap"       // operator default, overridden by the spec
	op["metrics.reporters"] = "prom"           // operator default, kept
	op["jobmanager.rpc.address"] = "somewhere" // injected wins over everyone
	op["kubernetes.operator.savepoint.cleanup.enabled"] = "false"

	d := application()
	d.Spec.FlinkConfiguration = flinkConf(map[string]any{
		"state":                                    map[string]any{"backend": map[string]any{"type": "rocksdb"}}, // nested
		"execution.checkpointing.dir":              "s3://b/cp",                                                  // flat
		"taskmanager.numberOfTaskSlots":            4,                                                            // user may set
		"rest.port":                                9091,                                                         // user's kept
		"jobmanager.rpc.address":                   "user",                                                       // injected wins
		"blob.server.port":                         0,                                                            // injected wins
		"execution.shutdown-on-application-finish": true,                                                         // injected wins
		"pipeline.name":                            "my pipeline",                                                // user's kept
		"execution.checkpointing.externalized-checkpoint-retention": "DELETE_ON_CANCELLATION", // user's kept
		"execution.savepoint.path":                                  "s3://b/old",             // dropped
		"execution.state-recovery.path":                             "s3://b/old",             // dropped
		"kubernetes.operator.periodic.savepoint.interval":           "1 h",                    // not written
		"jobmanager.memory.process.size":                            "1g",                     // spec resource wins
	})
	d.Spec.JobManager = &v1beta1.JobManagerSpec{Resource: &v1beta1.ResourceSpec{Memory: "2g"}}
	conf, err := FlinkConfig(input(d, func(in *Input) { in.OperatorConfig = op }))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"state.backend.type":                                        "rocksdb",
		"metrics.reporters":                                         "prom",
		"execution.checkpointing.dir":                               "s3://b/cp",
		"taskmanager.numberOfTaskSlots":                             "4",
		"rest.port":                                                 "9091",
		"jobmanager.rpc.address":                                    "demo.jobs",
		"jobmanager.rpc.port":                                       "6123",
		"blob.server.port":                                          "6124",
		"taskmanager.rpc.port":                                      "6122",
		"web.cancel.enable":                                         "false",
		"kubernetes.cluster-id":                                     "demo",
		"kubernetes.namespace":                                      "jobs",
		"$internal.pipeline.job-id":                                 testJobID,
		"execution.shutdown-on-application-finish":                  "false",
		"execution.submit-failed-job-on-application-error":          "true",
		"execution.checkpointing.externalized-checkpoint-retention": "DELETE_ON_CANCELLATION",
		"pipeline.name":                                             "my pipeline",
		"parallelism.default":                                       "2",
		"pipeline.classpaths":                                       "file:///opt/flink/usrlib/job.jar",
		"jobmanager.memory.process.size":                            "2048m",
		"taskmanager.memory.process.size":                           "1728m",
	}
	if diff := cmp.Diff(want, conf); diff != "" {
		t.Errorf("FlinkConfig (-want +got):\n%s", diff)
	}
}

func TestFlinkConfigDefaults(t *testing.T) {
	tests := []struct {
		name   string
		d      *v1beta1.FlinkDeployment
		change func(*Input)
		want   map[string]string // keys checked; "" = absent
	}{
		{
			name: "session cluster gets no job keys",
			d:    session(),
			want: map[string]string{
				"$internal.pipeline.job-id": "", "execution.shutdown-on-application-finish": "",
				"pipeline.name": "", "parallelism.default": "", "pipeline.classpaths": "",
				"taskmanager.numberOfTaskSlots": "1", "rest.port": "8081",
				"jobmanager.memory.process.size": "1600m", "taskmanager.memory.process.size": "1728m",
			},
		},
		{
			name: "application defaults",
			d:    application(),
			want: map[string]string{
				"$internal.pipeline.job-id": testJobID, "execution.shutdown-on-application-finish": "false",
				"execution.submit-failed-job-on-application-error":          "true",
				"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
				"pipeline.name": "demo", "parallelism.default": "2",
				"execution.checkpointing.interval": "", // only for last-state
			},
		},
		{
			name: "last-state gets a checkpoint interval",
			d: func() *v1beta1.FlinkDeployment {
				d := application()
				d.Spec.Job.UpgradeMode = v1beta1.UpgradeModeLastState
				return d
			}(),
			want: map[string]string{"execution.checkpointing.interval": "5 min"},
		},
		{
			name: "taskManager.replicas decide the parallelism, as upstream",
			d: func() *v1beta1.FlinkDeployment {
				d := application()
				d.Spec.FlinkConfiguration = flinkConf(map[string]any{"taskmanager.numberOfTaskSlots": "3"})
				d.Spec.TaskManager = &v1beta1.TaskManagerSpec{Replicas: ptr.To[int32](2)}
				return d
			}(),
			want: map[string]string{"parallelism.default": "6"},
		},
		{
			name: "no job parallelism keeps the user's parallelism.default",
			d: func() *v1beta1.FlinkDeployment {
				d := application()
				d.Spec.Job.Parallelism = nil
				d.Spec.FlinkConfiguration = flinkConf(map[string]any{"parallelism.default": 5})
				return d
			}(),
			want: map[string]string{"parallelism.default": "5"},
		},
		{
			name: "HA sets the HA cluster id and port",
			d: func() *v1beta1.FlinkDeployment {
				d := application()
				d.Spec.FlinkConfiguration = flinkConf(map[string]any{"high-availability.type": "kubernetes"})
				return d
			}(),
			want: map[string]string{"high-availability.cluster-id": "demo", "high-availability.jobmanager.port": "6123"},
		},
		{
			name: "Flink 2.3 with HA: result stores per job",
			d:    flink23HA(application(), nil),
			want: map[string]string{
				"job-result-store.storage-path":         "s3://bucket/ha/job-result-store/demo/" + testJobID,
				"application-result-store.storage-path": "s3://bucket/ha/application-result-store/demo/" + testJobID,
			},
		},
		{
			name: "Flink 2.3 with HA: the user's result stores are kept",
			d:    flink23HA(application(), map[string]any{"application-result-store.storage-path": "file:///ars", "job-result-store.storage-path": "file:///jrs"}),
			want: map[string]string{"application-result-store.storage-path": "file:///ars", "job-result-store.storage-path": "file:///jrs"},
		},
		{
			name: "Flink 2.3 without HA: Flink's default result stores",
			d: func() *v1beta1.FlinkDeployment {
				d := application()
				d.Spec.FlinkVersion = v1beta1.FlinkVersion2_3
				return d
			}(),
			want: map[string]string{"application-result-store.storage-path": "", "job-result-store.storage-path": ""},
		},
		{
			name: "Flink 2.2 with HA: Flink's default job result store, no application result store",
			d: func() *v1beta1.FlinkDeployment {
				d := flink23HA(application(), nil)
				d.Spec.FlinkVersion = v1beta1.FlinkVersion2_2
				return d
			}(),
			want: map[string]string{"application-result-store.storage-path": "", "job-result-store.storage-path": ""},
		},
		{
			// Per incarnation (the resource's UID): a session cluster created
			// again with the same name must not recover the previous one's
			// job results (Flink 2.3 crash-looped on them).
			name: "Flink 2.3 session cluster with HA: result stores of its incarnation",
			d:    flink23HA(session(), nil),
			want: map[string]string{"application-result-store.storage-path": "s3://bucket/ha/application-result-store/demo/uid-1",
				"job-result-store.storage-path": "s3://bucket/ha/job-result-store/demo/uid-1"},
		},
		{
			name: "HA NONE is not HA",
			d: func() *v1beta1.FlinkDeployment {
				d := application()
				d.Spec.FlinkConfiguration = flinkConf(map[string]any{"high-availability": "NONE"})
				return d
			}(),
			want: map[string]string{"high-availability.cluster-id": ""},
		},
		{
			name: "a user memory option suppresses the default process size",
			d: func() *v1beta1.FlinkDeployment {
				d := session()
				d.Spec.FlinkConfiguration = flinkConf(map[string]any{"jobmanager.memory.flink.size": "1g", "taskmanager.memory.flink.size": "2g"})
				return d
			}(),
			want: map[string]string{"jobmanager.memory.process.size": "", "taskmanager.memory.process.size": ""},
		},
		{
			name: "Kubernetes memory quantities become Flink sizes",
			d: func() *v1beta1.FlinkDeployment {
				d := session()
				d.Spec.JobManager = &v1beta1.JobManagerSpec{Resources: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1536Mi")}}}
				d.Spec.TaskManager = &v1beta1.TaskManagerSpec{Resources: &corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2048m")}}}
				return d
			}(),
			want: map[string]string{"jobmanager.memory.process.size": "1536m", "taskmanager.memory.process.size": "2048m"},
		},
		{
			name: "legacy flink-conf.yaml gets ';' lists",
			d: func() *v1beta1.FlinkDeployment {
				d := session()
				d.Spec.FlinkVersion = v1beta1.FlinkVersion1_18
				d.Spec.FlinkConfiguration = flinkConf(map[string]any{"env.java.opts.all": "-Da=1", "pipeline.jars": []any{"file:///a.jar", "file:///b;c.jar"}})
				return d
			}(),
			want: map[string]string{"pipeline.jars": "file:///a.jar;'file:///b;c.jar'", "env.java.opts.all": "-Da=1"},
		},
		{
			name: "legacy flink-conf.yaml keeps text that is more than a list",
			d: func() *v1beta1.FlinkDeployment {
				d := session()
				d.Spec.FlinkVersion = v1beta1.FlinkVersion1_18
				d.Spec.FlinkConfiguration = flinkConf(map[string]any{"pipeline.name": "[etl] daily [v2]"})
				return d
			}(),
			want: map[string]string{"pipeline.name": "[etl] daily [v2]"},
		},
		{
			name: "config.yaml keeps YAML lists",
			d: func() *v1beta1.FlinkDeployment {
				d := session()
				d.Spec.FlinkConfiguration = flinkConf(map[string]any{"pipeline.jars": []any{"file:///a.jar", "file:///b.jar"}})
				return d
			}(),
			want: map[string]string{"pipeline.jars": "['file:///a.jar', 'file:///b.jar']"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var changes []func(*Input)
			if tt.change != nil {
				changes = append(changes, tt.change)
			}
			conf, err := FlinkConfig(input(tt.d, changes...))
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
			for k := range conf {
				if strings.HasPrefix(k, config.OperatorPrefix) {
					t.Errorf("operator key %s written to the Flink config", k)
				}
			}
		})
	}
}

func TestFlinkConfigNilOperatorConfig(t *testing.T) {
	conf, err := FlinkConfig(input(session(), func(in *Input) { in.OperatorConfig = nil }))
	if err != nil || conf["jobmanager.rpc.address"] != "demo.jobs" {
		t.Fatalf("FlinkConfig = %v, %v", conf, err)
	}
}

func TestFlinkConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Input)
		want   string
	}{
		{"no deployment", func(in *Input) { in.Deployment = nil }, "Deployment is nil"},
		{"no version", func(in *Input) { in.Spec.FlinkVersion = "" }, "spec.flinkVersion"},
		{"bad version", func(in *Input) { in.Spec.FlinkVersion = "1.20" }, "spec.flinkVersion"},
		{"no image", func(in *Input) { in.Spec.Image = "" }, "spec.image"},
		{"no job id", func(in *Input) { in.JobID = "" }, "JobID"},
		{"short job id", func(in *Input) { in.JobID = "abc" }, "JobID"},
		{"bad rest.port", func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"rest.port": "80-90"})
		}, "rest.port"},
		{"rest.bind-port range", func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"rest.bind-port": "8081-8089"})
		}, "rest.bind-port"},
		{"zero slots", func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"taskmanager.numberOfTaskSlots": 0})
		}, "numberOfTaskSlots"},
		{"bad memory", func(in *Input) {
			in.Spec.TaskManager = &v1beta1.TaskManagerSpec{Resource: &v1beta1.ResourceSpec{Memory: "lots"}}
		}, "spec.taskManager.resource.memory"},
		{"bad limit factor", func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"kubernetes.taskmanager.memory.limit-factor": "0.5"})
		}, "limit-factor"},
		{"invalid operator key value", func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"kubernetes.operator.savepoint.history.max.count": "many"})
		}, "max.count"},
		{"flat and nested twice", func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"a.b": "1", "a": map[string]any{"b": "2"}})
		}, "set twice"},
		{"negative replicas", func(in *Input) {
			in.Spec.TaskManager = &v1beta1.TaskManagerSpec{Replicas: ptr.To[int32](-1)}
		}, "replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(input(application(), tt.change))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestConfigFileByVersion(t *testing.T) {
	tests := []struct {
		version v1beta1.FlinkVersion
		file    string
	}{
		{v1beta1.FlinkVersion1_15, LegacyConfigFile},
		{v1beta1.FlinkVersion1_18, LegacyConfigFile},
		{v1beta1.FlinkVersion1_19, ConfigYAMLFile},
		{v1beta1.FlinkVersion1_20, ConfigYAMLFile},
		{v1beta1.FlinkVersion2_0, ConfigYAMLFile},
		{v1beta1.FlinkVersion2_4, ConfigYAMLFile},
		{"v3_0", ConfigYAMLFile},
	}
	for _, tt := range tests {
		t.Run(string(tt.version), func(t *testing.T) {
			in := input(application(), func(in *Input) { in.Spec.FlinkVersion = tt.version })
			cm, err := ConfigMap(in)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for k := range cm.Data {
				names = append(names, k)
			}
			slices.Sort(names)
			want := []string{Log4jConsoleFile, tt.file}
			slices.Sort(want)
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("ConfigMap keys (-want +got):\n%s", diff)
			}
			if cm.Name != "flink-config-demo" || cm.Namespace != "jobs" {
				t.Errorf("ConfigMap %s/%s", cm.Namespace, cm.Name)
			}
			// Whatever the format, the file reads back as the config.
			conf, _ := FlinkConfig(in)
			got, err := config.FlattenYAML([]byte(cm.Data[tt.file]))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(conf, got); diff != "" {
				t.Errorf("file does not read back as FlinkConfig (-want +got):\n%s", diff)
			}
		})
	}
}

// trickyValues are values that break naive YAML writing.
var trickyValues = map[string]string{
	"int":          "42",
	"negative":     "-7",
	"zero":         "0",
	"bool":         "true",
	"bool-cap":     "True",
	"yes":          "yes",
	"on":           "on",
	"null":         "null",
	"tilde":        "~",
	"empty":        "",
	"float":        "1.50",
	"exp":          "1e3",
	"hex":          "0x1F",
	"octal":        "0o17",
	"leading-zero": "007",
	"underscore":   "1_000",
	"dot-num":      ".5",
	"plus":         "+1",
	"date-time":    "2024-01-01T10:00:00Z",
	"job-id-digit": "0123456789abcdef0123456789abcdef",
	"sexagesimal":  "12:30",
	"date":         "2024-01-01",
	"inf":          ".inf",
	"colon-space":  "a: b",
	"hash":         "a #b",
	"hash-start":   "#x",
	"star":         "*ref",
	"amp":          "&anchor",
	"bang":         "!tag",
	"pipe":         "|",
	"gt":           ">",
	"dash":         "- item",
	"dash-opts":    "-XX:+UseG1GC -Dx=y",
	"question":     "?x",
	"percent":      "%x",
	"at":           "@x",
	"backtick":     "`x`",
	"quote":        `say "hi"`,
	"squote":       "it's",
	"squote-start": "'x'",
	"brackets":     "[a, b]",
	"braces":       "{a: b}",
	"comma":        "a,b",
	"backslash":    `C:\path\x`,
	"newline":      "line1\nline2",
	"tab":          "a\tb",
	"cr":           "a\rb",
	"ctrl":         "a\x01b",
	"spaces":       "  padded  ",
	"unicode":      "größe ✓",
	"nbsp":         "a\u00a0b",
	"linesep":      "a\u2028b",
	"emoji":        "🚀",
	"trailing-col": "key:",
	"url":          "s3://bucket/path?x=1&y=2",
	"duration":     "5 min",
	"memory":       "1728m",
	"dollar":       "$(_POD_IP_ADDRESS)",
	"merge":        "<<",
	"equals":       "=",
}

func TestConfigYAMLRoundTrip(t *testing.T) {
	conf := maps.Clone(trickyValues)
	conf["$internal.pipeline.job-id"] = testJobID
	conf["key with: colon"] = "v"
	conf["true"] = "key that looks like a bool"
	conf["123"] = "numeric key"
	out, err := RenderConfig(Version{1, 20}, conf)
	if err != nil {
		t.Fatal(err)
	}

	// Generic decoding: every value must come back as exactly the string, or
	// as an int/bool whose text is exactly the string (how Flink's
	// Integer/Boolean-to-String conversion sees it).
	var decoded map[string]any
	if err := yaml.Unmarshal([]byte(out), &decoded); err != nil {
		t.Fatalf("config.yaml does not parse: %v\n%s", err, out)
	}
	if len(decoded) != len(conf) {
		t.Errorf("%d keys decoded, want %d\n%s", len(decoded), len(conf), out)
	}
	for k, want := range conf {
		got, ok := decoded[k]
		if !ok {
			t.Errorf("key %q missing\n%s", k, out)
			continue
		}
		switch g := got.(type) {
		case string:
			if g != want {
				t.Errorf("%q: got %q, want %q", k, g, want)
			}
		case int, bool:
			if fmt.Sprint(g) != want {
				t.Errorf("%q: got %T %v, want %q", k, g, g, want)
			}
		default:
			t.Errorf("%q: decoded as %T %v, want the string %q", k, g, g, want)
		}
	}

	// One line per key, sorted, so the file is stable and diffable.
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		var one map[string]any
		if err := yaml.Unmarshal([]byte(line), &one); err != nil || len(one) != 1 {
			t.Fatalf("line %q is not one key: %v", line, err)
		}
		for k := range one {
			keys = append(keys, k)
		}
	}
	if !slices.IsSorted(keys) {
		t.Errorf("keys not sorted: %v", keys)
	}

	// Readability: numbers, booleans and ordinary strings stay plain.
	for _, plain := range []string{"int: 42", "negative: -7", "bool: true", "duration: 5 min", "memory: 1728m",
		"url: s3://bucket/path?x=1&y=2", "$internal.pipeline.job-id: " + testJobID, "unicode: größe ✓"} {
		if !strings.Contains(out, "\n"+plain+"\n") {
			t.Errorf("want plain line %q in\n%s", plain, out)
		}
	}
}

func TestFlinkConfLegacy(t *testing.T) {
	out, err := RenderConfig(Version{1, 18}, map[string]string{
		"b.key": "value with 'quotes' and: colon",
		"a.key": "[not, a, yaml, list]",
		"empty": "",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "# Flink configuration written by the operator; edits are overwritten.\n" +
		"a.key: [not, a, yaml, list]\n" +
		"b.key: value with 'quotes' and: colon\n"
	if out != want {
		t.Errorf("flink-conf.yaml:\n%s\nwant:\n%s", out, want)
	}
	for _, bad := range []map[string]string{
		{"k": "a#b"}, {"k": "a\nb"}, {"k": " padded"}, {"bad: key": "v"}, {"k#": "v"},
	} {
		if _, err := RenderConfig(Version{1, 18}, bad); err == nil {
			t.Errorf("RenderConfig(%q) succeeded, want an error", bad)
		}
	}
	// The operator's own values must always be writable in the legacy form.
	d := application()
	d.Spec.FlinkVersion = v1beta1.FlinkVersion1_18
	if _, err := ConfigMap(input(d)); err != nil {
		t.Fatal(err)
	}
}

func TestLogConfiguration(t *testing.T) {
	tests := []struct {
		name    string
		logConf map[string]string
		want    map[string]string // expected data besides the config file
		wantErr string
	}{
		{name: "default log4j", want: map[string]string{Log4jConsoleFile: DefaultLog4jConsole}},
		{
			name:    "user log4j",
			logConf: map[string]string{Log4jConsoleFile: "rootLogger.level = DEBUG\n"},
			want:    map[string]string{Log4jConsoleFile: "rootLogger.level = DEBUG\n"},
		},
		{
			name:    "logback only keeps the log4j default",
			logConf: map[string]string{LogbackConsoleFile: "<configuration/>"},
			want:    map[string]string{Log4jConsoleFile: DefaultLog4jConsole, LogbackConsoleFile: "<configuration/>"},
		},
		{name: "config file name refused", logConf: map[string]string{"config.yaml": "x: y"}, wantErr: "spec.logConfiguration"},
		{name: "invalid key refused", logConf: map[string]string{"a/b": "x"}, wantErr: "spec.logConfiguration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm, err := ConfigMap(input(session(), func(in *Input) { in.Spec.LogConfiguration = tt.logConf }))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := maps.Clone(cm.Data)
			delete(got, ConfigYAMLFile)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ConfigMap data (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMemory(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"2048m", 2 << 30},
		{"2g", 2 << 30},
		{"2G", 2 << 30}, // Flink first: binary
		{"1024 mb", 1 << 30},
		{"512MB", 512 << 20},
		{"4096", 4096},
		{"1t", 1 << 40},
		{"2Gi", 2 << 30},
		{"2gi", 2 << 30},
		{"2GiB", 2 << 30},
		{"1536Mi", 1536 << 20},
		{"1.5G", 1_500_000_000},
		{"1.5Gi", 1536 << 20},
		{" 64k ", 64 << 10},
	}
	for _, tt := range tests {
		got, err := ParseMemory(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "lots", "-1g", "0", "2x"} {
		if n, err := ParseMemory(bad); err == nil {
			t.Errorf("ParseMemory(%q) = %d, want an error", bad, n)
		}
	}
	for bytes, want := range map[int64]string{2 << 30: "2048m", 1536 << 20: "1536m", 1_500_000_000: "1500000000b", 3 << 10: "3k"} {
		if got := FormatMemory(bytes); got != want {
			t.Errorf("FormatMemory(%d) = %q, want %q", bytes, got, want)
		}
	}
}

// flink23HA makes d a Flink 2.3 deployment with Kubernetes HA storing in
// s3://bucket/ha/ (trailing slash included), plus extra configuration.
func flink23HA(d *v1beta1.FlinkDeployment, extra map[string]any) *v1beta1.FlinkDeployment {
	d.Spec.FlinkVersion = v1beta1.FlinkVersion2_3
	d.Spec.Image = "flink:2.3"
	conf := map[string]any{"high-availability.type": "kubernetes", "high-availability.storageDir": "s3://bucket/ha/"}
	maps.Copy(conf, extra)
	d.Spec.FlinkConfiguration = flinkConf(conf)
	return d
}

// The remembered verdicts are plainSafe's, also once the memory is full and
// starts over, so rendering twice gives the same file.
func TestPlainSafeCached(t *testing.T) {
	clear(plainSafeVerdicts.m)
	var values []string
	for k, v := range trickyValues {
		values = append(values, k, v)
	}
	for range 2 {
		for _, s := range values {
			if got, want := plainSafeCached(s), plainSafe(s); got != want {
				t.Fatalf("plainSafeCached(%q) = %v, plainSafe %v", s, got, want)
			}
		}
	}
	for i := range plainSafeVerdictsMax + 10 {
		plainSafeCached(fmt.Sprint("value-", i))
	}
	if n := len(plainSafeVerdicts.m); n > plainSafeVerdictsMax {
		t.Fatalf("%d verdicts remembered, want at most %d", n, plainSafeVerdictsMax)
	}
	first, _ := RenderConfig(Version{1, 20}, trickyValues)
	second, _ := RenderConfig(Version{1, 20}, trickyValues)
	if first != second {
		t.Fatalf("the second rendering differs:\n%s\n---\n%s", first, second)
	}
}

func BenchmarkRenderConfigYAML(b *testing.B) {
	for b.Loop() {
		_, _ = RenderConfig(Version{1, 20}, trickyValues)
	}
}
