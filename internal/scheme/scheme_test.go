package scheme_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/canopy-policy/canopy/internal/scheme"
)

func TestNew(t *testing.T) {
	s := scheme.New()
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Namespace"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
		{Group: "policy.open-cluster-management.io", Version: "v1", Kind: "Policy"},
		{Group: "policy.open-cluster-management.io", Version: "v1", Kind: "PlacementBinding"},
		{Group: "policy.open-cluster-management.io", Version: "v1", Kind: "ConfigurationPolicy"},
		{Group: "policy.open-cluster-management.io", Version: "v1beta1", Kind: "PolicySet"},
		{Group: "hierarchy.canopy.io", Version: "v1alpha1", Kind: "HierarchyPolicy"},
		{Group: "hierarchy.canopy.io", Version: "v1alpha1", Kind: "SubNamespace"},
		{Group: "cluster.open-cluster-management.io", Version: "v1", Kind: "ManagedCluster"},
		{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Kind: "Placement"},
		{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Kind: "PlacementDecision"},
		{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Kind: "ManagedClusterSet"},
		{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Kind: "ManagedClusterSetBinding"},
		{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: "ClusterManagementAddOn"},
		{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: "ManagedClusterAddOn"},
		{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: "AddOnDeploymentConfig"},
		{Group: "addon.open-cluster-management.io", Version: "v1beta1", Kind: "ClusterManagementAddOn"},
		{Group: "work.open-cluster-management.io", Version: "v1", Kind: "ManifestWork"},
		{Group: "work.open-cluster-management.io", Version: "v1", Kind: "AppliedManifestWork"},
	} {
		NewWithT(t).Expect(s.Recognizes(gvk)).To(BeTrue(), gvk.String())
	}
	NewWithT(t).Expect(scheme.New()).NotTo(BeIdenticalTo(s), "each call returns a new scheme")
}
