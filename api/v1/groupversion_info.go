package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

	// SchemeBuilder collects the functions that add this package's types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kinds of this group version, as they appear in apiVersion/kind pairs and in
// policy dependencies.
const (
	// PolicyKind is the kind of Policy.
	PolicyKind = "Policy"
	// PlacementBindingKind is the kind of PlacementBinding.
	PlacementBindingKind = "PlacementBinding"
	// ConfigurationPolicyKind is the kind of ConfigurationPolicy.
	ConfigurationPolicyKind = "ConfigurationPolicy"
)

// Resource returns the group-qualified resource of this group, for errors
// such as NotFound.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&Policy{}, &PolicyList{},
		&PlacementBinding{}, &PlacementBindingList{},
		&ConfigurationPolicy{}, &ConfigurationPolicyList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
