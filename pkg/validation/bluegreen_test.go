package validation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// blueGreen is a valid FlinkBlueGreenDeployment in namespace "ns" whose
// template is application(name)'s spec.
func blueGreen(name string, mutate ...func(*v1beta1.FlinkBlueGreenDeployment)) *v1beta1.FlinkBlueGreenDeployment {
	bg := &v1beta1.FlinkBlueGreenDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: v1beta1.FlinkBlueGreenDeploymentSpec{
			Template: v1beta1.FlinkDeploymentTemplateSpec{Spec: application(name).Spec},
		},
	}
	for _, m := range mutate {
		m(bg)
	}
	return bg
}

func bgConf(kv ...string) func(*v1beta1.FlinkBlueGreenDeployment) {
	return func(bg *v1beta1.FlinkBlueGreenDeployment) {
		bg.Spec.Configuration = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			bg.Spec.Configuration[kv[i]] = kv[i+1]
		}
	}
}

func TestBlueGreenDeployment(t *testing.T) {
	name39 := "a" + strings.Repeat("b", 37) + "c"
	for _, tc := range []struct {
		name  string
		bg    *v1beta1.FlinkBlueGreenDeployment
		wants []string // fragments of the error; none: valid
	}{
		{"valid", blueGreen("basic"), nil},
		{"name of 39 characters: basic-green has 45", blueGreen(name39), nil},
		{"name of 40 characters: its -green child would have 46", blueGreen(name39 + "d"),
			[]string{"FlinkBlueGreenDeployment name: " + name39 + "d is invalid", "no more than 39 characters", name39 + "d-green"}},
		{"name with upper case", blueGreen("Basic"), []string{"FlinkBlueGreenDeployment name: Basic is invalid"}},
		{"name starting with a digit", blueGreen("1basic"), []string{"is invalid"}},
		{"no job: a session cluster", blueGreen("basic", func(bg *v1beta1.FlinkBlueGreenDeployment) { bg.Spec.Template.Spec.Job = nil }),
			[]string{"spec.template.spec.job is required", "application job"}},
		{"template without image, as a FlinkDeployment", blueGreen("basic", func(bg *v1beta1.FlinkBlueGreenDeployment) { bg.Spec.Template.Spec.Image = "" }),
			[]string{"spec.template.spec (the spec of FlinkDeployment basic-blue): spec.image is required"}},
		{"template with a parallelism below 1 (upstream's message)", blueGreen("basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Template.Spec.Job.Parallelism = ptr(int32(-1))
		}), []string{"Job parallelism must be larger than 0"}},
		{"template with a flinkConfiguration value that does not parse", blueGreen("basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Template.Spec.FlinkConfiguration = conf(config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir, config.KeySnapshotTimeout, "soon")
		}), []string{"spec.template.spec", "spec.flinkConfiguration", config.KeySnapshotTimeout, "soon"}},
		{"durations in Flink's syntax", blueGreen("basic", bgConf(config.KeyBlueGreenAbortGracePeriod, "10 min",
			config.KeyBlueGreenRescheduleInterval, "15s", config.KeyBlueGreenDeploymentDeletionDelay, "0ms")), nil},
		{"durations: a bare number is milliseconds, ISO-8601 too", blueGreen("basic", bgConf(config.KeyBlueGreenAbortGracePeriod, "600000",
			config.KeyBlueGreenDeploymentDeletionDelay, "PT1S")), nil},
		{"abort grace period that does not parse", blueGreen("basic", bgConf(config.KeyBlueGreenAbortGracePeriod, "ten minutes")),
			[]string{"spec.configuration", config.KeyBlueGreenAbortGracePeriod, "ten minutes"}},
		{"reschedule interval with an unknown unit", blueGreen("basic", bgConf(config.KeyBlueGreenRescheduleInterval, "15 fortnights")),
			[]string{"spec.configuration", config.KeyBlueGreenRescheduleInterval, "unknown unit"}},
		{"negative deletion delay", blueGreen("basic", bgConf(config.KeyBlueGreenDeploymentDeletionDelay, "-1 s")),
			[]string{"spec.configuration", config.KeyBlueGreenDeploymentDeletionDelay}},
		{"ingress without a template (upstream's message)", blueGreen("basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Ingress = &v1beta1.IngressSpec{ClassName: "nginx"}
		}), []string{"spec.ingress: Ingress template must be defined"}},
		{"ingress of upstream's e2e data", blueGreen("basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Ingress = &v1beta1.IngressSpec{Template: "/{{namespace}}/{{name}}(/|$)(.*)", ClassName: "nginx"}
		}), nil},
		{"template label that is not a label", blueGreen("basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "a b"}
		}), []string{"spec.template.metadata.labels", "a b"}},
		{"template sets the blue/green type label", blueGreen("basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Template.ObjectMeta.Labels = map[string]string{v1beta1.BlueGreenDeploymentTypeLabel: "BLUE"}
		}), []string{"spec.template.metadata.labels[flink/blue-green-deployment-type]", "the operator sets it"}},
		{"snapshot in its own namespace", blueGreen("basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Template.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "sp", Namespace: "ns"}
		}), nil},
		{"snapshot in another namespace", blueGreen("basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Template.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "sp", Namespace: "other"}
		}), []string{"spec.template.spec.job.initialStateSnapshotRef", "other/sp", "own namespace ns"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := BlueGreenDeployment(tc.bg, config.Defaults())
			checkErrContains(t, err, tc.wants...)
			if err == nil && (res == nil || res.Template == nil || res.Config == nil) {
				t.Errorf("result %+v: want the template's result and the blue/green configuration", res)
			}
		})
	}
}

// The blue/green configuration: upstream's defaults, spec.configuration on
// top, other keys ignored with a warning, a mistyped blue/green key warned
// about with the likely one.
func TestBlueGreenConfig(t *testing.T) {
	res, err := BlueGreenDeployment(blueGreen("basic"), config.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	for get, want := range map[*func(config.Config) (time.Duration, error)]time.Duration{
		ptr(config.BlueGreenAbortGracePeriod):        10 * time.Minute,
		ptr(config.BlueGreenRescheduleInterval):      15 * time.Second,
		ptr(config.BlueGreenDeploymentDeletionDelay): 0,
	} {
		if d, err := (*get)(res.Config); err != nil || d != want {
			t.Errorf("default = %v, %v; want %v", d, err, want)
		}
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %v", res.Warnings)
	}

	bg := blueGreen("basic", bgConf(
		config.KeyBlueGreenAbortGracePeriod, "1s",
		config.KeyBlueGreenDeploymentDeletionDelay, "2 min",
		"kubernetes.operator.bluegreen.abort.grace-periods", "1 min",
		"taskmanager.numberOfTaskSlots", "2",
	))
	res, err = BlueGreenDeployment(bg, config.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := config.BlueGreenAbortGracePeriod(res.Config); d != time.Second {
		t.Errorf("abort grace period %v, want 1s", d)
	}
	if d, _ := config.BlueGreenDeploymentDeletionDelay(res.Config); d != 2*time.Minute {
		t.Errorf("deletion delay %v, want 2m", d)
	}
	if _, ok := res.Config["taskmanager.numberOfTaskSlots"]; ok {
		t.Error("a key outside kubernetes.operator.bluegreen.* reached the blue/green configuration")
	}
	var got []string
	for _, w := range res.Warnings {
		got = append(got, w.String())
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{
		"kubernetes.operator.bluegreen.abort.grace-periods: unknown operator key, it has no effect; did you mean " + config.KeyBlueGreenAbortGracePeriod + "?",
		"taskmanager.numberOfTaskSlots: ignored: spec.configuration holds only the kubernetes.operator.bluegreen.* options; the job's configuration is spec.template.spec.flinkConfiguration",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings\n%s\nlack %q", joined, want)
		}
	}
	if len(got) != 2 {
		t.Errorf("%d warnings, want 2:\n%s", len(got), joined)
	}
}

func TestBlueGreenChild(t *testing.T) {
	bg := blueGreen("basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
		bg.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "a"}
		bg.Spec.Template.ObjectMeta.Annotations = map[string]string{"note": "x"}
	})
	child := BlueGreenChild(bg, GreenChildSuffix)
	if child.Name != "basic-green" || child.Namespace != "ns" || child.Labels["team"] != "a" || child.Annotations["note"] != "x" {
		t.Errorf("child %s/%s labels %v annotations %v", child.Namespace, child.Name, child.Labels, child.Annotations)
	}
	if err := DeploymentName(child.Name); err != nil {
		t.Error(err)
	}
	// A copy: changing the child leaves the template alone.
	child.Spec.Job.JarURI = "changed"
	child.Labels["team"] = "b"
	if bg.Spec.Template.Spec.Job.JarURI == "changed" || bg.Spec.Template.ObjectMeta.Labels["team"] != "a" {
		t.Error("BlueGreenChild shares the template's job or labels")
	}
}
