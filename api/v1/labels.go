package v1

// Well-known labels of the policy framework. Their keys and values are
// those of Open Cluster Management, so that OCM tooling (consoles, CLIs,
// dashboards) reads Canopy's objects as it reads its own.
const (
	// RootPolicyLabel is set on every replicated policy; its value is
	// "<root namespace>.<root name>" of the root policy on the hub.
	//
	// Note: label values are at most 63 characters, hence the rule that a
	// root policy's namespace and name together are at most 62 characters.
	RootPolicyLabel = GroupName + "/root-policy"

	// ClusterNameLabel is set on every replicated policy; its value is the
	// name of the managed cluster the replica is for.
	ClusterNameLabel = GroupName + "/cluster-name"

	// ClusterNamespaceLabel is set on every replicated policy; its value is
	// the hub namespace of the managed cluster the replica is for.
	ClusterNamespaceLabel = GroupName + "/cluster-namespace"

	// PolicyLabel is set on every policy template object (for example a
	// ConfigurationPolicy) created from a Policy on a managed cluster; its
	// value is the name of that Policy.
	PolicyLabel = GroupName + "/policy"

	// PolicyTypeLabel marks the CustomResourceDefinitions of policy template
	// kinds (such as ConfigurationPolicy and HierarchyPolicy) with the value
	// PolicyTypeTemplate.
	PolicyTypeLabel = GroupName + "/policy-type"

	// PolicyTypeTemplate is the value of PolicyTypeLabel on the CRDs of
	// policy template kinds.
	PolicyTypeTemplate = "template"
)

// GroupName is the API group of this package, the prefix of its labels.
const GroupName = "policy.open-cluster-management.io"

// MaxRootPolicyNameLength is the largest len(namespace)+len(name) of a root
// Policy: the replica label value "<namespace>.<name>" must fit in 63
// characters.
const MaxRootPolicyNameLength = 62

// ConditionPropagated is the condition of a root Policy that says whether it
// is replicated to every managed cluster its bindings select, and if not,
// why (no binding, no decision, a failure); the hub's propagator owns it,
// `kubectl canopy explain` shows its message.
const ConditionPropagated = "Propagated"
