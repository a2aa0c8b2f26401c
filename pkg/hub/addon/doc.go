// Package addon runs Canopy's Open Cluster Management addon, canopy-policy,
// on the hub with addon-framework's AddonManager. It reconciles no root kind
// of its own and writes no status field directly: addon-framework's
// controllers write, for each ManagedClusterAddOn named canopy-policy,
//
//   - the ManifestWork in the cluster namespace that installs the agent
//     (Namespace, ServiceAccount, the ClusterRoles canopy-agent and
//     canopy-agent-enforcement with their bindings, the agent CRDs and the
//     agent Deployment), rendered per cluster by
//     AgentAddon.Manifests from the templates under manifests/ and the
//     cluster's AddOnDeploymentConfig;
//   - status.registrations (the agent's hub identity, issued through OCM's
//     CSR flow into the hub kubeconfig secret), status.namespace and the
//     RegistrationApplied, ManifestApplied and Available conditions;
//   - through the permission hook (Permission), the agent's Role and
//     RoleBinding in the cluster namespace, from pkg/hubrbac.
//
// Manager also creates the ClusterManagementAddOn canopy-policy when it is
// missing (the hub kustomize base in deploy/hub carries the same object).
// The agent's health is its Lease, named canopy-policy (Lease health
// prober).
package addon
