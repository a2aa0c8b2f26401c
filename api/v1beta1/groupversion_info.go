package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: policyv1.GroupName, Version: "v1beta1"}

	// SchemeBuilder collects the functions that add this package's types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// PolicySetKind is the kind of PolicySet.
const PolicySetKind = "PolicySet"

// Resource returns the group-qualified resource of this group, for errors
// such as NotFound.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &PolicySet{}, &PolicySetList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
