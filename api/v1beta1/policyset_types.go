package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// PolicySetSpec is the desired state of a PolicySet.
type PolicySetSpec struct {
	// Description says what the set is for.
	//
	// +optional
	Description string `json:"description,omitempty"`

	// Policies are the names of the member policies, in the set's namespace.
	Policies []policyv1.NonEmptyString `json:"policies"`

	// RolloutStrategy says how a new or changed member policy reaches the
	// clusters of the Placements bound to this set, by decision group
	// (OCM's RolloutStrategy; All when unset). A member's own
	// spec.rolloutStrategy takes precedence.
	//
	// +optional
	RolloutStrategy *clusterv1alpha1.RolloutStrategy `json:"rolloutStrategy,omitempty"`

	// Exclusions name member policies that are not propagated to some
	// clusters through this set's PlacementBindings (OCM's
	// spec.exclusions). Other members, and bindings that name the policy
	// directly or through another set, are not affected. Each entry must
	// name a member, at most once (the admission policy
	// policyset-exclusions.policy.open-cluster-management.io checks it).
	//
	// +optional
	Exclusions []PolicySetExclusion `json:"exclusions,omitempty"`
}

// PolicySetExclusion keeps one member policy of a set off some clusters
// while it stays a member.
type PolicySetExclusion struct {
	// PolicyName is the name of a member policy of the set.
	PolicyName policyv1.NonEmptyString `json:"policyName"`

	// Reason says why the policy is excluded; it is shown by kubectl canopy
	// and the dashboard.
	//
	// +optional
	Reason string `json:"reason,omitempty"`

	// ClusterNames are the managed clusters the policy is not propagated to
	// through this set.
	//
	// +kubebuilder:validation:MinItems=1
	ClusterNames []policyv1.NonEmptyString `json:"clusterNames"`
}

// PolicySetStatusPlacement is one placement bound to the set.
type PolicySetStatusPlacement struct {
	// PlacementBinding is the name of the binding.
	//
	// +optional
	PlacementBinding string `json:"placementBinding,omitempty"`

	// Placement is the name of the bound Placement.
	//
	// +optional
	Placement string `json:"placement,omitempty"`

	// PlacementRule is the name of a bound PlacementRule (deprecated in OCM;
	// Canopy does not select clusters through it).
	//
	// +optional
	PlacementRule string `json:"placementRule,omitempty"`
}

// PolicySetStatusExclusion is the exclusion in effect for one member policy.
type PolicySetStatusExclusion struct {
	// PolicyName is the name of the excluded member policy.
	PolicyName policyv1.NonEmptyString `json:"policyName"`

	// Clusters are the managed clusters the policy is not propagated to
	// through the set, sorted.
	//
	// +kubebuilder:validation:MinItems=1
	Clusters []policyv1.NonEmptyString `json:"clusters"`
}

// PolicySetStatus is the observed state of a PolicySet, aggregated from its
// member policies.
type PolicySetStatus struct {
	// Placement lists the placements bound to the set.
	//
	// +optional
	Placement []PolicySetStatusPlacement `json:"placement,omitempty"`

	// ComplianceState is the aggregated compliance of the members. Empty
	// means unknown.
	//
	// +optional
	// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant
	ComplianceState policyv1.ComplianceState `json:"compliant,omitempty"`

	// StatusMessage says which members are missing, disabled, Pending or
	// without status.
	//
	// +optional
	StatusMessage string `json:"statusMessage,omitempty"`

	// Exclusions are the exclusions of spec.exclusions, one entry per
	// excluded member, sorted by policy name.
	//
	// +optional
	Exclusions []PolicySetStatusExclusion `json:"exclusions,omitempty"`

	// Conditions are Canopy's conditions on the set. They are a Canopy
	// extension; OCM ignores them.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PolicySet groups policies so that one PlacementBinding places them all and
// their compliance is read in one place.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=policysets,scope=Namespaced,shortName=plcset
// +kubebuilder:printcolumn:name="Compliance state",type="string",JSONPath=".status.compliant"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type PolicySet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the set.
	Spec PolicySetSpec `json:"spec"`

	// Status is the observed state of the set.
	//
	// +optional
	Status PolicySetStatus `json:"status,omitempty"`
}

// PolicySetList is a list of PolicySet.
//
// +kubebuilder:object:root=true
type PolicySetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the policy sets.
	Items []PolicySet `json:"items"`
}
