package vet

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkNames reports the names and namespaces of d, and of the objects of
// its object-templates when it is a ConfigurationPolicy, that the API
// server would refuse. Names holding a template are left alone: they are
// known once resolved.
func checkNames(d Document) []Finding {
	out := checkObjectName(d, "", d.GroupVersionKind(), d.Object)
	if d.GroupVersionKind().GroupKind() != configurationPolicyGK {
		return out
	}
	list, _, _ := unstructured.NestedSlice(d.Object, "spec", "object-templates")
	for i, item := range list {
		m, _ := item.(map[string]any)
		obj, _ := m["objectDefinition"].(map[string]any)
		if obj == nil {
			continue
		}
		gvk := (&unstructured.Unstructured{Object: obj}).GroupVersionKind()
		out = append(out, checkObjectName(d, fmt.Sprintf("spec.object-templates[%d].objectDefinition.", i), gvk, obj)...)
	}
	return out
}

// checkObjectName checks metadata.name and metadata.namespace of obj, at
// prefix in d.
func checkObjectName(d Document, prefix string, gvk schema.GroupVersionKind, obj map[string]any) []Finding {
	var out []Finding
	check := func(fieldName, value string, validate func(string) []string) {
		if value == "" || strings.Contains(value, "{{") {
			return
		}
		if errs := validate(value); len(errs) > 0 {
			p := prefix + "metadata." + fieldName
			msg := field.Invalid(field.NewPath(p), value, strings.Join(errs, "; ")).Error()
			out = append(out, at(d, p, SeverityError, CheckName, msg))
		}
	}
	name, _, _ := unstructured.NestedString(obj, "metadata", "name")
	ns, _, _ := unstructured.NestedString(obj, "metadata", "namespace")
	check("name", name, nameValidator(gvk.GroupKind()))
	check("namespace", ns, validation.IsDNS1123Label)
	return out
}

// nameValidator returns the API server's validation of names of kind gk:
// a DNS-1123 subdomain for most kinds, custom resources included.
func nameValidator(gk schema.GroupKind) func(string) []string {
	switch {
	case gk == schema.GroupKind{Kind: "Namespace"}:
		return validation.IsDNS1123Label
	case gk == schema.GroupKind{Kind: "Service"}:
		return validation.IsDNS1035Label
	case gk.Group == "rbac.authorization.k8s.io", gk.Group == "user.openshift.io", gk.Group == "oauth.openshift.io":
		// Roles and bindings ("system:controller:x"), OpenShift users
		// and identities ("htpasswd:alice") take any path segment.
		return content.IsPathSegmentName
	default:
		return validation.IsDNS1123Subdomain
	}
}
