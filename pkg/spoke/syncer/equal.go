package syncer

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/compare"
)

// exactFields are, per kind, the top-level fields compared exactly: a key
// someone added there is a difference. Elsewhere a map of the observed
// object may have more keys than the declared one — fields the API server
// fills in, such as defaults — and still be equivalent.
var exactFields = map[schema.GroupKind][]string{
	{Kind: "ConfigMap"}: {"data", "binaryData"},
	{Kind: "Secret"}:    {"data"},
}

// ignoredFields are top-level fields that are never compared or written.
var ignoredFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "status": true}

// equivalent reports whether observed is as declared: its labels and
// annotations include the declared ones, and each declared top-level field
// matches: under compare.Strict for exactFields, else under
// compare.Ordered (extra map keys ignored, quantities compared by value).
// Numbers compare by value in both.
func equivalent(declared, observed *unstructured.Unstructured) bool {
	declared = adoptable(declared, observed)
	if !includes(observed.GetLabels(), declared.GetLabels()) ||
		!includes(observed.GetAnnotations(), declared.GetAnnotations()) {
		return false
	}
	exact := map[string]bool{}
	for _, f := range exactFields[declared.GroupVersionKind().GroupKind()] {
		exact[f] = true
	}
	for field, want := range declared.Object {
		if ignoredFields[field] {
			continue
		}
		mode := compare.Ordered
		if exact[field] {
			mode = compare.Strict
		}
		got, ok := observed.Object[field]
		if !ok || !compare.Matches(want, got, mode) {
			return false
		}
	}
	for field := range exact {
		if _, declaredIt := declared.Object[field]; !declaredIt && observed.Object[field] != nil {
			return false
		}
	}
	return true
}

// mergeInto returns observed with the declared labels, annotations and
// top-level fields written over it: the object to update in place.
func mergeInto(declared, observed *unstructured.Unstructured) *unstructured.Unstructured {
	declared = adoptable(declared, observed)
	out := observed.DeepCopy()
	for field, v := range declared.Object {
		if !ignoredFields[field] {
			out.Object[field] = compare.DeepCopy(v)
		}
	}
	for _, field := range exactFields[declared.GroupVersionKind().GroupKind()] {
		if _, ok := declared.Object[field]; !ok {
			delete(out.Object, field)
		}
	}
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, declared.GetLabels())
	out.SetLabels(labels)
	annotations := out.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(annotations, declared.GetAnnotations())
	out.SetAnnotations(annotations)
	return out
}

// adoptable returns declared without PolicyLabel when it is a Namespace
// that exists without it: Canopy did not create that namespace, so it must
// never delete it, and only PolicyLabel on a namespace says "created by".
func adoptable(declared, observed *unstructured.Unstructured) *unstructured.Unstructured {
	if declared.GetKind() != "Namespace" || declared.GetAPIVersion() != "v1" {
		return declared
	}
	if _, ok := observed.GetLabels()[hierarchyv1alpha1.PolicyLabel]; ok {
		return declared
	}
	out := declared.DeepCopy()
	labels := out.GetLabels()
	delete(labels, hierarchyv1alpha1.PolicyLabel)
	out.SetLabels(labels)
	return out
}

func includes(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
