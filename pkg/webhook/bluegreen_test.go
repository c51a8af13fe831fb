package webhook

import (
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// blueGreen is a valid FlinkBlueGreenDeployment whose template is
// application(ns, name)'s spec.
func blueGreen(ns, name string, mutate ...func(*v1beta1.FlinkBlueGreenDeployment)) *v1beta1.FlinkBlueGreenDeployment {
	bg := &v1beta1.FlinkBlueGreenDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkBlueGreenDeployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1beta1.FlinkBlueGreenDeploymentSpec{
			Template: v1beta1.FlinkDeploymentTemplateSpec{Spec: application(ns, name).Spec},
		},
	}
	for _, m := range mutate {
		m(bg)
	}
	return bg
}

func TestBlueGreenCreate(t *testing.T) {
	v := newValidator(newLookup(), nil)
	for _, tc := range []struct {
		name string
		bg   *v1beta1.FlinkBlueGreenDeployment
		exp  expect
	}{
		{"valid", blueGreen("ns", "basic"), allowed},
		{"no job", blueGreen("ns", "basic", func(bg *v1beta1.FlinkBlueGreenDeployment) { bg.Spec.Template.Spec.Job = nil }),
			deniedMentioning("spec.template.spec.job is required")},
		{"name too long for its -green child", blueGreen("ns", strings.Repeat("a", 40)),
			deniedMentioning("the length must be no more than 39 characters")},
		{"template refused as a FlinkDeployment would be", blueGreen("ns", "basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Template.Spec.FlinkVersion = ""
		}), denied("spec.template.spec (the spec of FlinkDeployment basic-blue): spec.flinkVersion is required")},
		{"duration that does not parse", blueGreen("ns", "basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Configuration = map[string]string{config.KeyBlueGreenAbortGracePeriod: "10 mins please"}
		}), deniedMentioning(config.KeyBlueGreenAbortGracePeriod)},
		{"template the cluster builder refuses (memory)", blueGreen("ns", "basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
			bg.Spec.Template.Spec.TaskManager.Resource.Memory = "1 gallon"
		}), deniedMentioning("spec.template.spec (the spec of FlinkDeployment basic-blue): ")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.exp.check(t, admit(t, v, request(admissionv1.Create, tc.bg, nil)))
		})
	}
}

// Warnings name the field they are about: spec.configuration for the
// blue/green options, the template's flinkConfiguration for the job's.
func TestBlueGreenWarnings(t *testing.T) {
	v := newValidator(newLookup(), nil)
	bg := blueGreen("ns", "basic", func(bg *v1beta1.FlinkBlueGreenDeployment) {
		bg.Spec.Configuration = map[string]string{config.KeyBlueGreenRescheduleInterval: "15s", "parallelism.default": "2"}
		bg.Spec.Template.Spec.FlinkConfiguration = conf(config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir, "kubernetes.operator.no.such.key", "1")
	})
	resp := admit(t, v, request(admissionv1.Create, bg, nil))
	if !resp.Allowed {
		t.Fatalf("denied: %s", resp.Result.Message)
	}
	for _, prefix := range []string{"spec.configuration: parallelism.default: ignored", "spec.template.spec.flinkConfiguration: kubernetes.operator.no.such.key: unknown operator key"} {
		if !slices.ContainsFunc(resp.Warnings, func(w string) bool { return strings.HasPrefix(w, prefix) }) {
			t.Errorf("warnings %q: none starts with %q", resp.Warnings, prefix)
		}
	}
	if len(resp.Warnings) != 2 {
		t.Errorf("warnings %q, want 2", resp.Warnings)
	}
}

// An update that leaves the spec alone (the operator's finalizer, labels)
// or of an object being deleted is admitted unchecked, as for the other
// kinds; a spec change is checked.
func TestBlueGreenUpdate(t *testing.T) {
	v := newValidator(newLookup(), nil)
	invalid := blueGreen("ns", "basic", func(bg *v1beta1.FlinkBlueGreenDeployment) { bg.Spec.Template.Spec.Job = nil })
	relabelled := invalid.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	allowed.check(t, admit(t, v, request(admissionv1.Update, relabelled, invalid)))

	deleting := blueGreen("ns", "basic", func(bg *v1beta1.FlinkBlueGreenDeployment) { bg.Spec.Template.Spec.Image = "" })
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	allowed.check(t, admit(t, v, request(admissionv1.Update, deleting, invalid)))

	valid := blueGreen("ns", "basic")
	deniedMentioning("spec.template.spec.job is required").check(t, admit(t, v, request(admissionv1.Update, invalid, valid)))
	changed := valid.DeepCopy()
	changed.Spec.Template.Spec.Image = "flink:1.20.1"
	allowed.check(t, admit(t, v, request(admissionv1.Update, changed, valid)))

	// The status subresource is not validated.
	status := request(admissionv1.Update, invalid, invalid)
	status.SubResource = "status"
	allowed.check(t, admit(t, v, status))
}
