package syncer

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

// This file exposes the syncer's view of live propagation to the kubectl
// plugin (tree), without a Reconciler; the declared tree itself is
// pkg/hierarchy's (DeclaredTree, TreeProblems).

// SourceNamespace returns the namespace ns copies from in live
// propagation: its parent label, else its template label; "" when it is in
// no tree.
func SourceNamespace(ns *corev1.Namespace) string { return sourceOf(ns) }

// PropagatedKinds returns the kinds live propagation copies, from the
// enforced HierarchyPolicies' spec.propagation.kinds, sorted.
func PropagatedKinds(policies []hierarchyv1alpha1.HierarchyPolicy) []schema.GroupKind {
	return propagationOf(policies).kinds
}
