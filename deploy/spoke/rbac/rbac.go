// Package rbac embeds the spoke agent's generated RBAC, written by `make
// manifests` from +kubebuilder:rbac markers, so that the hub's addon manager
// delivers to each managed cluster the same ClusterRoles as the kustomize
// base in deploy/spoke:
//
//   - role.yaml, canopy-agent: the agent's own machinery (its CRDs,
//     events, leases, namespaces), from the markers of cmd/spoke and
//     pkg/spoke; least privilege.
//   - enforcement/role.yaml, canopy-agent-enforcement: what policies
//     read and write (enforcement.go); broad by default, for cluster
//     administrators to narrow.
package rbac

import (
	_ "embed" // for go:embed
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

//go:embed role.yaml
var roleYAML []byte

//go:embed enforcement/role.yaml
var enforcementYAML []byte

// ClusterRole returns the agent's ClusterRole for its own machinery,
// canopy-agent.
func ClusterRole() (*rbacv1.ClusterRole, error) {
	return decodeClusterRole("deploy/spoke/rbac/role.yaml", roleYAML)
}

// EnforcementClusterRole returns the ClusterRole of what the agent's
// policies read and write, canopy-agent-enforcement.
func EnforcementClusterRole() (*rbacv1.ClusterRole, error) {
	return decodeClusterRole("deploy/spoke/rbac/enforcement/role.yaml", enforcementYAML)
}

func decodeClusterRole(path string, data []byte) (*rbacv1.ClusterRole, error) {
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	if role.Kind != "ClusterRole" || role.Name == "" {
		return nil, fmt.Errorf("%s: not a ClusterRole: %s %s", path, role.APIVersion, role.Kind)
	}
	return role, nil
}
