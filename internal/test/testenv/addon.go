package testenv

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EnableAddon enables the addon name on cluster as `clusteradm addon enable`
// does, with the owner reference OCM's hub addon-manager gives the
// ManagedClusterAddOn (that controller does not run here). It waits for the
// ClusterManagementAddOn, which the addon's manager creates, for up to a
// minute. Enabling an enabled addon is a no-op.
func (e *Env) EnableAddon(ctx context.Context, cluster, name string) error {
	cma := &addonv1beta1.ClusterManagementAddOn{}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return e.Hub.Client.Get(ctx, client.ObjectKey{Name: name}, cma) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for ClusterManagementAddOn %s: %w", name, err)
	}
	mca := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: cluster,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: addonv1beta1.GroupVersion.String(),
			Kind: "ClusterManagementAddOn", Name: cma.Name, UID: cma.UID, Controller: ptr.To(true)}},
	}}
	if err := client.IgnoreAlreadyExists(e.Hub.Client.Create(ctx, mca)); err != nil {
		return fmt.Errorf("enabling addon %s on %s: %w", name, cluster, err)
	}
	return nil
}
