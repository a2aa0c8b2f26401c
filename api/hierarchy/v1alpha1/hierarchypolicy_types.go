package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Node is one node of the declared namespace tree. A concrete node is a
// namespace of the same name; an abstract node is never materialized and
// only carries resources and metadata for its descendants.
//
// +kubebuilder:validation:XValidation:rule="!has(self.parent) || self.parent != self.name",message="a node cannot be its own parent"
type Node struct {
	// Name is the node's name: for a concrete node, the namespace's name.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Parent is the name of the parent node. Empty means a root of the tree.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Parent string `json:"parent,omitempty"`

	// Abstract nodes are never created as namespaces.
	//
	// +optional
	Abstract bool `json:"abstract,omitempty"`

	// Labels are set on the node's namespace and those of its descendants.
	//
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are set on the node's namespace and those of its
	// descendants.
	//
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Resources are namespaced objects created in the node's namespace and
	// in those of all its descendants. Their metadata.namespace is ignored.
	//
	// +optional
	// +kubebuilder:validation:items:XEmbeddedResource
	// +kubebuilder:validation:items:XPreserveUnknownFields
	Resources []runtime.RawExtension `json:"resources,omitempty"`
}

// MergeRule says how a kind's objects of the same name, declared by several
// ancestors of a namespace, are combined.
//
// +kubebuilder:validation:Enum=Minimum
type MergeRule string

const (
	// MergeMinimum keeps, per key of spec.hard, the smallest quantity (for
	// ResourceQuota).
	MergeMinimum MergeRule = "Minimum"
)

// ManagedKind is a namespaced kind the policy owns fully in the namespaces
// it manages: objects of the kind that are not declared there are deleted,
// including objects created by hand.
type ManagedKind struct {
	// Group is the API group of the kind; empty for the core group.
	//
	// +optional
	Group string `json:"group,omitempty"`

	// Kind is the kind.
	//
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// Merge, when set, allows several ancestors to declare an object of the
	// same name and says how to combine them; otherwise that is an error.
	//
	// +optional
	Merge MergeRule `json:"merge,omitempty"`
}

// GroupKind names a kind by group.
type GroupKind struct {
	// Group is the API group of the kind; empty for the core group.
	//
	// +optional
	Group string `json:"group,omitempty"`

	// Kind is the kind.
	//
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
}

// Propagation configures live propagation between namespaces labelled with
// hierarchy.canopy.io/type, template and parent.
type Propagation struct {
	// Kinds are the namespaced kinds whose objects annotated with
	// hierarchy.canopy.io/propagate are copied to descendant namespaces.
	//
	// +optional
	Kinds []GroupKind `json:"kinds,omitempty"`

	// LabelKeys are glob patterns of the namespace label keys copied from a
	// namespace to its descendants.
	//
	// +optional
	LabelKeys []string `json:"labelKeys,omitempty"`

	// AnnotationKeys are glob patterns of the namespace annotation keys
	// copied from a namespace to its descendants.
	//
	// +optional
	AnnotationKeys []string `json:"annotationKeys,omitempty"`
}

// CloneSource is an existing object that a generator copies.
type CloneSource struct {
	// APIVersion is the apiVersion of the object to copy.
	//
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`

	// Kind is the kind of the object to copy.
	//
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// Namespace is the namespace of the object to copy.
	//
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`

	// Name is the name of the object to copy; the copies have the same name.
	//
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// Generator creates an object in every namespace its selector matches,
// existing namespaces included, from inline data or by cloning an object.
//
// +kubebuilder:validation:ExactlyOneOf=data;clone
type Generator struct {
	// Name identifies the generator within the policy; it is part of the
	// hierarchy.canopy.io/generated-by label of what it creates.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// NamespaceSelector selects the namespaces to generate into. An empty
	// selector selects every namespace (except those Canopy never touches).
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// Data is the object to create: apiVersion, kind, metadata.name and
	// content. Its metadata.namespace is ignored.
	//
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	Data *runtime.RawExtension `json:"data,omitempty"`

	// Clone copies an existing object instead.
	//
	// +optional
	Clone *CloneSource `json:"clone,omitempty"`

	// Synchronize keeps the generated objects identical to their source, and
	// deletes them when the generator or the namespace's match goes. When
	// false, objects are only created where missing.
	//
	// +optional
	Synchronize bool `json:"synchronize,omitempty"`
}

// HierarchyPolicySpec declares a namespace tree, the objects its namespaces
// inherit, live propagation, and generators.
type HierarchyPolicySpec struct {
	// RemediationAction says whether the plan is only reported (inform) or
	// applied (enforce). The parent Policy's remediationAction, when set,
	// overrides it.
	//
	// +optional
	// +kubebuilder:default=inform
	RemediationAction policyv1.RemediationAction `json:"remediationAction,omitempty"`

	// Severity is the severity of a violation.
	//
	// +optional
	Severity policyv1.Severity `json:"severity,omitempty"`

	// Nodes are the nodes of the declared tree.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	Nodes []Node `json:"nodes,omitempty"`

	// ClusterResources are cluster-scoped objects to create and keep as
	// declared; removing one from the list deletes it.
	//
	// +optional
	// +kubebuilder:validation:items:XEmbeddedResource
	// +kubebuilder:validation:items:XPreserveUnknownFields
	ClusterResources []runtime.RawExtension `json:"clusterResources,omitempty"`

	// ManagedKinds are the namespaced kinds the policy owns fully in the
	// namespaces of its concrete nodes.
	//
	// +optional
	ManagedKinds []ManagedKind `json:"managedKinds,omitempty"`

	// Propagation configures live propagation.
	//
	// +optional
	Propagation *Propagation `json:"propagation,omitempty"`

	// Generators create objects in the namespaces their selectors match.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	Generators []Generator `json:"generators,omitempty"`
}

// HierarchyPolicyStatus is the observed state of a HierarchyPolicy.
type HierarchyPolicyStatus struct {
	// ComplianceState is Compliant when the cluster matches the policy,
	// NonCompliant otherwise (including, under inform, when the plan is not
	// empty). Empty means unknown.
	//
	// +optional
	// +kubebuilder:validation:Enum=Compliant;Pending;NonCompliant
	ComplianceState policyv1.ComplianceState `json:"compliant,omitempty"`

	// Conditions say whether the declared tree is valid and applied.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ManagedNamespaces are the namespaces of the concrete nodes, sorted.
	//
	// +optional
	// +listType=set
	ManagedNamespaces []string `json:"managedNamespaces,omitempty"`

	// Namespaces count, per namespace the policy writes to, its objects and
	// what is still to do there, sorted by name. The list may be truncated;
	// the conditions say so.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	Namespaces []NamespaceCounts `json:"namespaces,omitempty"`

	// RelatedObjects are the objects the latest evaluation found out of
	// line (or acted on), with the reason, as ConfigurationPolicy reports
	// them. The list may be truncated; the conditions say so.
	//
	// +optional
	RelatedObjects []policyv1.RelatedObject `json:"relatedObjects,omitempty"`

	// LastEvaluated is when an evaluation last changed the status: an
	// evaluation that finds everything as it was writes nothing, not even
	// this time.
	//
	// +optional
	LastEvaluated *metav1.Time `json:"lastEvaluated,omitempty"`

	// LastEvaluatedGeneration is the metadata.generation that was evaluated
	// last.
	//
	// +optional
	LastEvaluatedGeneration int64 `json:"lastEvaluatedGeneration,omitempty"`
}

// NamespaceCounts counts the objects of a HierarchyPolicy in one namespace.
type NamespaceCounts struct {
	// Name is the namespace.
	Name string `json:"name"`

	// Declared is how many objects the policy declares there.
	Declared int32 `json:"declared"`

	// InSync is how many of them are as declared.
	InSync int32 `json:"inSync"`

	// Planned is how many creates, updates and deletes remain to be done
	// (under inform: would be done).
	//
	// +optional
	Planned int32 `json:"planned,omitempty"`

	// Conflicts is how many objects belong to another manager and are left
	// alone.
	//
	// +optional
	Conflicts int32 `json:"conflicts,omitempty"`
}

// HierarchyPolicy is a policy template for Canopy's hierarchical namespace
// syncer. It lives in the cluster namespace beside its parent Policy, but
// manages namespaces and cluster-scoped objects across the cluster, and
// reports compliance with the same events as ConfigurationPolicy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=hierarchypolicies,scope=Namespaced,shortName=hpol
// +kubebuilder:metadata:labels="policy.open-cluster-management.io/policy-type=template"
// +kubebuilder:printcolumn:name="Remediation action",type="string",JSONPath=".spec.remediationAction"
// +kubebuilder:printcolumn:name="Compliance state",type="string",JSONPath=".status.compliant"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="the name of a HierarchyPolicy is a label value (hierarchy.canopy.io/policy): at most 63 characters"
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.generators) || self.spec.generators.all(g, size(self.metadata.name) + size(g.name) <= 62)",message="the policy name and each generator name together must be at most 62 characters: the label value hierarchy.canopy.io/generated-by=<policy>.<generator> must fit in 63"
type HierarchyPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the declared hierarchy.
	//
	// +optional
	Spec HierarchyPolicySpec `json:"spec,omitempty"`

	// Status is the observed compliance.
	//
	// +optional
	Status HierarchyPolicyStatus `json:"status,omitempty"`
}

// HierarchyPolicyList is a list of HierarchyPolicy.
//
// +kubebuilder:object:root=true
type HierarchyPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the hierarchy policies.
	Items []HierarchyPolicy `json:"items"`
}
