package configpolicy

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Reasons of templates that cannot be evaluated.
const (
	// ReasonDecodeError: the object definition is not a Kubernetes object.
	ReasonDecodeError = "K8s decode object definition error"
	// ReasonMappingError: the kind is not served by the cluster.
	ReasonMappingError = "K8s error"
	// ReasonMissingNamespace: a namespaced object has no namespace.
	ReasonMissingNamespace = "K8s missing namespace"
	// ReasonNamespaceSelectorError: spec.namespaceSelector does not parse.
	ReasonNamespaceSelectorError = "namespaceSelector error"
	// ReasonObjectSelectorError: objectSelector does not parse.
	ReasonObjectSelectorError = "objectSelector error"
	// ReasonUnsupported: the policy uses a feature Canopy does not have.
	ReasonUnsupported = "Unsupported feature"
)

// objectTemplate is an object template, read and checked.
type objectTemplate struct {
	complianceType policyv1.ComplianceType
	mode           Mode
	metadataMode   Mode
	// object is the object definition.
	object map[string]any
	gvk    schema.GroupVersionKind
	// name and namespace are the object's; either may be empty.
	name, namespace string
	// selector is the objectSelector of an unnamed template (or one whose
	// name is a Go template), or nil.
	selector labels.Selector
	// recordDiff says where to record how an object differs.
	recordDiff policyv1.RecordDiff
	// recreate says when to delete and create the object instead of
	// updating it (recreate.go).
	recreate policyv1.RecreateOption
}

// templateError is why an object template cannot be evaluated.
type templateError struct{ reason, message string }

// parseTemplate reads object template index of policy.
func parseTemplate(policy string, index int, ot policyv1.ObjectTemplate) (*objectTemplate, *templateError) {
	t := &objectTemplate{complianceType: ot.ComplianceType, recordDiff: ot.RecordDiff, recreate: ot.RecreateOption}
	if err := utiljson.Unmarshal(ot.ObjectDefinition.Raw, &t.object); err != nil || t.object == nil {
		if err == nil {
			err = fmt.Errorf("the object definition is empty")
		}
		return nil, &templateError{ReasonDecodeError, fmt.Sprintf("Decoding error, please check your policy file! "+
			"Aborting handling the object template at index [%d] in policy `%s` with error = `%v`", index, policy, err)}
	}
	if terr := t.readIdentity(policy, index); terr != nil {
		return nil, terr
	}
	var ok bool
	if t.mode, ok = modeOf(ot.ComplianceType); !ok || ot.ComplianceType == "" {
		return nil, &templateError{ReasonDecodeError, fmt.Sprintf(
			"The object template at index %d in policy %s has an unknown complianceType %q", index, policy, ot.ComplianceType)}
	}
	t.metadataMode = t.mode
	if ot.MetadataComplianceType != "" {
		t.metadataMode, _ = modeOf(ot.MetadataComplianceType)
	}
	if ot.ObjectSelector != nil && (t.name == "" || hasTemplate(t.name)) {
		sel, err := metav1.LabelSelectorAsSelector(ot.ObjectSelector)
		if err != nil {
			return nil, &templateError{ReasonObjectSelectorError,
				fmt.Sprintf("Error parsing provided objectSelector in the object-template at index [%d]: %v", index, err)}
		}
		t.selector = sel
	}
	return t, nil
}

// readIdentity reads the kind, name and namespace of the object definition.
func (t *objectTemplate) readIdentity(policy string, index int) *templateError {
	apiVersion, _ := t.object["apiVersion"].(string)
	kind, _ := t.object["kind"].(string)
	if apiVersion == "" || kind == "" {
		return &templateError{ReasonDecodeError, fmt.Sprintf(
			"The kind and apiVersion fields are required on the object template at index %d in policy %s", index, policy)}
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return &templateError{ReasonDecodeError, fmt.Sprintf(
			"The object template at index %d in policy %s has an invalid apiVersion: %v", index, policy, err)}
	}
	t.gvk = gv.WithKind(kind)
	meta, isMap := t.object["metadata"].(map[string]any)
	if _, present := t.object["metadata"]; present && !isMap {
		return &templateError{ReasonDecodeError, fmt.Sprintf(
			"The metadata of the object template at index %d in policy %s is not an object", index, policy)}
	}
	name, nameOK := stringOrAbsent(meta, "name")
	ns, nsOK := stringOrAbsent(meta, "namespace")
	if !nameOK || !nsOK {
		return &templateError{ReasonDecodeError, fmt.Sprintf(
			"The metadata.name and metadata.namespace of the object template at index %d in policy %s must be strings",
			index, policy)}
	}
	t.name, t.namespace = name, ns
	return nil
}

func stringOrAbsent(m map[string]any, key string) (string, bool) {
	v, present := m[key]
	if !present || v == nil {
		return "", true
	}
	s, ok := v.(string)
	return s, ok
}

func modeOf(c policyv1.ComplianceType) (Mode, bool) {
	switch {
	case c.IsMustOnlyHave():
		return Exact, true
	case c.IsMustHave(), c.IsMustNotHave():
		return Subset, true
	}
	return Subset, false
}

// newObject is the object to create in namespace ns: the object definition
// without nulls, with the namespace set (when namespaced) and no status.
// Zero values ("", false, 0, {}, []) stay: the API server decides which it
// keeps, as OCM's creates do (a required field may be empty).
func (t *objectTemplate) newObject(ns string) map[string]any {
	obj, _ := withoutNulls(t.object).(map[string]any)
	delete(obj, "status")
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	if ns != "" {
		meta["namespace"] = ns
	} else {
		delete(meta, "namespace")
	}
	return obj
}

// withoutNulls returns a copy of the JSON value v without its null map
// values.
func withoutNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e != nil {
				out[k] = withoutNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutNulls(e)
		}
		return out
	default:
		return v
	}
}
