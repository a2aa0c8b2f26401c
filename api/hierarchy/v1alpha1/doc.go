// Package v1alpha1 contains the hierarchy.canopy.io/v1alpha1 API types of
// Canopy's hierarchical namespace syncer: HierarchyPolicy, a policy template
// that declares a tree of namespaces and the objects they inherit, and
// SubNamespace, which creates a child namespace from inside its parent.
//
// +kubebuilder:object:generate=true
// +groupName=hierarchy.canopy.io
package v1alpha1
