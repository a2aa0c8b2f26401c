package syncer

import (
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
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
// matches (exactly for exactFields, else ignoring extra map keys and
// comparing quantities by value).
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
		got, ok := observed.Object[field]
		if !ok || !matches(want, got, exact[field]) {
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
			out.Object[field] = runtimeDeepCopy(v)
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

// matches compares a declared value with an observed one.
func matches(want, got any, exact bool) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || (exact && len(g) != len(w)) {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !matches(wv, gv, exact) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !matches(w[i], g[i], exact) {
				return false
			}
		}
		return true
	case nil:
		return got == nil
	}
	if exact {
		return reflect.DeepEqual(want, got)
	}
	return scalarEqual(want, got)
}

// scalarEqual compares numbers by value and quantity strings ("1Gi",
// "1024Mi") by value.
func scalarEqual(want, got any) bool {
	if wn, ok := number(want); ok {
		gn, ok := number(got)
		return ok && wn == gn
	}
	ws, wok := want.(string)
	gs, gok := got.(string)
	if wok && gok && ws != gs {
		wq, werr := resource.ParseQuantity(ws)
		gq, gerr := resource.ParseQuantity(gs)
		return werr == nil && gerr == nil && wq.Cmp(gq) == 0
	}
	return reflect.DeepEqual(want, got)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	}
	return 0, false
}

func runtimeDeepCopy(v any) any {
	return (&unstructured.Unstructured{Object: map[string]any{"v": v}}).DeepCopy().Object["v"]
}
