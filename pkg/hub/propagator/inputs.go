package propagator

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// placementInputs gathers from the cache what ResolvePlacement reads: the
// bindings and policy sets of the root's namespace, and the decisions and
// existence of the Placements of the bindings that name the root.
//
// Note: the lists are the cache's own objects (no deep copy, as every root
// of the namespace reads them); nothing may change them.
func (r *Reconciler) placementInputs(ctx context.Context, root *policyv1.Policy) (PlacementInputs, error) {
	in := PlacementInputs{
		PolicyName: root.Name,
		Namespace:  root.Namespace,
		Disabled:   root.Spec.Disabled,
		PolicySets: map[string]*policyv1beta1.PolicySet{},
		Decisions:  map[string][]string{},
		Placements: sets.New[string](),
	}
	bindings := &policyv1.PlacementBindingList{}
	if err := r.Client.List(ctx, bindings, client.InNamespace(root.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("listing placement bindings: %w", err)
	}
	in.Bindings = bindings.Items
	policySets := &policyv1beta1.PolicySetList{}
	if err := r.Client.List(ctx, policySets, client.InNamespace(root.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("listing policy sets: %w", err)
	}
	for i := range policySets.Items {
		in.PolicySets[policySets.Items[i].Name] = &policySets.Items[i]
	}
	for i := range in.Bindings {
		pb := &in.Bindings[i]
		if via, _ := SubjectsNaming(pb, root.Name, in.PolicySets); len(via) == 0 || pb.PlacementRef.Kind != placementKind {
			continue
		}
		if err := r.readPlacement(ctx, root.Namespace, pb.PlacementRef.Name, &in); err != nil {
			return in, err
		}
	}
	return in, nil
}

// readPlacement adds the decisions and existence of a Placement to in.
func (r *Reconciler) readPlacement(ctx context.Context, namespace, name string, in *PlacementInputs) error {
	if _, done := in.Decisions[name]; done {
		return nil
	}
	decisions := &clusterv1beta1.PlacementDecisionList{}
	if err := r.Client.List(ctx, decisions, client.InNamespace(namespace),
		client.MatchingLabels{clusterv1beta1.PlacementLabel: name}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the decisions of placement %s: %w", name, err)
	}
	in.Decisions[name] = ClustersOf(decisions.Items)
	placement := placementMetadata()
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, placement)
	switch {
	case err == nil:
		in.Placements.Insert(name)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("getting placement %s: %w", name, err)
	}
	return nil
}

// policySetMembers reads the members of the PolicySets root depends on.
// PolicySets that do not exist are left out.
func (r *Reconciler) policySetMembers(ctx context.Context, root *policyv1.Policy) (replica.PolicySetMembers, error) {
	members := replica.PolicySetMembers{}
	for _, key := range replica.PolicySetDependencies(root) {
		set := &policyv1beta1.PolicySet{}
		if err := r.Client.Get(ctx, key, set); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("getting policy set %s: %w", key, err)
		}
		names := make([]string, 0, len(set.Spec.Policies))
		for _, p := range set.Spec.Policies {
			names = append(names, string(p))
		}
		members[key] = names
	}
	return members, nil
}

// replicasOf returns the policies labelled as replicas of rootLabel.
func (r *Reconciler) replicasOf(ctx context.Context, rootLabel string) (map[types.NamespacedName]*policyv1.Policy, error) {
	list := &policyv1.PolicyList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{rootPolicyIndex: rootLabel}); err != nil {
		return nil, fmt.Errorf("listing the replicas of %s: %w", rootLabel, err)
	}
	out := make(map[types.NamespacedName]*policyv1.Policy, len(list.Items))
	for i := range list.Items {
		out[client.ObjectKeyFromObject(&list.Items[i])] = &list.Items[i]
	}
	return out, nil
}

// placementMetadata is an empty Placement as the metadata-only cache holds it.
func placementMetadata() *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{}
	p.SetGroupVersionKind(schema.GroupVersionKind{Group: clusterv1beta1.GroupName, Version: "v1beta1", Kind: "Placement"})
	return p
}
