// Command crdgen writes the CRD manifests for the flink.apache.org types. It is
// controller-gen's CRD generator (controller-tools, pinned in go.mod) with one
// change: an embedded ObjectMeta (podTemplate.metadata, ephemeral volume claim
// templates) gets its full schema instead of a bare `type: object`.
//
// Why: the upstream CRDs carry the full ObjectMeta schema there. A bare object
// makes the API server prune podTemplate labels and annotations, and makes
// `kubectl apply` (strict field validation) reject upstream manifests that say
// `metadata: {creationTimestamp: null}`. The top-level metadata stays
// `type: object`, as Kubernetes requires.
//
// A second pass loosens every podTemplate subtree: no `required` fields and no
// list-type markers. A pod template is a partial Pod that the operator merges
// into its own pods (a template that only sets a securityContext has no
// containers), and the merged Pod is validated by Kubernetes anyway. Upstream's
// schema has neither, so manifests that pass there pass here.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-tools/pkg/crd"
	"sigs.k8s.io/controller-tools/pkg/genall"
	"sigs.k8s.io/controller-tools/pkg/loader"
	"sigs.k8s.io/yaml"
)

const metav1Pkg = "k8s.io/apimachinery/pkg/apis/meta/v1"

func main() {
	paths := flag.String("paths", "./pkg/apis/...", "Go package pattern holding the API types")
	outDir := flag.String("output-dir", "manifests/crds", "directory the CRD YAML files are written to")
	flag.Parse()

	if err := run(*paths, *outDir); err != nil {
		fmt.Fprintln(os.Stderr, "crdgen:", err)
		os.Exit(1)
	}
}

func run(paths, outDir string) error {
	keepFullObjectMeta()

	maxDescLen := 0         // descriptions would triple the size of the Pod schema
	allowFloats := true     // upstream's resource.cpu is a number (Double)
	omitToolVersion := true // stable output: the version is pinned in go.mod
	var gen genall.Generator = crd.Generator{
		MaxDescLen:          &maxDescLen,
		AllowDangerousTypes: &allowFloats,
		OmitToolVersion:     &omitToolVersion,
	}
	rt, err := genall.Generators{&gen}.ForRoots(paths)
	if err != nil {
		return fmt.Errorf("loading %s: %w", paths, err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	rt.OutputRules = genall.OutputRules{Default: genall.OutputToDirectory(outDir)}
	if failed := rt.Run(); failed {
		return fmt.Errorf("generation failed (errors above)")
	}
	files, err := filepath.Glob(filepath.Join(outDir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := loosenPodTemplates(f); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

// loosenPodTemplates rewrites one CRD file with every podTemplate schema
// stripped of required fields and list-type markers.
func loosenPodTemplates(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return err
	}
	walkSchemas(crd, false)
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// walkSchemas visits every map in the document; inTemplate is true below a
// "podTemplate" property.
func walkSchemas(node any, inTemplate bool) {
	switch n := node.(type) {
	case map[string]any:
		if inTemplate {
			delete(n, "required")
			delete(n, "x-kubernetes-list-type")
			delete(n, "x-kubernetes-list-map-keys")
		}
		for key, child := range n {
			walkSchemas(child, inTemplate || key == "podTemplate")
		}
	case []any:
		for _, child := range n {
			walkSchemas(child, inTemplate)
		}
	}
}

// keepFullObjectMeta replaces controller-tools' override for metav1 so that
// ObjectMeta is generated from its Go type like any other struct, while Time,
// MicroTime, Duration and Fields keep their hand-written schemas.
func keepFullObjectMeta() {
	original := crd.KnownPackages[metav1Pkg]
	crd.KnownPackages[metav1Pkg] = func(p *crd.Parser, pkg *loader.Package) {
		original(p, pkg)
		delete(p.Schemata, crd.TypeIdent{Name: "ObjectMeta", Package: pkg})
		// FieldsV1 (managedFields[].fieldsV1) is free-form JSON.
		p.Schemata[crd.TypeIdent{Name: "FieldsV1", Package: pkg}] = apiextensionsv1.JSONSchemaProps{
			Type:                   "object",
			XPreserveUnknownFields: new(true),
		}
	}
}
