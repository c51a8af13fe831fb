package bluegreen

import (
	"maps"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// color is a child's side: BLUE or GREEN (upstream's BlueGreenDeploymentType).
type color string

const (
	blue  color = v1beta1.BlueGreenDeploymentTypeBlue
	green color = v1beta1.BlueGreenDeploymentTypeGreen
)

func (c color) other() color {
	if c == blue {
		return green
	}
	return blue
}

func (c color) lower() string { return strings.ToLower(string(c)) }

// childName is upstream's child name: <name>-blue or <name>-green.
func childName(bg string, c color) string { return bg + "-" + c.lower() }

func active(c color) v1beta1.FlinkBlueGreenDeploymentState {
	if c == blue {
		return v1beta1.BlueGreenActiveBlue
	}
	return v1beta1.BlueGreenActiveGreen
}

func savepointing(c color) v1beta1.FlinkBlueGreenDeploymentState {
	if c == blue {
		return v1beta1.BlueGreenSavepointingBlue
	}
	return v1beta1.BlueGreenSavepointingGreen
}

func transitioningTo(c color) v1beta1.FlinkBlueGreenDeploymentState {
	if c == blue {
		return v1beta1.BlueGreenTransitioningToBlue
	}
	return v1beta1.BlueGreenTransitioningToGreen
}

// ownerRef is the reference children, the snapshot's job and the Ingress
// carry to their blue/green deployment.
func ownerRef(bg *v1beta1.FlinkBlueGreenDeployment) metav1.OwnerReference {
	return *metav1.NewControllerRef(bg, v1beta1.SchemeGroupVersion.WithKind("FlinkBlueGreenDeployment"))
}

// ownedBy: o has an owner reference to bg (by UID). Upstream's children
// carry one with controller: false; ours with controller: true.
func ownedBy(o metav1.Object, bg *v1beta1.FlinkBlueGreenDeployment) bool {
	for _, r := range o.GetOwnerReferences() {
		if r.UID == bg.UID {
			return true
		}
	}
	return false
}

// desiredChild is the child FlinkDeployment of side c for bg's current
// template, starting from restore ("" : the template's own
// initialSavepointPath, if any). As upstream, a template ingress gets the
// side as a prefix so the two children's paths never collide.
func desiredChild(bg *v1beta1.FlinkBlueGreenDeployment, c color, restore string) *v1beta1.FlinkDeployment {
	spec := bg.Spec.Template.Spec.DeepCopy()
	if restore != "" && spec.Job != nil {
		spec.Job.InitialSavepointPath = restore
		spec.Job.InitialStateSnapshotRef = nil
	}
	if spec.Ingress != nil {
		spec.Ingress.Template = c.lower() + "-" + spec.Ingress.Template
	}
	labels := maps.Clone(bg.Spec.Template.ObjectMeta.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1beta1.BlueGreenDeploymentTypeLabel] = string(c)
	return &v1beta1.FlinkDeployment{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "FlinkDeployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            childName(bg.Name, c),
			Namespace:       bg.Namespace,
			Labels:          labels,
			Annotations:     maps.Clone(bg.Spec.Template.ObjectMeta.Annotations),
			OwnerReferences: []metav1.OwnerReference{ownerRef(bg)},
		},
		Spec: *spec,
	}
}

// restorePathOf is the path a child was started from: what a patch keeps
// (upstream's carry-over), so that patching a running child never changes
// its restore point.
func restorePathOf(d *v1beta1.FlinkDeployment) string {
	if d == nil || d.Spec.Job == nil {
		return ""
	}
	return d.Spec.Job.InitialSavepointPath
}

// ready is upstream's isFlinkDeploymentReady: the job RUNNING and the
// resource STABLE, for the spec the child now has.
func ready(d *v1beta1.FlinkDeployment) bool {
	return d != nil && d.DeletionTimestamp == nil &&
		d.Status.JobStatus.State == v1beta1.JobStatusRunning &&
		d.Status.LifecycleState == v1beta1.LifecycleStable &&
		d.Status.ObservedGeneration == d.Generation
}

// suspended: the child's spec asks for a suspended job.
func suspended(d *v1beta1.FlinkDeployment) bool {
	return d != nil && d.Spec.Job != nil && d.Spec.Job.State == v1beta1.JobStateSuspended
}

// savepointLocation is a snapshot path as upstream gives it to the new
// child: without the "file:" scheme.
func savepointLocation(path string) string { return strings.Replace(path, "file:", "", 1) }

// notReadyReason says why a child is not ready, for the abort message.
func notReadyReason(d *v1beta1.FlinkDeployment) string {
	if d == nil {
		return "it does not exist"
	}
	why := "job " + stateOr(string(d.Status.JobStatus.State), "not started") + ", lifecycle " + stateOr(string(d.Status.LifecycleState), "new")
	if d.Status.Error != "" {
		why += ", error: " + d.Status.Error
	}
	return why
}

func stateOr(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}
