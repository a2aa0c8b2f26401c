package hierarchy

import (
	"cmp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectKey identifies an object.
type ObjectKey struct {
	schema.GroupKind
	Namespace, Name string
}

// String returns "Kind namespace/name", or "Kind name" for a
// cluster-scoped object.
func (k ObjectKey) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// KeyOf returns the key of u.
func KeyOf(u *unstructured.Unstructured) ObjectKey {
	return ObjectKey{GroupKind: u.GroupVersionKind().GroupKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// CompareKeys orders keys by group, kind, namespace and name.
func CompareKeys(a, b ObjectKey) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
