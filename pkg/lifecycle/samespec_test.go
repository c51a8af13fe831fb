package lifecycle

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// The records below are lastReconciledSpec as upstream's operator writes
// it, written by hand from its serializer: SpecUtils.writeSpecWithMeta
// (flink-kubernetes-operator-api, api/utils/SpecUtils.java) puts the spec
// under "spec" and ReconciliationMetadata under "resource_metadata",
// through `new ObjectMapper()`, Jackson's defaults: every field, nulls
// included, in declaration order (AbstractFlinkSpec's job, restartNonce,
// flinkConfiguration before the subclass's), the Java types' initial values
// as values (JobSpec: args new String[0], state RUNNING, upgradeMode
// STATELESS, int parallelism 0; JobManagerSpec: int replicas 1), Double as
// 1.0, enums by their @JsonProperty. ReconciliationUtils.
// updateStatusForSpecReconciliation writes a job's state as the state after
// the reconcile ("running" while it runs). fabric8's pod model (podTemplate)
// leaves nulls and empty lists out and writes a quantity as the string
// amount+format it read ("0.5" for a YAML 0.5). The resources' specs (cr) are
// as the API server returns them, the manifests upstream's examples use.

// upstream115 is release 1.15.0's record of upstreamCR: ConfigObjectNode
// flinkConfiguration (verbatim since 1.13), resource_metadata without
// metadata (since 1.10, FLINK-33803).
const upstream115 = `{"spec":{"job":{"jarURI":"local:///opt/flink/examples/streaming/StateMachineExample.jar","parallelism":2,` +
	`"entryClass":null,"args":[],"state":"running","savepointTriggerNonce":null,"initialSavepointPath":null,` +
	`"checkpointTriggerNonce":null,"upgradeMode":"savepoint","allowNonRestoredState":null,"savepointRedeployNonce":null,` +
	`"autoscalerResetNonce":null},"restartNonce":null,"flinkConfiguration":{"taskmanager.numberOfTaskSlots":"2",` +
	`"state.savepoints.dir":"file:///flink-data/savepoints","state.checkpoints.dir":"file:///flink-data/checkpoints"},` +
	`"image":"flink:1.20","imagePullPolicy":null,"serviceAccount":"flink","flinkVersion":"v1_20","ingress":null,` +
	`"podTemplate":null,"jobManager":{"resource":{"cpu":0.5,"memory":"1024m","ephemeralStorage":null},"replicas":1,` +
	`"podTemplate":null},"taskManager":{"resource":{"cpu":0.5,"memory":"1024m","ephemeralStorage":null},` +
	`"replicas":null,"podTemplate":null},"logConfiguration":null,"mode":null},` +
	`"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":false}}`

// upstreamCR is the spec upstream115 records, as the API server returns it.
const upstreamCR = `{"image":"flink:1.20","flinkVersion":"v1_20","serviceAccount":"flink",` +
	`"flinkConfiguration":{"taskmanager.numberOfTaskSlots":"2","state.savepoints.dir":"file:///flink-data/savepoints",` +
	`"state.checkpoints.dir":"file:///flink-data/checkpoints"},` +
	`"jobManager":{"resource":{"memory":"1024m","cpu":0.5}},"taskManager":{"resource":{"memory":"1024m","cpu":0.5}},` +
	`"job":{"jarURI":"local:///opt/flink/examples/streaming/StateMachineExample.jar","parallelism":2,"upgradeMode":"savepoint"}}`

// TestSameSpecAsUpstreamRecordedIt pins that a spec upstream's operator
// reconciled compares equal to its record when only the form differs (as
// upstream serializes it, or a form-only edit since), so that the
// takeover of a running job restarts nothing, and that every change of
// meaning still counts.
func TestSameSpecAsUpstreamRecordedIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		recorded string
		cr       string
		mod      func(*v1beta1.FlinkDeploymentSpec) // applied to cr
		want     bool
	}{
		// Release 1.15.0 (the case): "state":"running" and
		// "replicas":1 for fields the manifest leaves unset, "args":[],
		// nulls, cpu 0.5 and memory "1024m" as written.
		{"upstream 1.15 record of a running application", upstream115, upstreamCR, nil, true},
		// JobSpec.parallelism is an int: an unset one is written 0.
		{"unset parallelism recorded as 0",
			`{"spec":{"job":{"jarURI":"local:///job.jar","parallelism":0,"entryClass":null,"args":[],"state":"running",` +
				`"savepointTriggerNonce":null,"initialSavepointPath":null,"checkpointTriggerNonce":null,"upgradeMode":"stateless",` +
				`"allowNonRestoredState":null,"savepointRedeployNonce":null,"autoscalerResetNonce":null},"restartNonce":null,` +
				`"flinkConfiguration":{"taskmanager.numberOfTaskSlots":"2"},"image":"flink:1.20","imagePullPolicy":null,` +
				`"serviceAccount":"flink","flinkVersion":"v1_20","ingress":null,"podTemplate":null,"jobManager":null,` +
				`"taskManager":null,"logConfiguration":null,"mode":"native"},` +
				`"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}`,
			`{"image":"flink:1.20","flinkVersion":"v1_20","serviceAccount":"flink","mode":"native",` +
				`"flinkConfiguration":{"taskmanager.numberOfTaskSlots":"2"},"job":{"jarURI":"local:///job.jar"}}`, nil, true},
		// AbstractFlinkSpec.flinkConfiguration is `new ConfigObjectNode()`
		// since 1.13: an unset one is written {}.
		{"unset flinkConfiguration recorded as {}",
			`{"spec":{"job":null,"restartNonce":null,"flinkConfiguration":{},"image":"flink:1.20","imagePullPolicy":null,` +
				`"serviceAccount":"flink","flinkVersion":"v1_20","ingress":null,"podTemplate":null,"jobManager":{"resource":` +
				`{"cpu":1.0,"memory":"2048m","ephemeralStorage":null},"replicas":1,"podTemplate":null},"taskManager":null,` +
				`"logConfiguration":null,"mode":null},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}`,
			`{"image":"flink:1.20","flinkVersion":"v1_20","serviceAccount":"flink","jobManager":{"resource":{"memory":"2048m","cpu":1}}}`,
			nil, true},
		// Releases 1.10 to 1.12: flinkConfiguration is a Map<String,
		// String>, so Jackson reads the manifest's 2 and true as "2" and
		// "true" and writes them so.
		{"upstream 1.12 record: configuration values as strings",
			`{"spec":{"job":{"jarURI":"local:///job.jar","parallelism":2,"entryClass":null,"args":[],"state":"running",` +
				`"savepointTriggerNonce":null,"initialSavepointPath":null,"checkpointTriggerNonce":null,"upgradeMode":"last-state",` +
				`"allowNonRestoredState":null,"savepointRedeployNonce":null,"autoscalerResetNonce":null},"restartNonce":null,` +
				`"flinkConfiguration":{"taskmanager.numberOfTaskSlots":"2","execution.checkpointing.unaligned.enabled":"true",` +
				`"high-availability.type":"kubernetes"},"image":"flink:1.20","imagePullPolicy":null,"serviceAccount":"flink",` +
				`"flinkVersion":"v1_20","ingress":null,"podTemplate":null,"jobManager":null,"taskManager":null,` +
				`"logConfiguration":null,"mode":null},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":false}}`,
			`{"image":"flink:1.20","flinkVersion":"v1_20","serviceAccount":"flink","flinkConfiguration":{"taskmanager.numberOfTaskSlots":2,` +
				`"execution.checkpointing.unaligned.enabled":true,"high-availability.type":"kubernetes"},` +
				`"job":{"jarURI":"local:///job.jar","parallelism":2,"upgradeMode":"last-state"}}`, nil, true},
		// Releases up to 1.9: ReconciliationMetadata carries an ObjectMeta
		// with the generation (removed by FLINK-33803); JobSpec has no
		// autoscalerResetNonce yet.
		{"upstream 1.8 record: resource_metadata with metadata.generation",
			`{"spec":{"job":{"jarURI":"local:///job.jar","parallelism":2,"entryClass":null,"args":[],"state":"running",` +
				`"savepointTriggerNonce":null,"initialSavepointPath":null,"checkpointTriggerNonce":null,"upgradeMode":"savepoint",` +
				`"allowNonRestoredState":null,"savepointRedeployNonce":null},"restartNonce":null,"flinkConfiguration":` +
				`{"taskmanager.numberOfTaskSlots":"2"},"image":"flink:1.20","imagePullPolicy":null,"serviceAccount":"flink",` +
				`"flinkVersion":"v1_20","ingress":null,"podTemplate":null,"jobManager":{"resource":{"cpu":1.0,"memory":"2048m",` +
				`"ephemeralStorage":null},"replicas":1,"podTemplate":null},"taskManager":{"resource":{"cpu":1.0,"memory":"2048m",` +
				`"ephemeralStorage":null},"replicas":null,"podTemplate":null},"logConfiguration":null,"mode":null},` +
				`"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","metadata":{"generation":3},"firstDeployment":false}}`,
			`{"image":"flink:1.20","flinkVersion":"v1_20","serviceAccount":"flink","flinkConfiguration":{"taskmanager.numberOfTaskSlots":"2"},` +
				`"jobManager":{"resource":{"memory":"2048m","cpu":1}},"taskManager":{"resource":{"memory":"2048m","cpu":1}},` +
				`"job":{"jarURI":"local:///job.jar","parallelism":2,"upgradeMode":"savepoint"}}`, nil, true},
		// Before resource_metadata (SpecUtils' "migrating from old
		// format"): the spec itself plus apiVersion.
		{"legacy record without resource_metadata",
			`{"job":{"jarURI":"local:///job.jar","parallelism":2,"entryClass":null,"args":[],"state":"running",` +
				`"savepointTriggerNonce":null,"initialSavepointPath":null,"upgradeMode":"savepoint","allowNonRestoredState":null},` +
				`"restartNonce":null,"flinkConfiguration":{"taskmanager.numberOfTaskSlots":"2"},"image":"flink:1.20",` +
				`"imagePullPolicy":null,"serviceAccount":"flink","flinkVersion":"v1_20","ingress":null,"podTemplate":null,` +
				`"jobManager":null,"taskManager":null,"logConfiguration":null,"mode":null,"apiVersion":"flink.apache.org/v1beta1"}`,
			`{"image":"flink:1.20","flinkVersion":"v1_20","serviceAccount":"flink","flinkConfiguration":{"taskmanager.numberOfTaskSlots":"2"},` +
				`"job":{"jarURI":"local:///job.jar","parallelism":2,"upgradeMode":"savepoint"}}`, nil, true},
		// fabric8's Quantity.Serializer writes amount+format as a string,
		// so the manifest's cpu: 0.5 is recorded "0.5"; its pod model
		// drops empty lists and keeps the template's apiVersion and kind
		// (additionalProperties).
		{"podTemplate quantities as fabric8 writes them",
			`{"spec":{"job":null,"restartNonce":null,"flinkConfiguration":{},"image":"flink:1.20","imagePullPolicy":null,` +
				`"serviceAccount":"flink","flinkVersion":"v1_20","ingress":null,"podTemplate":{"metadata":{"labels":{"team":"a"}},` +
				`"spec":{"containers":[{"name":"flink-main-container","resources":{"limits":{"memory":"1Gi"},` +
				`"requests":{"cpu":"0.5","memory":"1Gi"}}}]},"apiVersion":"v1","kind":"Pod"},"jobManager":null,"taskManager":null,` +
				`"logConfiguration":null,"mode":null},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}`,
			`{"image":"flink:1.20","flinkVersion":"v1_20","serviceAccount":"flink","podTemplate":{"apiVersion":"v1","kind":"Pod",` +
				`"metadata":{"labels":{"team":"a"}},"spec":{"containers":[{"name":"flink-main-container",` +
				`"resources":{"requests":{"cpu":0.5,"memory":"1024Mi"},"limits":{"memory":"1073741824"}}}]}}}`, nil, true},

		// Form-only edits since upstream recorded upstreamCR.
		{"configuration nested instead of dotted, number instead of string", upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"taskmanager":{"numberOfTaskSlots":2},` +
				`"state":{"savepoints.dir":"file:///flink-data/savepoints","checkpoints":{"dir":"file:///flink-data/checkpoints"}}}`)}
		}, true},
		{"state, upgrade mode and replicas at their defaults, args empty", upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.State, s.Job.Args = v1beta1.JobStateRunning, []string{}
			s.JobManager.Replicas = ptr.To[int32](1)
		}, true},
		{`memory "1g" for "1024m" (Flink's MiB)`, upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) {
			s.JobManager.Resource.Memory = "1g"
		}, true},
		{`memory "1Gi" for "1024m"`, upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) {
			s.JobManager.Resource.Memory = "1Gi"
		}, true},
		{`memory in bytes for "1024m"`, upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) {
			s.TaskManager.Resource.Memory = "1073741824"
		}, true},
		{"empty lists and objects for absent ones", upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) {
			s.LogConfiguration = map[string]string{}
			s.TaskManager.PodTemplate = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}
		}, true},

		// Changes of meaning.
		{"another parallelism", upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) { s.Job.Parallelism = ptr.To[int32](3) }, false},
		{"suspended", upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateSuspended }, false},
		{"another upgrade mode", upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) { s.Job.UpgradeMode = v1beta1.UpgradeModeLastState }, false},
		{"allowNonRestoredState false is a setting", upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.AllowNonRestoredState = ptr.To(false)
		}, false},
		{"another configuration value", upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"taskmanager.numberOfTaskSlots":"4",` +
				`"state.savepoints.dir":"file:///flink-data/savepoints","state.checkpoints.dir":"file:///flink-data/checkpoints"}`)}
		}, false},
		{`"2.0" is not "2" to Flink`, upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"taskmanager.numberOfTaskSlots":2.0,` +
				`"state.savepoints.dir":"file:///flink-data/savepoints","state.checkpoints.dir":"file:///flink-data/checkpoints"}`)}
		}, false},
		{"two JobManagers", upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) { s.JobManager.Replicas = ptr.To[int32](2) }, false},
		{"another cpu", upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) { s.JobManager.Resource.CPU = ptr.To(1.0) }, false},
		// Flink reads "1000m" as 1000 MiB; Kubernetes would read "1G" and
		// "1000M" alike, Flink not.
		{`memory "1000m" is not "1024m"`, upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) {
			s.JobManager.Resource.Memory = "1000m"
		}, false},
		{"another image", upstream115, upstreamCR, func(s *v1beta1.FlinkDeploymentSpec) { s.Image = "flink:1.20.1" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := Decode[v1beta1.FlinkDeploymentSpec](tc.recorded)
			if err != nil {
				t.Fatal(err)
			}
			var cur v1beta1.FlinkDeploymentSpec
			if err := json.Unmarshal([]byte(tc.cr), &cur); err != nil {
				t.Fatal(err)
			}
			if tc.mod != nil {
				tc.mod(&cur)
			}
			if got := SameSpec(rec.Spec, cur); got != tc.want {
				a, _ := json.Marshal(canonical(rec.Spec))
				b, _ := json.Marshal(canonical(cur))
				t.Errorf("SameSpec = %v, want %v\nrecorded %s\ncurrent  %s", got, tc.want, a, b)
			}
		})
	}
}

// TestSameSpecReadsQuantitiesAsTheOperatorDoes pins the meaning of
// quantities: Kubernetes' value in a pod template and for ephemeral
// storage, but memory in jobManager/taskManager.resources as the cluster
// is sized from it, Flink's syntax first (cluster.ParseMemory).
func TestSameSpecReadsQuantitiesAsTheOperatorDoes(t *testing.T) {
	spec := func(jm string) v1beta1.FlinkDeploymentSpec {
		var s v1beta1.FlinkDeploymentSpec
		if err := json.Unmarshal([]byte(`{"jobManager":`+jm+`}`), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		a, b string
		want bool
	}{
		{"resources memory 2048m (Flink: 2 GiB) and 2Gi",
			`{"resources":{"requests":{"memory":"2048m"}}}`, `{"resources":{"requests":{"memory":"2Gi"}}}`, true},
		{"resources memory 1000Ki (1024000 bytes) and 1024k (Flink: 1048576 bytes), one value to Kubernetes",
			`{"resources":{"requests":{"memory":"1000Ki"}}}`, `{"resources":{"requests":{"memory":"1024k"}}}`, false},
		{"resources cpu 0.5 and 500m",
			`{"resources":{"limits":{"cpu":0.5}}}`, `{"resources":{"limits":{"cpu":"500m"}}}`, true},
		{"ephemeral storage 1Gi and 1073741824",
			`{"resource":{"ephemeralStorage":"1Gi"}}`, `{"resource":{"ephemeralStorage":"1073741824"}}`, true},
		{"ephemeral storage 1G and 1Gi",
			`{"resource":{"ephemeralStorage":"1G"}}`, `{"resource":{"ephemeralStorage":"1Gi"}}`, false},
		{"pod template memory 1Gi and 1073741824",
			`{"podTemplate":{"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":"1Gi"}}}]}}}`,
			`{"podTemplate":{"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":"1073741824"}}}]}}}`, true},
		{"pod template memory 1G and 1Gi",
			`{"podTemplate":{"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":"1G"}}}]}}}`,
			`{"podTemplate":{"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":"1Gi"}}}]}}}`, false},
		{"an emptyDir volume and a volume without source (which Kubernetes makes an emptyDir)",
			`{"podTemplate":{"spec":{"volumes":[{"name":"v","emptyDir":{}}]}}}`, `{"podTemplate":{"spec":{"volumes":[{"name":"v"}]}}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := spec(tc.a), spec(tc.b)
			if got := SameSpec(a, b); got != tc.want {
				t.Errorf("SameSpec = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSameSpecOfUpstreamSessionJob: a FlinkSessionJob's record, as
// upstream 1.15 writes it (AbstractFlinkSpec's fields, then
// deploymentName).
func TestSameSpecOfUpstreamSessionJob(t *testing.T) {
	recorded := `{"spec":{"job":{"jarURI":"https://repo/job.jar","parallelism":4,"entryClass":null,"args":[],` +
		`"state":"running","savepointTriggerNonce":null,"initialSavepointPath":null,"checkpointTriggerNonce":null,` +
		`"upgradeMode":"stateless","allowNonRestoredState":null,"savepointRedeployNonce":null,"autoscalerResetNonce":null},` +
		`"restartNonce":null,"flinkConfiguration":{},"deploymentName":"basic-session-deployment-example"},` +
		`"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":false}}`
	cr := `{"deploymentName":"basic-session-deployment-example","job":{"jarURI":"https://repo/job.jar","parallelism":4,"upgradeMode":"stateless"}}`
	rec, err := Decode[v1beta1.FlinkSessionJobSpec](recorded)
	if err != nil {
		t.Fatal(err)
	}
	var cur v1beta1.FlinkSessionJobSpec
	if err := json.Unmarshal([]byte(cr), &cur); err != nil {
		t.Fatal(err)
	}
	if !SameSpec(rec.Spec, cur) {
		t.Errorf("upstream's record of an unchanged session job differs")
	}
	cur.Job.Parallelism = ptr.To[int32](2)
	if SameSpec(rec.Spec, cur) {
		t.Errorf("another parallelism is no change")
	}
}

// TestSameSpecDoesNotChangeItsArguments: the comparison works on copies.
func TestSameSpecDoesNotChangeItsArguments(t *testing.T) {
	var s v1beta1.FlinkDeploymentSpec
	if err := json.Unmarshal([]byte(upstreamCR), &s); err != nil {
		t.Fatal(err)
	}
	s.Job.State = v1beta1.JobStateRunning
	before, _ := json.Marshal(s)
	SameSpec(s, s)
	if after, _ := json.Marshal(s); string(after) != string(before) {
		t.Errorf("SameSpec changed its argument:\n%s\n%s", before, after)
	}
}

// TestSameSpecKeepsWhatAnEmptyObjectMeans: an empty object is no object,
// except where it means something: a job with nothing but defaults (its
// jar in the image) is an application, not a session cluster; an empty
// ingress or snapshot reference is an error, not nothing.
func TestSameSpecKeepsWhatAnEmptyObjectMeans(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		want bool
	}{
		{"an application with only defaults and a session cluster",
			`{"image":"flink:1.20","job":{"state":"running","upgradeMode":"stateless","args":[],"parallelism":0}}`, `{"image":"flink:1.20"}`, false},
		{"an application with only defaults, recorded with them or not",
			`{"image":"flink:1.20","job":{"state":"running","upgradeMode":"stateless","args":[],"parallelism":0}}`, `{"image":"flink:1.20","job":{}}`, true},
		{"an empty ingress and none", `{"ingress":{}}`, `{}`, false},
		{"an ingress with empty annotations and one without", `{"ingress":{"template":"x","annotations":{}}}`, `{"ingress":{"template":"x"}}`, true},
		{"an empty snapshot reference and none", `{"job":{"jarURI":"local:///j.jar","initialStateSnapshotRef":{}}}`, `{"job":{"jarURI":"local:///j.jar"}}`, false},
		{"empty jobManager and taskManager and none", `{"jobManager":{"replicas":1,"resource":{}},"taskManager":{"podTemplate":{}}}`, `{}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a, b v1beta1.FlinkDeploymentSpec
			if err := json.Unmarshal([]byte(tc.a), &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.b), &b); err != nil {
				t.Fatal(err)
			}
			if got := SameSpec(a, b); got != tc.want {
				t.Errorf("SameSpec = %v, want %v", got, tc.want)
			}
		})
	}
}
