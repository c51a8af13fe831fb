package validation

import (
	"net/netip"
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// TestSessionJob covers every FlinkSessionJob rule; upstream's messages are
// compared verbatim, ours by what they must name.
func TestSessionJob(t *testing.T) {
	type mut = func(*v1beta1.FlinkSessionJob)
	recorded := func(spec string) mut {
		return func(j *v1beta1.FlinkSessionJob) { j.Status.ReconciliationStatus.LastReconciledSpec = spec }
	}
	for _, tc := range []struct {
		name    string
		change  mut
		cluster *v1beta1.FlinkDeployment
		// operator is the operator configuration, default config.Defaults().
		operator config.Config
		exact    string   // upstream message
		want     []string // our message must mention these
	}{
		{name: "valid", change: func(*v1beta1.FlinkSessionJob) {}, cluster: session("cluster")},
		{name: "valid before its cluster exists", change: func(*v1beta1.FlinkSessionJob) {}},
		{name: "no deploymentName", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.DeploymentName = "" },
			want: []string{"spec.deploymentName is required", "session cluster FlinkDeployment"}},
		{name: "bad deploymentName", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.DeploymentName = "Cluster" },
			exact: "The FlinkDeployment name: Cluster is invalid, must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123'), and the length must be no more than 45 characters."},
		{name: "no job", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job = nil }, exact: "The job spec should not be empty"},
		{name: "deploymentName differs from the reconciled one", cluster: session("cluster"),
			change: recorded(`{"spec":{"deploymentName":"old-cluster","job":{}},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}`),
			exact:  "The deploymentName can't be changed"},
		{name: "deploymentName same as the reconciled one", cluster: session("cluster"),
			change: recorded(`{"spec":{"deploymentName":"cluster","job":{}},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}`)},
		{name: "file jar", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "file:///opt/jobs/job.jar" }, operator: permissive()},
		{name: "http jar", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "http://repo/job.jar" }, operator: permissive()},
		{name: "file jar, default schemes", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "file:///opt/jobs/job.jar" },
			exact: "jarURI scheme 'file' is not in the allowlist [https]. Configure 'kubernetes.operator.user.artifacts.allowed-schemes' to extend the allowlist."},
		{name: "http jar, default schemes, cluster known", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "http://repo/job.jar" }, cluster: session("cluster"),
			exact: "jarURI scheme 'http' is not in the allowlist [https]. Configure 'kubernetes.operator.user.artifacts.allowed-schemes' to extend the allowlist."},
		{name: "https loopback jar, default", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "https://127.0.0.1:8443/job.jar" },
			exact: "jarURI host '127.0.0.1' resolves to a restricted address"},
		{name: "http loopback jar, http allowed, hosts restricted", operator: withArtifacts("http,https", "true"),
			change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "http://localhost:8080/job.jar" },
			exact:  "jarURI host 'localhost' resolves to a restricted address"},
		{name: "https loopback jar, hosts not restricted", operator: withArtifacts("https", "false"),
			change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "https://127.0.0.1:8443/job.jar" }},
		{name: "https jar without host", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "https:///job.jar" },
			exact: "jarURI must include a host for http/https schemes"},
		{name: "local jar", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "local:///opt/flink/job.jar" },
			want: []string{"local://", "REST API", "http(s)://", "file://"}},
		{name: "s3 jar", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "s3://bucket/job.jar" }, operator: withArtifacts("https,s3", "true"),
			want: []string{"s3://", "not supported", "http://, https:// or file://"}},
		{name: "jar without scheme", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "/opt/job.jar" },
			want: []string{"no scheme", "file://"}},
		{name: "bad job state", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.State = "paused" },
			exact: `spec.job.state "paused": want running or suspended`},
		{name: "application cluster", change: func(*v1beta1.FlinkSessionJob) {}, cluster: application("cluster"),
			exact: "Can not submit session job to application cluster"},
		{name: "savepoint mode, dirs from the cluster", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.UpgradeMode = v1beta1.UpgradeModeSavepoint },
			cluster: withConf(session("cluster"), config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir)},
		{name: "savepoint mode, dirs from the job", change: func(j *v1beta1.FlinkSessionJob) {
			j.Spec.Job.UpgradeMode = v1beta1.UpgradeModeSavepoint
			j.Spec.FlinkConfiguration = conf(config.FlinkSavepointDir, spDir, config.FlinkCheckpointDirDeprecated, cpDir)
		}, cluster: session("cluster")},
		{name: "savepoint mode without savepoint dir", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.UpgradeMode = v1beta1.UpgradeModeSavepoint },
			cluster: withConf(session("cluster"), config.FlinkCheckpointDir, cpDir),
			exact:   "Job could not be upgraded with savepoint while config key[execution.checkpointing.savepoint-dir] is not set"},
		{name: "last-state without checkpoint dir", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.UpgradeMode = v1beta1.UpgradeModeLastState },
			cluster: session("cluster"),
			exact:   "Checkpoint directory[execution.checkpointing.dir] must be defined for last-state and savepoint upgrade modes"},
		{name: "periodic savepoints in the job, no dir", change: func(j *v1beta1.FlinkSessionJob) {
			j.Spec.FlinkConfiguration = conf(config.KeyPeriodicSavepointInterval, "10m")
		}, cluster: session("cluster"),
			exact: "Periodic savepoints cannot be enabled when config key[execution.checkpointing.savepoint-dir] is not set"},
		{name: "dir rules wait for the cluster", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.UpgradeMode = v1beta1.UpgradeModeSavepoint }},
		{name: "redeploy nonce without path", change: func(j *v1beta1.FlinkSessionJob) {
			j.Spec.Job.SavepointRedeployNonce = ptr(int64(1))
			j.Status.ReconciliationStatus.LastReconciledSpec = `{"spec":{"deploymentName":"cluster","job":{}},"resource_metadata":{}}`
		}, cluster: session("cluster"), exact: "InitialSavepointPath must not be empty for savepoint redeployment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := sessionJob("sj", "cluster")
			tc.change(job)
			operator := tc.operator
			if operator == nil {
				operator = config.Defaults()
			}
			res, err := SessionJob(job, tc.cluster, operator)
			if tc.exact != "" {
				checkErr(t, err, tc.exact)
			} else {
				checkErrContains(t, err, tc.want...)
			}
			if err == nil && res == nil {
				t.Error("nil result without an error")
			}
			if err == nil && tc.cluster != nil && (res.Config == nil || res.Version.IsZero()) {
				t.Errorf("result %+v, want the effective config and the cluster's version", res)
			}
		})
	}
}

func TestSessionJobUpdate(t *testing.T) {
	old := sessionJob("sj", "cluster")
	cur := old.DeepCopy()
	cur.Spec.Job.Parallelism = ptr(int32(4))
	checkErr(t, SessionJobUpdate(old, cur), "")
	cur.Spec.DeploymentName = "other"
	checkErr(t, SessionJobUpdate(old, cur), "The deploymentName can't be changed")
}

func TestSessionJarURI(t *testing.T) {
	for uri, ok := range map[string]bool{
		"": true, "https://h/j.jar": true, "HTTP://h/j.jar": true, "file:///j.jar": true,
		"local:///j.jar": false, "s3://b/j.jar": false, "j.jar": false, "http://[::1": false,
	} {
		if err := SessionJarURI(uri); (err == nil) != ok {
			t.Errorf("SessionJarURI(%q) = %v, want ok=%v", uri, err, ok)
		}
	}
}

// withArtifacts is the default operator configuration with allowed-schemes
// and disallow-restricted-hosts set.
func withArtifacts(schemes, restricted string) config.Config {
	c := config.Defaults()
	c[config.KeyUserArtifactsAllowedSchemes] = schemes
	c[config.KeyUserArtifactsDisallowRestrictedHosts] = restricted
	return c
}

// permissive is what the e2e tests configure: http, https and file, any
// host.
func permissive() config.Config { return withArtifacts("http,https,file", "false") }

// TestSessionJarAllowed: each user.artifacts option's default and
// non-default behaviour, upstream's messages verbatim.
func TestSessionJarAllowed(t *testing.T) {
	const (
		httpRefused  = "jarURI scheme 'http' is not in the allowlist [https]. Configure 'kubernetes.operator.user.artifacts.allowed-schemes' to extend the allowlist."
		fileRefused  = "jarURI scheme 'file' is not in the allowlist [https]. Configure 'kubernetes.operator.user.artifacts.allowed-schemes' to extend the allowlist."
		emptyRefused = "jarURI scheme 'https' is not in the allowlist []. Configure 'kubernetes.operator.user.artifacts.allowed-schemes' to extend the allowlist."
	)
	restricted := func(host string) string { return "jarURI host '" + host + "' resolves to a restricted address" }
	for _, tc := range []struct {
		uri  string
		cfg  config.Config
		want string
	}{
		// allowed-schemes: https only by default, matched ignoring case.
		{uri: "https://repo.example/j.jar", cfg: config.Defaults()},
		{uri: "HTTPS://repo.example/j.jar", cfg: config.Defaults()},
		{uri: "http://repo.example/j.jar", cfg: config.Defaults(), want: httpRefused},
		{uri: "file:///opt/j.jar", cfg: config.Defaults(), want: fileRefused},
		{uri: "http://repo.example/j.jar", cfg: withArtifacts("HTTP, https", "true")},
		{uri: "file:///opt/j.jar", cfg: withArtifacts("https,file", "true")},
		{uri: "https://repo.example/j.jar", cfg: withArtifacts("http", "true"),
			want: "jarURI scheme 'https' is not in the allowlist [http]. Configure 'kubernetes.operator.user.artifacts.allowed-schemes' to extend the allowlist."},
		{uri: "https://repo.example/j.jar", cfg: withArtifacts("[]", "true"), want: emptyRefused},
		{uri: "https://repo.example/j.jar", cfg: withArtifacts(" ", "true")}, // blank is unset: the default
		{uri: "", cfg: config.Defaults()},
		{uri: "/opt/j.jar", cfg: config.Defaults(), want: "jarURI must include a scheme"},
		// disallow-restricted-hosts: on by default for http(s) hosts that
		// are addresses or localhost names; names are checked when dialled.
		{uri: "https://127.0.0.1/j.jar", cfg: config.Defaults(), want: restricted("127.0.0.1")},
		{uri: "https://169.254.169.254/latest/meta-data", cfg: config.Defaults(), want: restricted("169.254.169.254")},
		{uri: "https://10.1.2.3/j.jar", cfg: config.Defaults(), want: restricted("10.1.2.3")},
		{uri: "https://192.168.0.1/j.jar", cfg: config.Defaults(), want: restricted("192.168.0.1")},
		{uri: "https://0.0.0.0/j.jar", cfg: config.Defaults(), want: restricted("0.0.0.0")},
		{uri: "https://[::1]:8443/j.jar", cfg: config.Defaults(), want: restricted("::1")},
		{uri: "https://[::ffff:172.16.0.1]/j.jar", cfg: config.Defaults(), want: restricted("::ffff:172.16.0.1")},
		{uri: "https://[fd00::1]/j.jar", cfg: config.Defaults(), want: restricted("fd00::1")},
		{uri: "https://LocalHost./j.jar", cfg: config.Defaults(), want: restricted("LocalHost.")},
		{uri: "https://app.localhost/j.jar", cfg: config.Defaults(), want: restricted("app.localhost")},
		{uri: "https://8.8.8.8/j.jar", cfg: config.Defaults()},
		{uri: "https://[2001:4860::8888]/j.jar", cfg: config.Defaults()},
		{uri: "https://internal.example/j.jar", cfg: config.Defaults()},
		{uri: "https:///j.jar", cfg: config.Defaults(), want: "jarURI must include a host for http/https schemes"},
		{uri: "https://127.0.0.1/j.jar", cfg: withArtifacts("https", "false")},
		{uri: "http://127.0.0.1:8080/j.jar", cfg: permissive()},
		{uri: "https:///j.jar", cfg: withArtifacts("https", "false")},
		// file:// has no host to check.
		{uri: "file:///opt/j.jar", cfg: withArtifacts("file", "true")},
	} {
		checkErrNamed(t, tc.uri, SessionJarAllowed(tc.uri, tc.cfg), tc.want)
	}
}

func checkErrNamed(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: unexpected error: %v", name, err)
	case want != "" && err == nil:
		t.Errorf("%s: no error, want %q", name, want)
	case want != "" && err.Error() != want:
		t.Errorf("%s: error\n  %q\nwant\n  %q", name, err.Error(), want)
	}
}

func TestRestrictedAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "127.9.9.9": true, "::1": true, // loopback
		"169.254.169.254": true, "fe80::1": true, "fe80::1%eth0": true, // link-local
		"10.0.0.1": true, "172.16.0.1": true, "172.31.255.255": true, "192.168.1.1": true, "fc00::1": true, "fd12::1": true, "fec0::1": true, // private, site-local
		"0.0.0.0": true, "0.1.2.3": true, "::": true, // unspecified, this network
		"224.0.0.1": true, "239.1.1.1": true, "ff02::1": true, "ff05::1": true, // multicast
		"::ffff:127.0.0.1": true, "::ffff:10.0.0.1": true, // mapped
		"8.8.8.8": false, "172.32.0.1": false, "203.0.113.80": false, "100.64.0.1": false, "2001:4860::8888": false, "::ffff:8.8.8.8": false,
	} {
		if got := RestrictedAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("RestrictedAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

// A resource's flinkConfiguration lifts the artifact options only if the
// registry lets a resource set them (upstream: operator-wide).
func TestSessionJarOptionsFromResource(t *testing.T) {
	for _, tc := range []struct{ key, value, uri string }{
		{config.KeyUserArtifactsAllowedSchemes, "http", "http://repo.example/j.jar"},
		{config.KeyUserArtifactsDisallowRestrictedHosts, "false", "https://10.0.0.1/j.jar"},
	} {
		k, ok := config.LookupKey(tc.key)
		if !ok {
			t.Fatalf("%s is not registered", tc.key)
		}
		for _, onCluster := range []bool{false, true} {
			job := sessionJob("sj", "cluster")
			job.Spec.Job.JarURI = tc.uri
			cluster := session("cluster")
			if onCluster {
				cluster.Spec.FlinkConfiguration = conf(tc.key, tc.value)
			} else {
				job.Spec.FlinkConfiguration = conf(tc.key, tc.value)
			}
			_, err := SessionJob(job, cluster, config.Defaults())
			if (err == nil) != k.Overridable {
				t.Errorf("%s: %s in the resource (cluster %v): %v, want it to count only if overridable (%v)", tc.uri, tc.key, onCluster, err, k.Overridable)
			}
		}
	}
}
