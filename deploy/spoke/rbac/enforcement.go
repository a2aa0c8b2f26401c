package rbac

// The agent's enforcement permissions on the managed cluster, generated into
// rbac/enforcement/role.yaml as the ClusterRole canopy-agent-enforcement,
// apart from the agent's own machinery (rbac/role.yaml, canopy-agent, from
// the markers of cmd/spoke and pkg/spoke).
//
// What policies check and enforce is arbitrary: a ConfigurationPolicy
// reads (inform) and writes (enforce) any kind, a dependency may name any
// kind, and a HierarchyPolicy creates, updates and deletes the kinds its
// trees declare and lists every kind to find what it applied earlier. So the
// default grants everything. A cluster administrator may narrow this one
// ClusterRole to the kinds the fleet's policies manage; a template reaching
// beyond it is reported NonCompliant with the API server's Forbidden message.
//
// +kubebuilder:rbac:groups=*,resources=*,verbs=*
