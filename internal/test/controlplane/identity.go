package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// KubeconfigAs returns the path of a kubeconfig for user on c, authorized by
// exactly the ClusterRoles in the YAML files clusterRolePaths (relative to
// the repository root, e.g. deploy/hub/rbac/role.yaml, the role generated
// from the controllers' RBAC markers). A binary run with it fails wherever
// its markers are missing a permission, as it would on a real cluster. The
// first role is created under the name user, the others as user-<name>.
func (c *ControlPlane) KubeconfigAs(ctx context.Context, dir, user string, clusterRolePaths ...string) (string, error) {
	for i, path := range clusterRolePaths {
		role, err := readClusterRole(path)
		if err != nil {
			return "", err
		}
		role.Name = user
		if i > 0 {
			role.Name = user + "-" + role.Name
		}
		if err := c.bindClusterRole(ctx, user, role); err != nil {
			return "", err
		}
	}
	cfg, err := c.AddUser(user)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, user+".kubeconfig")
	if err := WriteKubeconfig(path, user, cfg); err != nil {
		return "", fmt.Errorf("writing the kubeconfig of %s: %w", user, err)
	}
	return path, nil
}

// bindClusterRole creates role and a ClusterRoleBinding of it to user.
func (c *ControlPlane) bindClusterRole(ctx context.Context, user string, role *rbacv1.ClusterRole) error {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := c.Client.Create(ctx, role); err != nil {
		return fmt.Errorf("creating ClusterRole %s: %w", role.Name, err)
	}
	if err := c.Client.Create(ctx, binding); err != nil {
		return fmt.Errorf("creating ClusterRoleBinding %s: %w", binding.Name, err)
	}
	return nil
}

func readClusterRole(path string) (*rbacv1.ClusterRole, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return nil, fmt.Errorf("reading ClusterRole %s: %w", path, err)
	}
	return role, nil
}
