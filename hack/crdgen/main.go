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
package main

import (
	"flag"
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-tools/pkg/crd"
	"sigs.k8s.io/controller-tools/pkg/genall"
	"sigs.k8s.io/controller-tools/pkg/loader"
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
	return nil
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
