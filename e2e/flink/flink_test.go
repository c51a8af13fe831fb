package flink

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The versions build.sh and the Go code use (versions.txt) are the ones the
// Maven profiles pin, in testjob/pom.xml and examples/pom.xml; the examples come
// from a release of the same minor line.
func TestVersionsMatchPom(t *testing.T) {
	want := map[string]string{}
	for _, p := range pinned() {
		want[p.Profile] = p.Version
	}
	if len(want) < 2 {
		t.Errorf("want a 1.x and a 2.x version pinned, got %v", want)
	}
	for _, file := range []string{"testjob/pom.xml", "examples/pom.xml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var pom struct {
			Profiles []struct {
				ID              string `xml:"id"`
				FlinkVersion    string `xml:"properties>flink.version"`
				ExamplesVersion string `xml:"properties>examples.version"`
			} `xml:"profiles>profile"`
		}
		if err := xml.Unmarshal(data, &pom); err != nil {
			t.Fatal(err)
		}
		inPom := map[string]string{}
		for _, p := range pom.Profiles {
			inPom[p.ID] = p.FlinkVersion
			if p.ExamplesVersion != "" && majorMinor(p.ExamplesVersion) != majorMinor(p.FlinkVersion) {
				t.Errorf("%s: profile %s takes the examples of %s for Flink %s", file, p.ID, p.ExamplesVersion, p.FlinkVersion)
			}
		}
		if !reflect.DeepEqual(inPom, want) {
			t.Errorf("%s profiles %v, versions.txt %v", file, inPom, want)
		}
	}
}

// usrlib/ holds the test job, except where the job is one of the image's
// examples (see defaultUsrLib).
func TestDefaultUsrLib(t *testing.T) {
	d := &Dist{TestJobJar: "/cache/testjob.jar"}
	home := "/pods/jm/opt/flink"
	for classpaths, want := range map[string][]string{
		"":                                       {d.TestJobJar},
		"file://" + home + "/usrlib/testjob.jar": {d.TestJobJar},
		"file:///somewhere/examples/x.jar":       {d.TestJobJar},
		"file://" + home + "/examples/streaming/StateMachineExample.jar":             {},
		"file:///a.jar;file://" + home + "/examples/streaming/TopSpeedWindowing.jar": {},
	} {
		got := defaultUsrLib(d, home, map[string]string{"pipeline.classpaths": classpaths})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("pipeline.classpaths %q: usrlib %q, want %q", classpaths, got, want)
		}
		// Native mode names the jar in pipeline.jars (local:// scheme).
		jars := strings.ReplaceAll(classpaths, "file://", "local://")
		if got := defaultUsrLib(d, home, map[string]string{"pipeline.jars": jars}); !reflect.DeepEqual(got, want) {
			t.Errorf("pipeline.jars %q: usrlib %q, want %q", jars, got, want)
		}
	}
}

func TestVersionFor(t *testing.T) {
	for _, v := range Versions() {
		for _, in := range []string{v, majorMinor(v), "v" + majorMinor(v)} {
			got, err := VersionFor(in)
			if err != nil || got != v {
				t.Errorf("VersionFor(%q) = %q, %v; want %q", in, got, err, v)
			}
		}
	}
	if v, err := VersionFor("v1_20"); err != nil || majorMinor(v) != "1.20" {
		t.Errorf("VersionFor(v1_20) = %q, %v", v, err)
	}
	if _, err := VersionFor("v1_13"); err == nil {
		t.Error("VersionFor(v1_13): want an error")
	}
}

func TestConfigFileName(t *testing.T) {
	for v, want := range map[string]string{"1.18.1": "flink-conf.yaml", "1.19.0": "config.yaml", "1.20.5": "config.yaml", "2.3.0": "config.yaml"} {
		if got := ConfigFileName(v); got != want {
			t.Errorf("ConfigFileName(%s) = %s, want %s", v, got, want)
		}
	}
}

func TestPathMapper(t *testing.T) {
	// Purely lexical: a jar the image lacks (NoSuchExample.jar) maps like any other
	// path and then fails in Flink as it would in a pod; there is no stand-in.
	home := filepath.Join(t.TempDir(), "home")
	m := newPathMapper(home, map[string]string{"/flink-data": "/vol/data/"})
	for in, want := range map[string]string{
		"local:///opt/flink/usrlib/testjob.jar":                      "local://" + home + "/usrlib/testjob.jar",
		"file:///opt/flink/examples/streaming/NoSuchExample.jar":     "file://" + home + "/examples/streaming/NoSuchExample.jar",
		"/opt/flink/log/x.log":                                       home + "/log/x.log",
		"/opt/flinkx/a":                                              "/opt/flinkx/a",
		"/foo/opt/flink/a":                                           "/foo/opt/flink/a",
		"file:///flink-data/savepoints/sp-1":                         "file:///vol/data/savepoints/sp-1",
		"execution.checkpointing.dir=file:///flink-data/cp":          "execution.checkpointing.dir=file:///vol/data/cp",
		"execution.checkpointing.dir: 'file:///flink-data/cp'\nx: y": "execution.checkpointing.dir: 'file:///vol/data/cp'\nx: y",
		"a,/flink-data/x;/opt/flink/usrlib/testjob.jar":              "a,/vol/data/x;" + home + "/usrlib/testjob.jar",
		"s3://bucket/flink-data/x":                                   "s3://bucket/flink-data/x",
	} {
		if got := m.Rewrite(in); got != want {
			t.Errorf("Rewrite(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config.yaml", "env:\n  java:\n    opts:\n      all: -Da=1 -Db=2\nrest.port: 8081\nlist: [a, b]\n")
	got, err := ReadConfig(dir, "2.3.0")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"env.java.opts.all": "-Da=1 -Db=2", "rest.port": "8081", "list": "a;b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config.yaml: got %v, want %v", got, want)
	}
	// 1.20 prefers flink-conf.yaml; 2.x ignores it.
	write("flink-conf.yaml", "# comment\nrest.port: 9091 # trailing\nenv.java.opts.taskmanager: -Dx=y\n")
	if got, _ := ReadConfig(dir, "1.20.5"); got["rest.port"] != "9091" || got["env.java.opts.taskmanager"] != "-Dx=y" {
		t.Errorf("flink-conf.yaml on 1.20: got %v", got)
	}
	if got, _ := ReadConfig(dir, "2.3.0"); got["rest.port"] != "8081" {
		t.Errorf("2.x must read config.yaml: got %v", got)
	}
	opts := javaOptsFromConfig(map[string]string{"env.java.opts.all": "-Da=1", "env.java.opts.jobmanager": "-Djm=1", "env.java.opts.taskmanager": "-Dtm=1"}, TaskManager)
	if !reflect.DeepEqual(opts, []string{"-Da=1", "-Dtm=1"}) {
		t.Errorf("javaOptsFromConfig = %v", opts)
	}
}

func TestWriteConfDirRoundTrip(t *testing.T) {
	conf := map[string]string{"rest.port": "8081", "execution.checkpointing.interval": "2 s", "a.b": "x: y"}
	for _, v := range []string{"1.18.1", "2.3.0"} {
		dir := t.TempDir()
		if err := WriteConfDir(dir, v, conf); err != nil {
			t.Fatal(err)
		}
		got, err := ReadConfig(dir, v)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, conf) {
			t.Errorf("%s: got %v, want %v", v, got, conf)
		}
		if _, err := os.Stat(filepath.Join(dir, Log4jConsoleFile)); err != nil {
			t.Error(err)
		}
	}
}

func TestDynamicProperties(t *testing.T) {
	jm := dynamicProperties(LaunchOptions{Mode: StandaloneJob, Host: "127.0.5.3", DynamicProperties: map[string]string{"b": "2", "a": "1"}})
	want := []string{"jobmanager.bind-host=127.0.5.3", "rest.bind-address=127.0.5.3", "a=1", "b=2"}
	if !reflect.DeepEqual(jm, want) {
		t.Errorf("jm: got %v, want %v", jm, want)
	}
	tm := dynamicProperties(LaunchOptions{Mode: TaskManager, Host: "127.0.5.4", RPCAddress: "jm-svc"})
	want = []string{"taskmanager.bind-host=127.0.5.4", "taskmanager.host=127.0.5.4", "jobmanager.rpc.address=jm-svc"}
	if !reflect.DeepEqual(tm, want) {
		t.Errorf("tm: got %v, want %v", tm, want)
	}
}
