package v1

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

// RemediationAction says whether a policy only reports violations (inform)
// or also fixes them (enforce). Both capitalisations are accepted, as in
// OCM; compare with IsInform and IsEnforce rather than with ==.
//
// +kubebuilder:validation:Enum=Inform;inform;Enforce;enforce
type RemediationAction string

const (
	// Enforce makes the policy engine change the cluster to comply.
	Enforce RemediationAction = "Enforce"
	// Inform makes the policy engine only report compliance.
	Inform RemediationAction = "Inform"
)

// IsEnforce reports whether the action is enforce, in any capitalisation.
func (a RemediationAction) IsEnforce() bool {
	return strings.EqualFold(string(a), string(Enforce))
}

// IsInform reports whether the action is inform, in any capitalisation.
func (a RemediationAction) IsInform() bool {
	return strings.EqualFold(string(a), string(Inform))
}

// ComplianceState is the compliance of a policy or policy template, read at
// .status.compliant. The empty value means unknown (not yet evaluated).
//
// Note: the enum is set per field, not on this type, because
// ConfigurationPolicy also accepts Terminating.
type ComplianceState string

const (
	// Compliant means the cluster matches the policy.
	Compliant ComplianceState = "Compliant"
	// NonCompliant means the cluster does not match the policy.
	NonCompliant ComplianceState = "NonCompliant"
	// Pending means the policy waits on dependencies that are not satisfied.
	Pending ComplianceState = "Pending"
	// Terminating means a ConfigurationPolicy is being deleted and is
	// cleaning up the objects it created.
	Terminating ComplianceState = "Terminating"
)

// PolicyDependency names an object that must be in a given compliance state
// before the policy templates it guards are created on the managed cluster.
//
// Note: as in OCM, dependencies on ConfigurationPolicy and CertificatePolicy
// take no namespace, because templates always live in the cluster namespace.
//
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || !(self.kind in ['ConfigurationPolicy', 'CertificatePolicy']) || !has(self.namespace) || size(self.namespace) == 0",message="dependencies on ConfigurationPolicy or CertificatePolicy must not set namespace: policy templates live in the cluster namespace"
type PolicyDependency struct {
	metav1.TypeMeta `json:",inline"`

	// Name is the name of the object depended on.
	//
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Namespace is the namespace of the object depended on. Empty means the
	// cluster namespace for kinds of the policy.open-cluster-management.io
	// group, and cluster scope for other kinds.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Compliance is the value of the object's .status.compliant that
	// satisfies the dependency.
	//
	// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant
	Compliance ComplianceState `json:"compliance"`
}

// PolicyTemplate is one policy engine object (for example a
// ConfigurationPolicy) that the Policy creates on the managed cluster, and
// how it is created.
type PolicyTemplate struct {
	// ObjectDefinition is the object to create on the managed cluster in the
	// cluster namespace. It must have apiVersion, kind and metadata.name.
	//
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:validation:XValidation:rule="has(self.metadata) && has(self.metadata.name) && self.metadata.name != ''",message="metadata.name is required: it names the template on the managed cluster and its compliance"
	ObjectDefinition runtime.RawExtension `json:"objectDefinition"`

	// ExtraDependencies are dependencies of this template only, in addition
	// to the Policy's spec.dependencies.
	//
	// +optional
	ExtraDependencies []PolicyDependency `json:"extraDependencies,omitempty"`

	// IgnorePending reports this template as Compliant, instead of Pending,
	// while its dependencies are not satisfied.
	//
	// +optional
	IgnorePending bool `json:"ignorePending,omitempty"`
}

// KindAndName reads the kind and metadata.name of the template's object
// definition, without decoding the rest. A field of another type than
// string reads as empty; both are empty when the definition is not JSON.
func (t PolicyTemplate) KindAndName() (kind, name string) {
	var obj struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(t.ObjectDefinition.Raw, &obj) // Note: a type error leaves the other field decoded
	return obj.Kind, obj.Metadata.Name
}

// HubTemplateOptions changes how hub templates of the policy are resolved.
type HubTemplateOptions struct {
	// ServiceAccountName is a service account in the policy's namespace
	// whose permissions hub template lookups use.
	//
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// PolicySpec is the desired state of a Policy: which policy templates to
// deliver to the selected managed clusters, and in which order.
type PolicySpec struct {
	// Disabled removes the policy from every managed cluster while true.
	//
	// +optional
	// +kubebuilder:default=false
	Disabled bool `json:"disabled"`

	// RemediationAction, when set, overrides the remediationAction of every
	// policy template.
	//
	// +optional
	RemediationAction RemediationAction `json:"remediationAction,omitempty"`

	// CopyPolicyMetadata says whether all labels and annotations of the root
	// policy are copied to its replicas (true, the default), or only the
	// policy framework's own (false, advisable under Argo CD).
	//
	// +optional
	CopyPolicyMetadata *bool `json:"copyPolicyMetadata,omitempty"`

	// PolicyTemplates are the policy engine objects to create on each
	// selected managed cluster.
	PolicyTemplates []PolicyTemplate `json:"policy-templates"`

	// Dependencies apply to every template of the policy.
	//
	// +optional
	Dependencies []PolicyDependency `json:"dependencies,omitempty"`

	// HubTemplateOptions changes how hub templates are resolved.
	//
	// +optional
	HubTemplateOptions *HubTemplateOptions `json:"hubTemplateOptions,omitempty"`

	// RolloutStrategy says how a new or changed policy reaches the clusters
	// its Placements select, by decision group: All at once (the default),
	// Progressive or ProgressivePerGroup, gated on the compliance of the
	// clusters already updated. It is OCM's RolloutStrategy, so that it
	// reads as it does on OCM's workloads; it overrides the strategy of a
	// PolicySet that binds the policy. Replicas never carry it.
	//
	// +optional
	RolloutStrategy *clusterv1alpha1.RolloutStrategy `json:"rolloutStrategy,omitempty"`
}

// PlacementDecision is one managed cluster chosen by a placement.
type PlacementDecision struct {
	// ClusterName is the name of the managed cluster.
	//
	// +optional
	ClusterName string `json:"clusterName,omitempty"`

	// ClusterNamespace is the hub namespace of the managed cluster.
	//
	// +optional
	ClusterNamespace string `json:"clusterNamespace,omitempty"`
}

// Placement reports one placement bound to the policy, and through what.
type Placement struct {
	// PlacementBinding is the name of the PlacementBinding that binds the
	// placement to the policy or its policy set.
	//
	// +optional
	PlacementBinding string `json:"placementBinding,omitempty"`

	// PlacementRule is the name of a bound PlacementRule
	// (apps.open-cluster-management.io, deprecated in OCM; Canopy does not
	// select clusters through it).
	//
	// +optional
	PlacementRule string `json:"placementRule,omitempty"`

	// Placement is the name of the bound Placement
	// (cluster.open-cluster-management.io).
	//
	// +optional
	Placement string `json:"placement,omitempty"`

	// Decisions are the clusters the placement selects for this binding.
	//
	// +optional
	Decisions []PlacementDecision `json:"decisions,omitempty"`

	// PolicySet is the policy set through which the placement is bound, if
	// the binding names a PolicySet rather than the policy itself.
	//
	// +optional
	PolicySet string `json:"policySet,omitempty"`

	// Exclusions are the clusters that PolicySet's spec.exclusions keep the
	// policy off, sorted: they are not in Decisions, whether the Placement
	// selects them or not.
	//
	// +optional
	Exclusions []PolicyExclusion `json:"exclusions,omitempty"`
}

// PolicyExclusion is a managed cluster a policy set's exclusion keeps the
// policy off.
type PolicyExclusion struct {
	// ClusterName is the name of the managed cluster.
	//
	// +optional
	ClusterName string `json:"clusterName,omitempty"`
}

// RemainingBinding is a PlacementBinding that still places a policy on a
// cluster that a policy set's exclusion keeps it off.
type RemainingBinding struct {
	// PlacementBinding is the name of the binding.
	//
	// +optional
	PlacementBinding string `json:"placementBinding,omitempty"`
}

// CompliancePerClusterStatus is the compliance of the policy's replica on
// one managed cluster.
type CompliancePerClusterStatus struct {
	// ComplianceState is the replica's .status.compliant.
	//
	// +optional
	// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant
	ComplianceState ComplianceState `json:"compliant,omitempty"`

	// ClusterName is the name of the managed cluster.
	//
	// +optional
	ClusterName string `json:"clustername,omitempty"`

	// ClusterNamespace is the hub namespace of the managed cluster.
	//
	// +optional
	ClusterNamespace string `json:"clusternamespace,omitempty"`

	// RemainingBindings are, for a cluster that a policy set's exclusion
	// keeps the policy off (status.placement[].exclusions), the bindings
	// that place the policy on it all the same, sorted.
	//
	// +optional
	RemainingBindings []RemainingBinding `json:"remainingBindings,omitempty"`
}

// DetailsPerTemplate is the compliance of one policy template and its
// recent compliance messages.
type DetailsPerTemplate struct {
	// TemplateMeta identifies the template (name, namespace and so on).
	//
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	TemplateMeta metav1.ObjectMeta `json:"templateMeta,omitempty"`

	// ComplianceState is the template's latest compliance.
	//
	// +optional
	// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant
	ComplianceState ComplianceState `json:"compliant,omitempty"`

	// History lists the template's compliance messages, newest first.
	//
	// +optional
	History []ComplianceHistory `json:"history,omitempty"`
}

// ComplianceHistory is one compliance message of a template.
type ComplianceHistory struct {
	// LastTimestamp is when the compliance event was last seen.
	//
	// +optional
	LastTimestamp metav1.Time `json:"lastTimestamp,omitempty"`

	// Message is the compliance message, starting with the compliance state
	// ("Compliant; ...", "NonCompliant; ...", "Pending; ...").
	//
	// +optional
	Message string `json:"message,omitempty"`

	// EventName is the name of the compliance event.
	//
	// +optional
	EventName string `json:"eventName,omitempty"`
}

// PolicyStatus is the observed state of a Policy. A root policy on the hub
// uses placement and status; a replica uses compliant and details.
type PolicyStatus struct {
	// Placement lists the placements bound to the root policy.
	//
	// +optional
	Placement []Placement `json:"placement,omitempty"`

	// Status lists the compliance of the root policy on each selected
	// managed cluster.
	//
	// +optional
	Status []CompliancePerClusterStatus `json:"status,omitempty"`

	// ComplianceState is the overall compliance of the policy. Empty means
	// unknown.
	//
	// +optional
	// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant
	ComplianceState ComplianceState `json:"compliant,omitempty"`

	// Details lists the compliance of each policy template of a replica.
	//
	// +optional
	Details []DetailsPerTemplate `json:"details,omitempty"`

	// Conditions are Canopy's conditions on the policy (for example whether
	// it was propagated). They are a Canopy extension; OCM ignores them.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Rollout shows, per decision group, how far a root policy with a
	// rollout strategy has reached its clusters, and why it stopped. It is
	// absent without a strategy. A Canopy extension; OCM ignores it.
	//
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	// EvaluatedGeneration is, on a replica, the metadata.generation of the
	// hub replica whose spec the managed cluster's agent has fully
	// evaluated: every template of that spec synced to the cluster,
	// evaluated, and its compliance recorded in this status. A rollout
	// counts a cluster as Succeeded only when its replica is Compliant and
	// this equals the replica's metadata.generation (an observed
	// generation, as OCM's other rollout consumers read one). On the
	// managed cluster's own copy of the Policy it holds the same hub
	// number, not the copy's generation; on a root policy it is unset. A
	// Canopy extension; OCM ignores it.
	//
	// +optional
	EvaluatedGeneration int64 `json:"evaluatedGeneration,omitempty"`
}

// RolloutPhase is where the rollout of a root policy stands.
type RolloutPhase string

const (
	// RolloutProgressing means some clusters still wait for the current
	// spec, or are updated and not Compliant yet.
	RolloutProgressing RolloutPhase = "Progressing"
	// RolloutSucceeded means every selected cluster has the current spec
	// and none is still progressing.
	RolloutSucceeded RolloutPhase = "Succeeded"
	// RolloutStopped means the rollout does not go on by itself; the
	// reason and message say why and what to do.
	RolloutStopped RolloutPhase = "Stopped"
)

// RolloutClusterState is where one cluster stands in a rollout.
type RolloutClusterState string

const (
	// RolloutWaiting means the cluster's replica does not have the current
	// spec yet (it keeps the previous one, or does not exist yet).
	RolloutWaiting RolloutClusterState = "Waiting"
	// RolloutClusterProgressing means the replica has the current spec and,
	// within the progressDeadline, its agent has not reported evaluating it
	// yet (status.evaluatedGeneration) or reports it Pending.
	RolloutClusterProgressing RolloutClusterState = "Progressing"
	// RolloutClusterSucceeded means the replica has the current spec, its
	// agent reported evaluating it (status.evaluatedGeneration is the
	// replica's generation), and it is Compliant.
	RolloutClusterSucceeded RolloutClusterState = "Succeeded"
	// RolloutClusterFailed means the replica has the current spec and its
	// agent reported it NonCompliant, or it was not Compliant within the
	// progressDeadline; it counts against maxFailures.
	RolloutClusterFailed RolloutClusterState = "Failed"
)

// RolloutStatus is the rollout of a root policy's current spec.
type RolloutStatus struct {
	// Type is the rollout strategy type in effect.
	//
	// +optional
	Type clusterv1alpha1.RolloutType `json:"type,omitempty"`

	// Phase is where the rollout stands.
	//
	// +optional
	// +kubebuilder:validation:Enum=Progressing;Succeeded;Stopped
	Phase RolloutPhase `json:"phase,omitempty"`

	// Reason is why the rollout stopped, in CamelCase (for example
	// MaxFailuresReached, ProgressDeadlineExceeded, InvalidRolloutStrategy,
	// DecisionGroupNotFound); empty while it goes on.
	//
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message says where the rollout stands and, when it stopped, what to do.
	//
	// +optional
	Message string `json:"message,omitempty"`

	// Groups are the decision groups of the bound Placements, in rollout
	// order.
	//
	// +optional
	Groups []RolloutGroupStatus `json:"groups,omitempty"`
}

// RolloutGroupStatus is the rollout in one decision group of a Placement.
type RolloutGroupStatus struct {
	// Placement is the name of the Placement the group belongs to.
	Placement string `json:"placement"`

	// GroupName is the decision group's name; empty for an unnamed group.
	//
	// +optional
	GroupName string `json:"groupName,omitempty"`

	// GroupIndex is the decision group's index.
	//
	// +optional
	GroupIndex int32 `json:"groupIndex,omitempty"`

	// Updated is how many clusters of the group have the current spec.
	//
	// +optional
	Updated int32 `json:"updated,omitempty"`

	// Progressing counts the clusters updated and not evaluated, or
	// Pending, within the progressDeadline.
	//
	// +optional
	Progressing int32 `json:"progressing,omitempty"`
	// Succeeded counts the clusters whose replica is Compliant on the
	// current generation.
	//
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// Failed counts the clusters NonCompliant on the current generation, or
	// not Compliant within the progressDeadline.
	//
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// Waiting counts the clusters that do not have the current spec yet.
	//
	// +optional
	Waiting int32 `json:"waiting,omitempty"`

	// Clusters are the group's clusters, sorted by name.
	//
	// +optional
	Clusters []RolloutClusterStatus `json:"clusters,omitempty"`
}

// RolloutClusterStatus is where one cluster stands in the rollout.
type RolloutClusterStatus struct {
	// Name is the managed cluster's name.
	Name string `json:"name"`

	// State is where the cluster stands.
	//
	// +kubebuilder:validation:Enum=Waiting;Progressing;Succeeded;Failed
	State RolloutClusterState `json:"state"`

	// UpdateTime is when the propagator first saw the cluster's replica
	// with the current spec; progressDeadline counts from it. Empty while
	// the cluster waits.
	//
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`

	// LastTransitionTime is when the cluster last changed state;
	// minSuccessTime counts from its turning Succeeded.
	//
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// Policy delivers policy templates (ConfigurationPolicy, HierarchyPolicy,
// ...) to the managed clusters its placement bindings select, and reports
// their compliance.
//
// Note: a root policy's namespace and name together may be at most 62
// characters, because its replicas carry the label value
// "<namespace>.<name>". CRD rules cannot read the namespace, so the
// schema only bounds the name (61, or 63 for replica names, which contain a
// dot); the ValidatingAdmissionPolicy shipped in deploy/crds/admission
// checks the sum.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=policies,scope=Namespaced,shortName=plc
// +kubebuilder:printcolumn:name="Remediation action",type="string",JSONPath=".spec.remediationAction"
// +kubebuilder:printcolumn:name="Compliance state",type="string",JSONPath=".status.compliant"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= (self.metadata.name.contains('.') ? 63 : 61)",message="the policy name is too long: the namespace and name of a policy together must be at most 62 characters"
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the policy.
	Spec PolicySpec `json:"spec"`

	// Status is the observed state of the policy.
	//
	// +optional
	Status PolicyStatus `json:"status,omitempty"`
}

// PolicyList is a list of Policy.
//
// +kubebuilder:object:root=true
type PolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the policies.
	Items []Policy `json:"items"`
}
