// Package spoke embeds the agent's generated RBAC (rbac/role.yaml, written
// by `make manifests` from the +kubebuilder:rbac markers of cmd/spoke and
// pkg/spoke), so that the hub's addon manager delivers to each managed
// cluster the same ClusterRole as the kustomize base in this directory.
package spoke

import (
	_ "embed" // for go:embed
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

//go:embed rbac/role.yaml
var roleYAML []byte

// ClusterRole returns the agent's ClusterRole, canopy-agent.
func ClusterRole() (*rbacv1.ClusterRole, error) {
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(roleYAML, role); err != nil {
		return nil, fmt.Errorf("decoding deploy/spoke/rbac/role.yaml: %w", err)
	}
	if role.Kind != "ClusterRole" || role.Name == "" {
		return nil, fmt.Errorf("deploy/spoke/rbac/role.yaml: not a ClusterRole: %s %s", role.APIVersion, role.Kind)
	}
	return role, nil
}
