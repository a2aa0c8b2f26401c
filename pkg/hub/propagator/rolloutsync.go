package propagator

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	rolloutsdk "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/hubtemplates"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// RolloutStrategies returns, by Placement name, the rollout strategy
// other than All under which the root reaches the clusters of that
// Placement: the root's own spec.rolloutStrategy, else that of the
// PolicySet through which a binding names it. Only non-restricted
// bindings of a Placement count. A Placement through which one binding
// asks for All is left out: its clusters get the current spec at once.
func RolloutStrategies(root *policyv1.Policy, in PlacementInputs) map[string]clusterv1alpha1.RolloutStrategy {
	out := map[string]clusterv1alpha1.RolloutStrategy{}
	if in.Disabled {
		return out
	}
	all := sets.New[string]()
	bindings := slices.Clone(in.Bindings)
	slices.SortFunc(bindings, func(a, b policyv1.PlacementBinding) int { return cmp.Compare(a.Name, b.Name) })
	for i := range bindings {
		pb := &bindings[i]
		ref := pb.PlacementRef
		if pb.SubFilter == policyv1.Restricted || ref.Kind != placementKind || ref.APIGroup != clusterv1beta1.GroupName {
			continue
		}
		via, _ := SubjectsNaming(pb, root.Name, in.PolicySets)
		for _, set := range via {
			s := strategyThrough(root, set, in.PolicySets)
			if s == nil || s.Type == "" || s.Type == clusterv1alpha1.All {
				all.Insert(ref.Name)
			} else if _, seen := out[ref.Name]; !seen {
				out[ref.Name] = *s.DeepCopy()
			}
		}
	}
	for name := range all {
		delete(out, name)
	}
	return out
}

// strategyThrough is the rollout strategy of root when bound through the
// policy set named set ("" for the root itself), or nil.
func strategyThrough(root *policyv1.Policy, set string, policySets map[string]*policyv1beta1.PolicySet) *clusterv1alpha1.RolloutStrategy {
	if root.Spec.RolloutStrategy != nil || set == "" {
		return root.Spec.RolloutStrategy
	}
	if s := policySets[set]; s != nil {
		return s.Spec.RolloutStrategy
	}
	return nil
}

// rolloutPlacements reads the Placements under a rollout strategy, with
// their PlacementDecisions, from the cache.
func (r *Reconciler) rolloutPlacements(ctx context.Context, root *policyv1.Policy, in PlacementInputs) ([]RolloutPlacement, error) {
	strategies := RolloutStrategies(root, in)
	out := make([]RolloutPlacement, 0, len(strategies))
	for _, name := range slices.Sorted(maps.Keys(strategies)) {
		list := &clusterv1beta1.PlacementDecisionList{}
		if err := r.Client.List(ctx, list, client.InNamespace(root.Namespace),
			client.MatchingLabels{clusterv1beta1.PlacementLabel: name}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing the decisions of placement %s: %w", name, err)
		}
		p := RolloutPlacement{Name: name, Namespace: root.Namespace, Strategy: strategies[name]}
		for i := range list.Items {
			p.Decisions = append(p.Decisions, &list.Items[i])
		}
		out = append(out, p)
	}
	return out, nil
}

// preparedReplica is the replica of one cluster, resolved and compared
// with the existing one, before it is written.
type preparedReplica struct {
	desired, existing *policyv1.Policy
	templates         hubtemplates.Result
	upToDate          bool
}

// writeReplicas writes the prepared replicas that the rollout lets have
// the current spec (all of them without a rollout strategy), and sets the
// root's status.rollout.
func (r *Reconciler) writeReplicas(ctx context.Context, root *policyv1.Policy, prepared []preparedReplica, gated []RolloutPlacement, out *syncOutcome) {
	if len(gated) == 0 {
		root.Status.Rollout = nil
		for _, p := range prepared {
			r.writeReplica(ctx, root, p, out)
		}
		return
	}
	in := RolloutInputs{Placements: gated, Clusters: map[string]RolloutCluster{}, Previous: root.Status.Rollout, Now: rolloutsdk.RolloutClock.Now()}
	for _, p := range prepared {
		c := RolloutCluster{Updated: p.upToDate}
		if p.existing != nil {
			c.Compliance = p.existing.Status.ComplianceState
		}
		in.Clusters[p.desired.Namespace] = c
	}
	plan := PlanRollout(in)
	written := sets.New[string]()
	for _, p := range prepared {
		cluster := p.desired.Namespace
		if !p.upToDate && plan.Gated.Has(cluster) && !plan.ToApply.Has(cluster) {
			continue // Note: the replica keeps its previous spec, or is not created yet
		}
		if r.writeReplica(ctx, root, p, out) && !p.upToDate {
			written.Insert(cluster)
		}
	}
	root.Status.Rollout = plan.Status(written)
	out.recheck, out.invalidRollout = plan.RecheckAfter, plan.Invalid
}

// InvalidRolloutCondition is ConditionPropagated of a root policy whose
// rollout strategy cannot be read.
func InvalidRolloutCondition(root *policyv1.Policy, err error) metav1.Condition {
	return metav1.Condition{
		Type:               ConditionPropagated,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: root.Generation,
		Reason:             ReasonInvalidRolloutStrategy,
		Message: truncate(fmt.Sprintf("The rollout strategy cannot be read, so no cluster gets the current spec through it: %v. "+
			"Fix spec.rolloutStrategy of the policy or of its PolicySet.", err)),
	}
}

// withRollout says, in a True ConditionPropagated, how many selected
// clusters do not have the current spec yet because of the rollout.
func withRollout(c metav1.Condition, res Resolution, rollout *policyv1.RolloutStatus) metav1.Condition {
	if rollout == nil || c.Status != metav1.ConditionTrue {
		return c
	}
	waiting := 0
	for _, g := range rollout.Groups {
		waiting += int(g.Waiting)
	}
	if waiting > 0 {
		c.Message = truncate(withProblems(fmt.Sprintf("Replicated with the current spec to %d of %d selected managed clusters; "+
			"the others wait for the rollout strategy to reach them (status.rollout says where it stands).",
			len(res.Clusters)-waiting, len(res.Clusters)), res.Problems))
	}
	return c
}

// complianceChanged passes the replica updates that change
// status.compliant, which moves a rollout on.
var complianceChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldP, okOld := e.ObjectOld.(*policyv1.Policy)
		newP, okNew := e.ObjectNew.(*policyv1.Policy)
		return okOld && okNew && replica.IsReplica(newP) && oldP.Status.ComplianceState != newP.Status.ComplianceState
	},
}

// replicaToRolloutRoot maps a replica to its root when the root is being
// rolled out (it has status.rollout): only then does the compliance of a
// replica change what the propagator writes.
func (r *Reconciler) replicaToRolloutRoot(ctx context.Context, obj client.Object) []reconcile.Request {
	reqs := replicaToRoot(ctx, obj)
	if len(reqs) == 0 {
		return nil
	}
	root := &policyv1.Policy{}
	if err := r.Client.Get(ctx, reqs[0].NamespacedName, root); err != nil || root.Status.Rollout == nil {
		return nil
	}
	return reqs
}
