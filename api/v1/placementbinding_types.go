package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Subject is a Policy or PolicySet bound to a placement, in the binding's
// namespace.
type Subject struct {
	// APIGroup is the group of the subject's kind:
	// policy.open-cluster-management.io.
	//
	// +kubebuilder:validation:Enum=policy.open-cluster-management.io
	APIGroup string `json:"apiGroup"`

	// Kind is Policy or PolicySet.
	//
	// +kubebuilder:validation:Enum=Policy;PolicySet
	Kind string `json:"kind"`

	// Name is the name of the policy or policy set.
	//
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// PlacementSubject is the placement a binding binds, in the binding's
// namespace.
//
// Note: OCM also accepts the deprecated PlacementRule
// (apps.open-cluster-management.io); the schema keeps accepting it so that
// existing YAML applies, but Canopy selects clusters only through Placement.
type PlacementSubject struct {
	// APIGroup is cluster.open-cluster-management.io for a Placement, or
	// apps.open-cluster-management.io for a PlacementRule.
	//
	// +kubebuilder:validation:Enum=apps.open-cluster-management.io;cluster.open-cluster-management.io
	APIGroup string `json:"apiGroup"`

	// Kind is Placement (or the deprecated PlacementRule).
	//
	// +kubebuilder:validation:Enum=PlacementRule;Placement
	Kind string `json:"kind"`

	// Name is the name of the placement.
	//
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// BindingOverrides are changes a binding applies to its subjects on the
// clusters it selects.
type BindingOverrides struct {
	// RemediationAction, when set, must be enforce: the subjects are
	// enforced on this binding's clusters whatever their own
	// remediationAction.
	//
	// Note: a plain string, because the enum is narrower than that of the
	// RemediationAction type; convert with RemediationAction(...).
	//
	// +optional
	// +kubebuilder:validation:Enum=Enforce;enforce
	RemediationAction string `json:"remediationAction,omitempty"`
}

// SubFilter restricts what a binding does.
//
// +kubebuilder:validation:Enum=restricted
type SubFilter string

const (
	// Restricted makes the binding only apply its overrides to clusters that
	// other bindings already select; it selects no cluster itself.
	Restricted SubFilter = "restricted"
)

// PlacementBindingStatus is the observed state of a PlacementBinding. It is
// empty, as in OCM.
type PlacementBindingStatus struct{}

// PlacementBinding binds a placement to policies and policy sets, with
// optional overrides.
//
// Note: as in OCM, placementRef, subjects, bindingOverrides and subFilter
// are top-level fields, not under spec.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=placementbindings,scope=Namespaced,shortName=pb
// +kubebuilder:printcolumn:name="Placement",type="string",JSONPath=".placementRef.name"
// +kubebuilder:printcolumn:name="Sub filter",type="string",JSONPath=".subFilter",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type PlacementBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// PlacementRef is the placement whose decisions select the clusters.
	PlacementRef PlacementSubject `json:"placementRef"`

	// Subjects are the policies and policy sets bound to the placement.
	//
	// +kubebuilder:validation:MinItems=1
	Subjects []Subject `json:"subjects"`

	// BindingOverrides are applied to the subjects on this binding's
	// clusters.
	//
	// +optional
	BindingOverrides BindingOverrides `json:"bindingOverrides,omitempty"`

	// SubFilter, when restricted, makes this binding only override, never
	// select clusters.
	//
	// +optional
	SubFilter SubFilter `json:"subFilter,omitempty"`

	// Status is the observed state of the binding.
	//
	// +optional
	Status PlacementBindingStatus `json:"status,omitempty"`
}

// PlacementBindingList is a list of PlacementBinding.
//
// +kubebuilder:object:root=true
type PlacementBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the placement bindings.
	Items []PlacementBinding `json:"items"`
}
