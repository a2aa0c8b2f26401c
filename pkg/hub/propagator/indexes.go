package propagator

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// Cache indexes of the propagator.
const (
	// rootPolicyIndex indexes replicas by their RootPolicyLabel value.
	rootPolicyIndex = "propagator.canopy.io/root-policy"
	// policySetDependencyIndex indexes root policies by the PolicySets
	// ("<namespace>/<name>") they depend on.
	policySetDependencyIndex = "propagator.canopy.io/policyset-dependency"
	// placementIndex indexes PlacementBindings by the name of their Placement.
	placementIndex = "propagator.canopy.io/placement"
)

func addIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	for _, idx := range []struct {
		obj  client.Object
		name string
		fn   client.IndexerFunc
	}{
		{&policyv1.Policy{}, rootPolicyIndex, indexRootPolicy},
		{&policyv1.Policy{}, policySetDependencyIndex, indexPolicySetDependencies},
		{&policyv1.PlacementBinding{}, placementIndex, indexPlacement},
	} {
		if err := indexer.IndexField(ctx, idx.obj, idx.name, idx.fn); err != nil {
			return fmt.Errorf("adding index %s: %w", idx.name, err)
		}
	}
	return nil
}

func indexRootPolicy(obj client.Object) []string {
	if v, ok := obj.GetLabels()[policyv1.RootPolicyLabel]; ok {
		return []string{v}
	}
	return nil
}

func indexPolicySetDependencies(obj client.Object) []string {
	p, ok := obj.(*policyv1.Policy)
	if !ok || replica.IsReplica(p) {
		return nil
	}
	var out []string
	for _, key := range replica.PolicySetDependencies(p) {
		out = append(out, key.String())
	}
	return out
}

func indexPlacement(obj client.Object) []string {
	pb, ok := obj.(*policyv1.PlacementBinding)
	if !ok || pb.PlacementRef.Kind != placementKind {
		return nil
	}
	return []string{pb.PlacementRef.Name}
}

// replicaToRoot maps a replica to its root policy.
func replicaToRoot(_ context.Context, obj client.Object) []reconcile.Request {
	key, ok := replica.RootOf(obj.GetLabels()[policyv1.RootPolicyLabel])
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// bindingToPolicies maps a PlacementBinding to the policies it names,
// directly or through policy sets. Subjects of unknown kinds map to the
// policy of the same name, whose condition reports them.
func (r *Reconciler) bindingToPolicies(ctx context.Context, obj client.Object) []reconcile.Request {
	pb, ok := obj.(*policyv1.PlacementBinding)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	for _, s := range pb.Subjects {
		if s.APIGroup == policyv1.GroupName && s.Kind == policyv1beta1.PolicySetKind {
			reqs = append(reqs, r.membersOf(ctx, types.NamespacedName{Namespace: pb.Namespace, Name: s.Name})...)
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pb.Namespace, Name: s.Name}})
	}
	return reqs
}

// membersOf returns requests for the members of a PolicySet.
func (r *Reconciler) membersOf(ctx context.Context, key types.NamespacedName) []reconcile.Request {
	set := &policyv1beta1.PolicySet{}
	if err := r.Client.Get(ctx, key, set); err != nil {
		if client.IgnoreNotFound(err) != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to get a policy set", "policySet", key)
		}
		return nil
	}
	return setMembers(set)
}

func setMembers(set *policyv1beta1.PolicySet) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(set.Spec.Policies))
	for _, p := range set.Spec.Policies {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: set.Namespace, Name: string(p)}})
	}
	return reqs
}

// policySetToPolicies maps a PolicySet to its members and to the policies
// that depend on it.
func (r *Reconciler) policySetToPolicies(ctx context.Context, obj client.Object) []reconcile.Request {
	set, ok := obj.(*policyv1beta1.PolicySet)
	if !ok {
		return nil
	}
	reqs := setMembers(set)
	dependants := &policyv1.PolicyList{}
	if err := r.Client.List(ctx, dependants,
		client.MatchingFields{policySetDependencyIndex: client.ObjectKeyFromObject(set).String()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the dependants of a policy set", "policySet", client.ObjectKeyFromObject(set))
		return reqs
	}
	for i := range dependants.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&dependants.Items[i])})
	}
	return reqs
}

// decisionToPolicies maps a PlacementDecision to the policies bound to its
// Placement.
func (r *Reconciler) decisionToPolicies(ctx context.Context, obj client.Object) []reconcile.Request {
	placement := obj.GetLabels()[clusterv1beta1.PlacementLabel]
	if placement == "" {
		return nil
	}
	return r.placementToPolicies(ctx, obj.GetNamespace(), placement)
}

// placementObjectToPolicies maps a Placement to the policies bound to it.
func (r *Reconciler) placementObjectToPolicies(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.placementToPolicies(ctx, obj.GetNamespace(), obj.GetName())
}

func (r *Reconciler) placementToPolicies(ctx context.Context, namespace, placement string) []reconcile.Request {
	bindings := &policyv1.PlacementBindingList{}
	if err := r.Client.List(ctx, bindings, client.InNamespace(namespace), client.MatchingFields{placementIndex: placement}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the bindings of a placement", "placement", types.NamespacedName{Namespace: namespace, Name: placement})
		return nil
	}
	var reqs []reconcile.Request
	for i := range bindings.Items {
		reqs = append(reqs, r.bindingToPolicies(ctx, &bindings.Items[i])...)
	}
	return reqs
}
