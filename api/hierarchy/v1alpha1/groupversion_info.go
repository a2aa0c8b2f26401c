package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package, the prefix of its labels.
const GroupName = "hierarchy.canopy.io"

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

	// SchemeBuilder collects the functions that add this package's types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kinds of this group version.
const (
	// HierarchyPolicyKind is the kind of HierarchyPolicy.
	HierarchyPolicyKind = "HierarchyPolicy"
	// SubNamespaceKind is the kind of SubNamespace.
	SubNamespaceKind = "SubNamespace"
)

// Resource returns the group-qualified resource of this group, for errors
// such as NotFound.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&HierarchyPolicy{}, &HierarchyPolicyList{},
		&SubNamespace{}, &SubNamespaceList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
