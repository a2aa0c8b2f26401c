// Package api is the root of Canopy's API types. The types live in its
// subpackages, one per group version:
//
//   - v1: policy.open-cluster-management.io/v1 (Policy, PlacementBinding,
//     ConfigurationPolicy), wire-compatible with Open Cluster Management;
//   - v1beta1: policy.open-cluster-management.io/v1beta1 (PolicySet);
//   - hierarchy/v1alpha1: hierarchy.canopy.io/v1alpha1 (HierarchyPolicy,
//     SubNamespace).
//
// Note: these packages import only k8s.io/apimachinery, so that clients,
// tools and other projects can use them without controller-runtime.
package api
