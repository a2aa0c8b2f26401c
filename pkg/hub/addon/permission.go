package addon

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/canopy-policy/canopy/pkg/hubrbac"
)

// Permission is the addon's permission hook: it grants the agent of a
// cluster hubrbac's Role in that cluster's namespace (policies and their
// status, events, the lease; nothing more), bound to the group OCM's
// registration gives only that agent. Both objects are owned by the
// ManagedClusterAddOn, so that disabling the addon revokes them.
//
// Note: the binding names hubrbac.Group, never the subjects of the
// registration status, which also hold a group shared by the agents of
// every cluster. A Role or RoleBinding that exists already keeps its
// metadata (addon-framework's apply only fixes rules, subjects and roleRef).
func Permission(kube kubernetes.Interface) agent.PermissionConfigFunc {
	return func(ctx context.Context, cluster *clusterv1.ManagedCluster, mca *addonv1beta1.ManagedClusterAddOn) error {
		owner := ownerReference(mca)
		role := hubrbac.Role(cluster.Name)
		role.OwnerReferences = []metav1.OwnerReference{owner}
		if _, _, err := utils.ApplyRole(ctx, kube.RbacV1(), role); err != nil {
			return fmt.Errorf("applying Role %s/%s: %w", role.Namespace, role.Name, err)
		}
		binding := hubrbac.RoleBinding(cluster.Name, hubrbac.GroupSubject(cluster.Name))
		binding.OwnerReferences = []metav1.OwnerReference{owner}
		if _, _, err := utils.ApplyRoleBinding(ctx, kube.RbacV1(), binding); err != nil {
			return fmt.Errorf("applying RoleBinding %s/%s: %w", binding.Namespace, binding.Name, err)
		}
		return nil
	}
}

func ownerReference(mca *addonv1beta1.ManagedClusterAddOn) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         addonv1beta1.GroupVersion.String(),
		Kind:               "ManagedClusterAddOn",
		Name:               mca.Name,
		UID:                mca.UID,
		BlockOwnerDeletion: ptr.To(true),
	}
}
