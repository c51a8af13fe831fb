package validation

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
)

// The children of a FlinkBlueGreenDeployment are FlinkDeployments named
// after it with these suffixes.
const (
	BlueChildSuffix  = "-blue"
	GreenChildSuffix = "-green"
)

// MaxBlueGreenNameLength is the longest FlinkBlueGreenDeployment name whose
// children (<name>-green the longer) are valid FlinkDeployment names (at
// most 45 characters, DeploymentName).
const MaxBlueGreenNameLength = 45 - len(GreenChildSuffix)

// BlueGreenResult is what BlueGreenDeployment learned on the way.
type BlueGreenResult struct {
	// Template is the result of the template's check as a FlinkDeployment
	// (its effective configuration, Flink version, and the warnings of
	// spec.template.spec.flinkConfiguration).
	Template *Result
	// Config is the blue/green configuration: the operator's configuration
	// with the kubernetes.operator.bluegreen.* keys of spec.configuration
	// on top; read it with config.BlueGreenAbortGracePeriod and the other
	// blue/green getters.
	Config config.Config
	// Warnings are about keys of spec.configuration (ignored, or a
	// blue/green key that looks mistyped).
	Warnings []config.Warning
}

// BlueGreenDeploymentName checks a FlinkBlueGreenDeployment's name: a
// FlinkDeployment name short enough that <name>-blue and <name>-green are
// FlinkDeployment names too [ours: upstream finds out when it creates the
// children].
func BlueGreenDeploymentName(name string) error {
	if !deploymentNamePattern.MatchString(name) || len(name) > MaxBlueGreenNameLength {
		return fmt.Errorf("The FlinkBlueGreenDeployment name: %s is invalid, must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123'), and the length must be no more than %d characters, so that its FlinkDeployments %s and %s are valid FlinkDeployment names (at most 45 characters).",
			name, MaxBlueGreenNameLength, name+BlueChildSuffix, name+GreenChildSuffix)
	}
	return nil
}

// BlueGreenChild is the FlinkDeployment a FlinkBlueGreenDeployment's
// template describes, named <name><suffix> in its namespace, with the
// template's labels and annotations; what the checks judge (no owner
// reference, no blue/green type label: the controller adds those).
func BlueGreenChild(bg *v1beta1.FlinkBlueGreenDeployment, suffix string) *v1beta1.FlinkDeployment {
	child := &v1beta1.FlinkDeployment{}
	child.Name = bg.Name + suffix
	child.Namespace = bg.Namespace
	child.Labels = maps.Clone(bg.Spec.Template.ObjectMeta.Labels)
	child.Annotations = maps.Clone(bg.Spec.Template.ObjectMeta.Annotations)
	bg.Spec.Template.Spec.DeepCopyInto(&child.Spec)
	return child
}

// BlueGreenConfig is the blue/green configuration of a
// FlinkBlueGreenDeployment: operator with the kubernetes.operator.bluegreen.*
// keys of spec.configuration on top. Other keys there are not read (the
// job's configuration is spec.template.spec.flinkConfiguration); they are
// reported as warnings, as are blue/green keys that are not registered. A
// value that does not parse (a duration such as "10 min", "15s", "0ms") is
// an error naming the key.
func BlueGreenConfig(operator config.Config, bg *v1beta1.FlinkBlueGreenDeployment) (config.Config, []config.Warning, error) {
	blueGreen := map[string]string{}
	var ignored []config.Warning
	for _, k := range slices.Sorted(maps.Keys(bg.Spec.Configuration)) {
		if strings.HasPrefix(strings.TrimSpace(k), config.BlueGreenPrefix) {
			blueGreen[k] = bg.Spec.Configuration[k]
			continue
		}
		ignored = append(ignored, config.Warning{Key: k,
			Message: "ignored: spec.configuration holds only the " + config.BlueGreenPrefix + "* options; the job's configuration is spec.template.spec.flinkConfiguration"})
	}
	cfg, warnings, err := config.Effective(operator, blueGreen)
	warnings = append(warnings, ignored...)
	if err != nil {
		return nil, warnings, fmt.Errorf("spec.configuration: %w", err)
	}
	return cfg, warnings, nil
}

// BlueGreenDeployment checks a FlinkBlueGreenDeployment, first error wins:
// its name (BlueGreenDeploymentName), spec.configuration (BlueGreenConfig),
// spec.ingress, the template's metadata, that the template runs an
// application job, and the template's spec as the FlinkDeployment
// <name>-blue would be checked (DeploymentSpec, with no spec reconciled
// before: each child is a new FlinkDeployment). What pkg/cluster refuses to
// build is checked by building BlueGreenChild, which callers do next, as
// for a FlinkDeployment.
func BlueGreenDeployment(bg *v1beta1.FlinkBlueGreenDeployment, operator config.Config) (*BlueGreenResult, error) {
	if err := BlueGreenDeploymentName(bg.Name); err != nil {
		return nil, err
	}
	cfg, warnings, err := BlueGreenConfig(operator, bg)
	if err != nil {
		return nil, err
	}
	res := &BlueGreenResult{Config: cfg, Warnings: warnings}
	if in := bg.Spec.Ingress; in != nil {
		if _, _, err := cluster.IngressURL(in.Template, "name", "namespace"); err != nil {
			return nil, fmt.Errorf("spec.ingress: %w", err)
		}
	}
	meta := field.NewPath("spec", "template", "metadata")
	errs := metav1validation.ValidateLabels(bg.Spec.Template.ObjectMeta.Labels, meta.Child("labels"))
	if _, reserved := bg.Spec.Template.ObjectMeta.Labels[v1beta1.BlueGreenDeploymentTypeLabel]; reserved {
		errs = append(errs, field.Forbidden(meta.Child("labels").Key(v1beta1.BlueGreenDeploymentTypeLabel), "the operator sets it on each child (BLUE or GREEN)"))
	}
	if err := errs.ToAggregate(); err != nil {
		return nil, err
	}
	spec := &bg.Spec.Template.Spec
	if spec.Job == nil {
		return nil, errors.New("spec.template.spec.job is required: a FlinkBlueGreenDeployment runs an application job (blue/green deployments upgrade a job, not a session cluster)")
	}
	if ref, cross := CrossNamespaceSnapshotRef(bg.Namespace, spec.Job); cross {
		// [ours] The children are created by the operator: a reference
		// to another namespace could not be reviewed against the rights
		// of whoever wrote the template.
		return nil, fmt.Errorf("spec.template.spec.job.initialStateSnapshotRef: FlinkStateSnapshot %s/%s is in another namespace; a FlinkBlueGreenDeployment may only start from a snapshot in its own namespace %s", ref.Namespace, ref.Name, bg.Namespace)
	}
	child := bg.Name + BlueChildSuffix
	if res.Template, err = DeploymentSpec(spec, nil, operator); err != nil {
		return nil, fmt.Errorf("spec.template.spec (the spec of FlinkDeployment %s): %w", child, err)
	}
	return res, nil
}
