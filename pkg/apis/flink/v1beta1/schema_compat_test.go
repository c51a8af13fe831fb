package v1beta1_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	"github.com/flinkops/flink-operator/pkg/crdtest"
)

// crdPair names an upstream CRD and ours.
type crdPair struct {
	upstream, ours string
}

var crdPairs = []crdPair{
	{"flinkdeployments.flink.apache.org-v1.yml", "flink.apache.org_flinkdeployments.yaml"},
	{"flinksessionjobs.flink.apache.org-v1.yml", "flink.apache.org_flinksessionjobs.yaml"},
	{"flinkstatesnapshots.flink.apache.org-v1.yml", "flink.apache.org_flinkstatesnapshots.yaml"},
	{"flinkbluegreendeployments.flink.apache.org-v1.yml", "flink.apache.org_flinkbluegreendeployments.yaml"},
}

// allowedMissing lists upstream field paths ours lacks on purpose, by prefix.
var allowedMissing = map[string]string{
	"podTemplate.status.nodeAllocatableResourceClaimStatuses[].resources": "alpha Pod status field whose shape differs between upstream's fabric8 model " +
		"(resources map) and k8s.io/api v0.37.2 (mapping/overhead lists); pod templates never carry status",
}

// allowedExtra lists field paths only ours has, by prefix (or podTemplate
// infix), each with its reason.
var allowedExtra = map[string]string{
	".apiVersion":                       "standard top-level field every CRD schema has; upstream's generator omits it",
	".kind":                             "standard top-level field every CRD schema has; upstream's generator omits it",
	".metadata":                         "standard top-level field every CRD schema has; upstream's generator omits it",
	".spec.jobReference.namespace":      "[ours] cross-namespace job references (docs/snapshots.md, \"Snapshots of jobs in other namespaces\")",
	".spec.job.initialStateSnapshotRef": "[ours] restore from a FlinkStateSnapshot by reference (docs/snapshots.md, \"Start a job from a snapshot\"; issue 11)",
	"podTemplate.":                      "Pod schema from k8s.io/api v0.37.2, which has fields newer than upstream's fabric8 model",
	".spec.template.spec.job.initialStateSnapshotRef": "[ours] the template is a FlinkDeploymentSpec: restore from a FlinkStateSnapshot by reference (issue 11)",
	".spec.template.spec.jobManager.resources": "the template is a FlinkDeploymentSpec: upstream's FlinkDeployment CRD 1.15.0 has jobManager.resources, " +
		"its FlinkBlueGreenDeployment CRD (generated from an older model) lacks it",
	".spec.template.spec.taskManager.resources": "as .spec.template.spec.jobManager.resources",
	".status.transitionSnapshot":                "[ours] the transition savepoint as a FlinkStateSnapshot (docs/bluegreen.md)",
	".status.taskManagerReplicas": "[ours] the scale subresource's statusReplicasPath, which the API server requires " +
		"(the reference CRD's scale has none and is refused; upstream's released CRD has no scale subresource at all)",
}

// allowedScaleStatusPath lists kinds whose scale subresource has a status
// path upstream's lacks.
var allowedScaleStatusPath = map[string]string{
	"FlinkBlueGreenDeployment": "see allowedExtra .status.taskManagerReplicas",
}

// allowedEnums lists paths whose enum differs from upstream on purpose.
var allowedEnums = map[string]string{
	".status.conditions[].status": "status conditions are metav1.Condition, written only by the operator, " +
		"which only ever writes True/False/Unknown",
}

// allowedValidations lists CEL rules only ours has: "<kind> <path> <rule>".
var allowedValidations = map[string]string{
	"FlinkStateSnapshot .spec self == oldSelf":                             "[ours] spec is immutable after creation (docs/compatibility.md, \"Schema\")",
	"FlinkStateSnapshot .spec has(self.savepoint) != has(self.checkpoint)": "exactly one of savepoint/checkpoint, in the schema instead of only the webhook (docs/compatibility.md, \"Schema\")",
}

// allowedColumns lists printer columns only ours has: "<kind> <name>".
var allowedColumns = map[string]string{
	"FlinkDeployment Age":                       "[ours] age at a glance (docs/compatibility.md, \"Schema\")",
	"FlinkSessionJob Age":                       "[ours] age at a glance (docs/compatibility.md, \"Schema\")",
	"FlinkStateSnapshot Type":                   "[ours] see docs/compatibility.md, \"Schema\"",
	"FlinkStateSnapshot Job":                    "[ours] see docs/compatibility.md, \"Schema\"",
	"FlinkStateSnapshot Trigger":                "[ours] see docs/compatibility.md, \"Schema\"",
	"FlinkStateSnapshot State":                  "[ours] upstream's 'Snapshot State', renamed (docs/compatibility.md, \"Schema\")",
	"FlinkStateSnapshot Age":                    "[ours] see docs/compatibility.md, \"Schema\"",
	"FlinkBlueGreenDeployment Blue/Green State": "[ours] the state machine's state at a glance (docs/compatibility.md, \"Schema\")",
	"FlinkBlueGreenDeployment Age":              "[ours] age at a glance (docs/compatibility.md, \"Schema\")",
}

// renamedColumns maps upstream column names to ours where only the name changed.
var renamedColumns = map[string]string{
	"FlinkStateSnapshot Snapshot State": "State",
}

func loadPair(t *testing.T, p crdPair) (upstream, ours *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	root, err := crdtest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	upstream, err = crdtest.LoadUpstreamCRD(p.upstream)
	if err != nil {
		t.Fatal(err)
	}
	ours, err = crdtest.LoadCRD(filepath.Join(root, "manifests", "crds", p.ours))
	if err != nil {
		t.Fatal(err)
	}
	return upstream, ours
}

// schemaNode is one field path of a schema and what matters about it.
type schemaNode struct {
	typ      string // "int-or-string", "" for schemaless
	enum     []string
	preserve bool
	rules    []string
}

func flatten(s *apiextensionsv1.JSONSchemaProps, path string, out map[string]schemaNode) {
	n := schemaNode{typ: s.Type}
	if s.XIntOrString {
		n.typ = "int-or-string"
	}
	for _, e := range s.Enum {
		n.enum = append(n.enum, strings.Trim(string(e.Raw), `"`))
	}
	sort.Strings(n.enum)
	n.preserve = s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
	for _, v := range s.XValidations {
		n.rules = append(n.rules, v.Rule)
	}
	out[path] = n
	for name, child := range s.Properties {
		flatten(&child, path+"."+name, out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		flatten(s.Items.Schema, path+"[]", out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		flatten(s.AdditionalProperties.Schema, path+"{}", out)
	}
}

func allowed(path string, list map[string]string) bool {
	for prefix := range list {
		if strings.HasPrefix(path, prefix) {
			return true
		}
		if strings.HasPrefix(prefix, "podTemplate") && strings.Contains(path, prefix) {
			return true
		}
	}
	return false
}

// TestSchemaCoversUpstream fails on any upstream field path ours lacks, types
// differently, enumerates differently or prunes where upstream preserves.
func TestSchemaCoversUpstream(t *testing.T) {
	for _, p := range crdPairs {
		t.Run(p.ours, func(t *testing.T) {
			upstreamCRD, oursCRD := loadPair(t, p)
			up, ours := map[string]schemaNode{}, map[string]schemaNode{}
			flatten(upstreamCRD.Spec.Versions[0].Schema.OpenAPIV3Schema, "", up)
			flatten(oursCRD.Spec.Versions[0].Schema.OpenAPIV3Schema, "", ours)
			kind := oursCRD.Spec.Names.Kind

			for _, path := range sortedKeys(up) {
				u := up[path]
				o, ok := ours[path]
				if !ok {
					if !allowed(path, allowedMissing) {
						t.Errorf("%s: upstream field %q missing from ours", kind, path)
					}
					continue
				}
				if u.typ != o.typ {
					t.Errorf("%s: %q has type %q upstream, %q in ours", kind, path, u.typ, o.typ)
				}
				if _, ok := allowedEnums[path]; !ok && !slices.Equal(u.enum, o.enum) {
					t.Errorf("%s: %q has enum %v upstream, %v in ours", kind, path, u.enum, o.enum)
				}
				if u.preserve && !o.preserve {
					t.Errorf("%s: %q preserves unknown fields upstream but ours would prune them", kind, path)
				}
			}
			for _, path := range sortedKeys(ours) {
				if _, ok := up[path]; !ok && path != "" && !allowed(path, allowedExtra) {
					t.Errorf("%s: field %q is ours only; add it to allowedExtra with a reason if deliberate", kind, path)
				}
				for _, rule := range ours[path].rules {
					key := fmt.Sprintf("%s %s %s", kind, path, rule)
					if _, ok := allowedValidations[key]; !ok && !slices.Contains(up[path].rules, rule) {
						t.Errorf("CEL rule %q is ours only; add it to allowedValidations with a reason if deliberate", key)
					}
				}
			}
		})
	}
}

// TestResourceShapeMatchesUpstream checks names, scope, subresources and
// printer columns: upstream's must all be there, ours only as listed.
func TestResourceShapeMatchesUpstream(t *testing.T) {
	for _, p := range crdPairs {
		t.Run(p.ours, func(t *testing.T) {
			up, ours := loadPair(t, p)
			kind := ours.Spec.Names.Kind
			if up.Spec.Group != ours.Spec.Group || up.Spec.Scope != ours.Spec.Scope {
				t.Errorf("%s: group/scope %s/%s, upstream %s/%s", kind, ours.Spec.Group, ours.Spec.Scope, up.Spec.Group, up.Spec.Scope)
			}
			un, on := up.Spec.Names, ours.Spec.Names
			if un.Kind != on.Kind || un.Plural != on.Plural || un.Singular != on.Singular || !slices.Equal(un.ShortNames, on.ShortNames) {
				t.Errorf("%s: names %+v, upstream %+v", kind, on, un)
			}
			uv, ov := up.Spec.Versions[0], ours.Spec.Versions[0]
			if uv.Name != ov.Name || ov.Name != "v1beta1" || !ov.Served || !ov.Storage {
				t.Errorf("%s: version %s served=%v storage=%v, want v1beta1 served and stored", kind, ov.Name, ov.Served, ov.Storage)
			}
			if (uv.Subresources == nil) != (ov.Subresources == nil) {
				t.Fatalf("%s: subresources differ", kind)
			}
			if uv.Subresources != nil {
				if (uv.Subresources.Status == nil) != (ov.Subresources.Status == nil) {
					t.Errorf("%s: status subresource differs", kind)
				}
				us, os := uv.Subresources.Scale, ov.Subresources.Scale
				_, statusPathAllowed := allowedScaleStatusPath[kind]
				if (us == nil) != (os == nil) || (us != nil && (us.SpecReplicasPath != os.SpecReplicasPath ||
					(us.StatusReplicasPath != os.StatusReplicasPath && !statusPathAllowed) ||
					ptr.Deref(us.LabelSelectorPath, "") != ptr.Deref(os.LabelSelectorPath, ""))) {
					t.Errorf("%s: scale subresource %+v, upstream %+v", kind, os, us)
				}
			}
			ourCols := map[string]string{}
			for _, c := range ov.AdditionalPrinterColumns {
				ourCols[c.Name] = c.JSONPath
			}
			for _, c := range uv.AdditionalPrinterColumns {
				name := c.Name
				if renamed, ok := renamedColumns[kind+" "+c.Name]; ok {
					name = renamed
				}
				if ourCols[name] != c.JSONPath {
					t.Errorf("%s: upstream printer column %q (%s) missing from ours", kind, c.Name, c.JSONPath)
				}
			}
			upCols := map[string]bool{}
			for _, c := range uv.AdditionalPrinterColumns {
				upCols[c.Name] = true
			}
			for _, c := range ov.AdditionalPrinterColumns {
				if _, ok := allowedColumns[kind+" "+c.Name]; !ok && !upCols[c.Name] {
					t.Errorf("%s: printer column %q is ours only; add it to allowedColumns with a reason", kind, c.Name)
				}
			}
		})
	}
}

// TestSnapshotColumnsInOrder pins the columns people see in `kubectl get flinksnp`.
func TestSnapshotColumnsInOrder(t *testing.T) {
	_, ours := loadPair(t, crdPairs[2])
	var names []string
	for _, c := range ours.Spec.Versions[0].AdditionalPrinterColumns {
		if c.Priority == 0 {
			names = append(names, c.Name)
		}
	}
	want := []string{"Type", "Job", "Trigger", "State", "Path", "Age"}
	if !slices.Equal(names, want) {
		t.Fatalf("default columns %v, want %v", names, want)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
