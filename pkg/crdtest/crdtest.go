// Package crdtest loads the generated CRDs and validates objects against them
// the way the API server does (structural schema, OpenAPI validation, CEL,
// pruning), so tests can check manifests without a cluster.
package crdtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/flinkops/flink-operator/pkg/upstreamtest"
)

// ModuleRoot finds the directory holding go.mod, walking up from the working
// directory (a test's package directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// LoadCRD reads one CRD YAML file.
func LoadCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeCRD(path, data)
}

// LoadUpstreamCRD reads one of upstream's CRDs from pkg/upstreamtest
// ("flinkdeployments.flink.apache.org-v1.yml").
func LoadUpstreamCRD(name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := upstreamtest.ReadFile("crds/" + name)
	if err != nil {
		return nil, err
	}
	return DecodeCRD(name, data)
}

// DecodeCRD decodes one CRD YAML document; path names it in errors.
func DecodeCRD(path string, data []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return crd, nil
}

// Validator checks objects of one CRD version like the API server would.
type Validator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// NewValidator builds a validator for the CRD's only (v1beta1) version and
// fails if the schema is not structural.
func NewValidator(crd *apiextensionsv1.CustomResourceDefinition) (*Validator, error) {
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema == nil {
		return nil, fmt.Errorf("%s: want exactly one version with a schema", crd.Name)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("%s: converting schema: %w", crd.Name, err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("%s: schema is not structural: %w", crd.Name, err)
	}
	if errs := structuralschema.ValidateStructural(field.NewPath("spec", "validation", "openAPIV3Schema"), structural); len(errs) > 0 {
		return nil, fmt.Errorf("%s: schema is not structural: %v", crd.Name, errs.ToAggregate())
	}
	schemaValidator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", crd.Name, err)
	}
	return &Validator{
		structural: structural,
		schema:     schemaValidator,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}, nil
}

// Validate checks obj (an unstructured JSON object) as a create, or as an
// update of old when old is not nil. It returns the fields the API server
// would prune as unknown, and the validation errors.
func (v *Validator) Validate(obj, old map[string]any) (pruned []string, errs field.ErrorList) {
	obj = runtime.DeepCopyJSON(obj)
	pruned = pruning.PruneWithOptions(obj, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	if old == nil {
		errs = apiservervalidation.ValidateCustomResource(nil, obj, v.schema)
	} else {
		errs = apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, v.schema)
	}
	var oldObj any
	if old != nil {
		oldObj = old
	}
	celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
	return pruned, append(errs, celErrs...)
}
