package vet

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/canopy-policy/canopy/deploy/crds"
)

// crdSchema validates objects of one served version of a CRD, as the API
// server does.
type crdSchema struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
}

// loadSchemas reads the schemas of Canopy's and OCM's CRDs.
func loadSchemas() (map[schema.GroupVersionKind]*crdSchema, error) {
	canopy, err := crds.Canopy()
	if err != nil {
		return nil, fmt.Errorf("reading Canopy's CRDs: %w", err)
	}
	ocm, err := crds.OCM()
	if err != nil {
		return nil, fmt.Errorf("reading OCM's CRDs: %w", err)
	}
	out := map[schema.GroupVersionKind]*crdSchema{}
	for _, crd := range append(canopy, ocm...) {
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			s, err := newCRDSchema(v.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
			}
			out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = s
		}
	}
	return out, nil
}

func newCRDSchema(v1 *apiextensionsv1.JSONSchemaProps) (*crdSchema, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, internal, nil); err != nil {
		return nil, fmt.Errorf("converting the schema: %w", err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("not a structural schema: %w", err)
	}
	validator, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("building the validator: %w", err)
	}
	return &crdSchema{structural: structural, validator: validator,
		cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}, nil
}

// unknownFieldDetail says what becomes of a field the schema does not know.
// The agent writes policy templates with strict field validation, as OCM's
// framework-addon does since v0.17.0, so such a template is refused (and
// reported NonCompliant); kubectl apply validates strictly by default; a
// client that asks for no validation has the field dropped.
const unknownFieldDetail = "unknown field: refused under strict field validation " +
	"(how the agent writes policy templates, as OCM does, and kubectl's default), dropped otherwise"

// validate returns the schema errors of obj: unknown fields, OpenAPI
// validation, then CEL rules.
func (s *crdSchema) validate(ctx context.Context, obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	pruned := runtime.DeepCopyJSON(obj)
	unknown := pruning.PruneWithOptions(pruned, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, path := range unknown {
		if path == "metadata" || isMetadataPath(path) {
			continue
		}
		errs = append(errs, field.Forbidden(field.NewPath(path), unknownFieldDetail))
	}
	errs = append(errs, validation.ValidateCustomResource(nil, obj, s.validator)...)
	if len(errs) > 0 {
		return errs // CEL rules assume a schema-valid object
	}
	celErrs, _ := s.cel.Validate(ctx, nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

func isMetadataPath(path string) bool {
	return len(path) > len("metadata.") && path[:len("metadata.")] == "metadata."
}
