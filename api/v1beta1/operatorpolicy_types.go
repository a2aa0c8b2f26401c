package v1beta1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// OperatorPolicyKind is the kind of OperatorPolicy.
const OperatorPolicyKind = "OperatorPolicy"

// RemovalAction says what a mustnothave OperatorPolicy does with one kind of
// the operator's objects. Compare with IsKeep, IsDelete and
// IsDeleteIfUnused: OCM accepts any capitalisation.
//
// +kubebuilder:validation:Enum=Keep;Delete;DeleteIfUnused
type RemovalAction string

const (
	// Keep leaves the objects of the kind in place.
	Keep RemovalAction = "Keep"
	// Delete deletes the objects of the kind.
	Delete RemovalAction = "Delete"
	// DeleteIfUnused deletes the objects of the kind only when nothing else
	// (another Subscription) uses them.
	DeleteIfUnused RemovalAction = "DeleteIfUnused"
)

// IsKeep reports whether a is Keep, in any capitalisation.
func (a RemovalAction) IsKeep() bool { return strings.EqualFold(string(a), string(Keep)) }

// IsDelete reports whether a is Delete, in any capitalisation.
func (a RemovalAction) IsDelete() bool { return strings.EqualFold(string(a), string(Delete)) }

// IsDeleteIfUnused reports whether a is DeleteIfUnused, in any
// capitalisation.
func (a RemovalAction) IsDeleteIfUnused() bool {
	return strings.EqualFold(string(a), string(DeleteIfUnused))
}

// RemovalBehavior says which of the operator's objects a mustnothave
// OperatorPolicy removes under enforce. Under inform, objects that would be
// removed make the policy NonCompliant and kept ones do not.
type RemovalBehavior struct {
	// OperatorGroups is what happens to the OperatorGroup; DeleteIfUnused
	// (the default) keeps it while another Subscription uses it.
	//
	// +optional
	// +kubebuilder:default=DeleteIfUnused
	// +kubebuilder:validation:Enum=Keep;DeleteIfUnused
	OperatorGroups RemovalAction `json:"operatorGroups,omitempty"`

	// Subscriptions is what happens to the Subscription; Delete by default.
	//
	// +optional
	// +kubebuilder:default=Delete
	// +kubebuilder:validation:Enum=Keep;Delete
	Subscriptions RemovalAction `json:"subscriptions,omitempty"`

	// CSVs is what happens to the ClusterServiceVersions; Delete by
	// default.
	//
	// +optional
	// +kubebuilder:default=Delete
	// +kubebuilder:validation:Enum=Keep;Delete
	CSVs RemovalAction `json:"clusterServiceVersions,omitempty"`

	// CRDs is what happens to the operator's CustomResourceDefinitions;
	// Keep by default, because deleting them deletes every custom resource
	// of theirs.
	//
	// +optional
	// +kubebuilder:default=Keep
	// +kubebuilder:validation:Enum=Keep;Delete
	CRDs RemovalAction `json:"customResourceDefinitions,omitempty"`
}

// ApplyDefaults returns rb with its unset fields at their defaults, which
// the API server sets on objects it stores but not on objects built in
// memory.
func (rb RemovalBehavior) ApplyDefaults() RemovalBehavior {
	if rb.OperatorGroups == "" {
		rb.OperatorGroups = DeleteIfUnused
	}
	if rb.Subscriptions == "" {
		rb.Subscriptions = Delete
	}
	if rb.CSVs == "" {
		rb.CSVs = Delete
	}
	if rb.CRDs == "" {
		rb.CRDs = Keep
	}
	return rb
}

// ComplianceConfigAction says whether a condition of the operator makes the
// policy NonCompliant or is only reported.
//
// +kubebuilder:validation:Enum=Compliant;NonCompliant
type ComplianceConfigAction string

const (
	// ConfigCompliant reports the condition without changing the policy's
	// compliance.
	ConfigCompliant ComplianceConfigAction = "Compliant"
	// ConfigNonCompliant makes the policy NonCompliant while the condition
	// holds.
	ConfigNonCompliant ComplianceConfigAction = "NonCompliant"
)

// ComplianceConfig says which conditions of the operator's objects affect
// the policy's compliance.
type ComplianceConfig struct {
	// CatalogSourceUnhealthy is for an unhealthy or missing CatalogSource;
	// Compliant by default.
	//
	// +optional
	// +kubebuilder:default=Compliant
	CatalogSourceUnhealthy ComplianceConfigAction `json:"catalogSourceUnhealthy,omitempty"`

	// DeploymentsUnavailable is for operator Deployments below their
	// minimum availability; NonCompliant by default.
	//
	// +optional
	// +kubebuilder:default=NonCompliant
	DeploymentsUnavailable ComplianceConfigAction `json:"deploymentsUnavailable,omitempty"`

	// UpgradesAvailable is for an InstallPlan awaiting approval; Compliant
	// by default.
	//
	// +optional
	// +kubebuilder:default=Compliant
	UpgradesAvailable ComplianceConfigAction `json:"upgradesAvailable,omitempty"`

	// DeprecationsPresent is for a deprecated package, channel or bundle
	// (the NoDeprecations condition, read from the PackageManifest);
	// Compliant by default.
	//
	// +optional
	// +kubebuilder:default=Compliant
	DeprecationsPresent ComplianceConfigAction `json:"deprecationsPresent,omitempty"`

	// MinorChannelUpgradeAvailable is for a newer minor-version channel
	// than the subscribed one (the MinorChannelUpgradeAvailable condition,
	// checked when upgradeApproval is Automatic); Compliant by default.
	//
	// +optional
	// +kubebuilder:default=Compliant
	MinorChannelUpgradeAvailable ComplianceConfigAction `json:"minorChannelUpgradeAvailable,omitempty"`
}

// OperatorPolicySpec is the desired state of one operator installed by
// OLM on the managed cluster.
type OperatorPolicySpec struct {
	// Severity is the severity of a violation.
	//
	// +optional
	Severity policyv1.Severity `json:"severity,omitempty"`

	// RemediationAction says whether differences are only reported (inform,
	// the default) or fixed (enforce).
	//
	// +kubebuilder:default=inform
	RemediationAction policyv1.RemediationAction `json:"remediationAction"`

	// ComplianceType is musthave (the operator must be installed) or
	// mustnothave (it must not be).
	//
	// +kubebuilder:validation:Enum=musthave;mustnothave
	ComplianceType policyv1.ComplianceType `json:"complianceType"`

	// OperatorGroup is the OperatorGroup to check or create: its name,
	// namespace and spec fields. When unset and the namespace has no
	// OperatorGroup, an AllNamespaces one is created.
	//
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	OperatorGroup *runtime.RawExtension `json:"operatorGroup,omitempty"`

	// Subscription is the Subscription to check or create: its namespace
	// and spec fields (name, channel, source, sourceNamespace, ...). The
	// Subscription is named after the package.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:pruning:PreserveUnknownFields
	Subscription runtime.RawExtension `json:"subscription"`

	// Versions are the ClusterServiceVersion names that are compliant, and
	// whose InstallPlans are approved under enforce. An entry may be a
	// managed-cluster template and may hold several names separated by
	// commas; blank entries are ignored. Empty allows every version.
	//
	// +optional
	Versions []string `json:"versions,omitempty"`

	// RemovalBehavior says what a mustnothave policy removes under enforce.
	//
	// +optional
	// +kubebuilder:default={}
	RemovalBehavior RemovalBehavior `json:"removalBehavior,omitempty"`

	// UpgradeApproval says whether upgrade InstallPlans are approved under
	// enforce (Automatic, for the allowed versions) or left for a person
	// (None). The first installation is approved either way.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum=None;Automatic
	UpgradeApproval string `json:"upgradeApproval"`

	// ComplianceConfig says which conditions of the operator affect the
	// policy's compliance.
	//
	// +optional
	// +kubebuilder:default={}
	ComplianceConfig ComplianceConfig `json:"complianceConfig,omitempty"`
}

// OperatorPolicyStatus is the observed state of the operator.
type OperatorPolicyStatus struct {
	// ComplianceState is the overall compliance. Empty means unknown.
	//
	// +optional
	// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant
	ComplianceState policyv1.ComplianceState `json:"compliant,omitempty"`

	// ObservedGeneration is the metadata.generation evaluated last.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are one condition per kind of the operator's objects
	// (OperatorGroupCompliant, SubscriptionCompliant, ...) and Compliant,
	// their summary.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// RelatedObjects are the operator's objects the policy checked.
	//
	// +optional
	RelatedObjects []policyv1.RelatedObject `json:"relatedObjects"`

	// ResolvedSubscriptionLabel is the resolved "name.namespace" of the
	// Subscription.
	//
	// +optional
	ResolvedSubscriptionLabel string `json:"resolvedSubscriptionLabel,omitempty"`

	// OverlappingPolicies are the enforced OperatorPolicies ("name.namespace")
	// that manage the same Subscription, this one included; empty when
	// there are none.
	//
	// +optional
	OverlappingPolicies []string `json:"overlappingPolicies,omitempty"`

	// History is the most recent compliance messages, the newest first,
	// one per change; the agent keeps 10 unless configured otherwise.
	//
	// +optional
	History []policyv1.HistoryEvent `json:"history,omitempty"`
}

// Condition returns the condition of type t, and whether there is one.
func (s *OperatorPolicyStatus) Condition(t string) (metav1.Condition, bool) {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// OperatorPolicy installs, checks or removes an operator through OLM's
// objects (Subscription, OperatorGroup, InstallPlan, ClusterServiceVersion)
// on the managed cluster it lives on. It is a policy template: Policies
// deliver it, and it reports compliance through events on its parent
// Policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=operatorpolicies,scope=Namespaced
// +kubebuilder:metadata:labels="policy.open-cluster-management.io/policy-type=template"
// +kubebuilder:printcolumn:name="Compliance state",type="string",JSONPath=".status.compliant"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type OperatorPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the operator.
	//
	// +optional
	Spec OperatorPolicySpec `json:"spec,omitempty"`

	// Status is the observed state of the operator.
	//
	// +optional
	Status OperatorPolicyStatus `json:"status,omitempty"`
}

// OperatorPolicyList is a list of OperatorPolicy.
//
// +kubebuilder:object:root=true
type OperatorPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the operator policies.
	Items []OperatorPolicy `json:"items"`
}

// Note: registered here rather than in addKnownTypes so that this kind
// lives in one file.
func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &OperatorPolicy{}, &OperatorPolicyList{})
		return nil
	})
}
