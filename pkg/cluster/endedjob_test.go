package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEndedJobGuard runs a native application JobManager's command line in
// bash, with a stand-in kubernetes-jobmanager.sh that prints its
// arguments: it starts the application unless EndedJobEnv names the
// cluster's own job, and then the session entrypoint, with the same
// entrypoint arguments. A session cluster's command has no guard.
func TestEndedJobGuard(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash: %v", err) // the image's shell; every machine that builds this has one
	}
	bin := t.TempDir()
	stub := "#!/bin/sh\necho \"started $*\"\n"
	if err := os.WriteFile(filepath.Join(bin, KubernetesJobManagerScript), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	const token = "0123abcd-mfz1k2"
	c := mustBuild(t, nativeInput(application(), func(in *Input) {
		in.Spec.FlinkConfiguration = flinkConf(map[string]any{"kubernetes.jobmanager.entrypoint.args": "-Dfoo=bar"})
		in.DeployToken = token
	}))
	if got := DeployTokenOf(c.JobManager); got != token {
		t.Errorf("DeployTokenOf = %q, want %q", got, token)
	}
	main := mainContainer(t, c.JobManager.Spec.Template.Spec)
	env := map[string]bool{}
	for _, e := range main.Env {
		if e.Name == EndedJobEnv {
			ref := e.ValueFrom.ConfigMapKeyRef
			if ref == nil || ref.Name != c.ConfigMap.Name || ref.Key != EndedJobKey || ref.Optional == nil || !*ref.Optional {
				t.Errorf("%s from %+v, want the optional key %s of ConfigMap %s", EndedJobEnv, e.ValueFrom, EndedJobKey, c.ConfigMap.Name)
			}
			env[e.Name] = true
		}
	}
	if !env[EndedJobEnv] {
		t.Fatalf("no %s in the JobManager's env %+v", EndedJobEnv, main.Env)
	}
	for _, tc := range []struct {
		name, ended, want string
	}{
		{"nothing ended", "", "started kubernetes-application -Dfoo=bar"},
		{"another JobManager's job ended", "0123abcd-mfz1k1", "started kubernetes-application -Dfoo=bar"},
		{"this JobManager's job ended", token, "started kubernetes-session -Dfoo=bar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bash, main.Args[1:]...)
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
			if tc.ended != "" {
				cmd.Env = append(cmd.Env, EndedJobEnv+"="+tc.ended)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if got := lines[len(lines)-1]; got != tc.want {
				t.Errorf("ran %q, want %q", out, tc.want)
			}
		})
	}

	s := mustBuild(t, nativeInput(session(), func(in *Input) { in.DeployToken = token }))
	if args := mainContainer(t, s.JobManager.Spec.Template.Spec).Args; strings.Contains(strings.Join(args, " "), EndedJobEnv) || DeployTokenOf(s.JobManager) != "" {
		t.Errorf("session cluster JobManager with the ended-job guard: %q", args)
	}
}

// TestEndedJobConfigMap: Input.EndedToken is recorded in a native
// application's ConfigMap (and so in its hash: the operator rewrites it);
// a standalone cluster has no guard and no record.
func TestEndedJobConfigMap(t *testing.T) {
	const token = "0123abcd-mfz1k2"
	running := mustBuild(t, nativeInput(application(), func(in *Input) { in.DeployToken = token }))
	ended := mustBuild(t, nativeInput(application(), func(in *Input) { in.DeployToken, in.EndedToken = token, token }))
	if _, ok := running.ConfigMap.Data[EndedJobKey]; ok {
		t.Errorf("running job's ConfigMap has %s", EndedJobKey)
	}
	if got := ended.ConfigMap.Data[EndedJobKey]; got != token {
		t.Errorf("%s = %q, want the token %q", EndedJobKey, got, token)
	}
	if !SpecHashChanged(ended.ConfigMap, running.ConfigMap) {
		t.Error("the record does not change the ConfigMap's hash: the operator would not write it")
	}
	standalone := mustBuild(t, input(application(), func(in *Input) { in.DeployToken, in.EndedToken = token, token }))
	if _, ok := standalone.ConfigMap.Data[EndedJobKey]; ok {
		t.Errorf("standalone ConfigMap has %s", EndedJobKey)
	}
	if s := mainContainer(t, standalone.JobManager.Spec.Template.Spec); strings.Contains(strings.Join(s.Args, " "), EndedJobEnv) || len(s.Env) > 0 && s.Env[len(s.Env)-1].Name == EndedJobEnv {
		t.Errorf("standalone JobManager with the guard: %q %+v", s.Args, s.Env)
	}
}
