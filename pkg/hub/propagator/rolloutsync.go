package propagator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	rolloutsdk "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/hubtemplates"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

// RolloutStrategies returns, by Placement name, the rollout strategy
// other than All under which the root reaches the clusters of that
// Placement: the root's own spec.rolloutStrategy, else that of the
// PolicySet through which a binding names it. Only non-restricted
// bindings of a Placement count. A Placement through which one binding
// asks for All is left out: its clusters get the current spec at once.
func RolloutStrategies(root *policyv1.Policy, in PlacementInputs) map[string]clusterv1alpha1.RolloutStrategy {
	out := map[string]clusterv1alpha1.RolloutStrategy{}
	for name, src := range rolloutSources(root, in) {
		out[name] = src.strategy
	}
	return out
}

// rolloutSource is the strategy under which a root reaches the clusters of
// a Placement, and the PolicySet it comes from ("" for the root's own).
type rolloutSource struct {
	strategy clusterv1alpha1.RolloutStrategy
	set      string
}

// rolloutSources is RolloutStrategies with the PolicySet of each strategy.
func rolloutSources(root *policyv1.Policy, in PlacementInputs) map[string]rolloutSource {
	out := map[string]rolloutSource{}
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
				out[ref.Name] = rolloutSource{strategy: *s.DeepCopy(), set: map[bool]string{true: set}[root.Spec.RolloutStrategy == nil]}
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
// their PlacementDecisions and, through a PolicySet, where its other
// members stand, from the cache.
func (r *Reconciler) rolloutPlacements(ctx context.Context, root *policyv1.Policy, in PlacementInputs) ([]RolloutPlacement, error) {
	sources := rolloutSources(root, in)
	out := make([]RolloutPlacement, 0, len(sources))
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		list := &clusterv1beta1.PlacementDecisionList{}
		if err := r.Client.List(ctx, list, client.InNamespace(root.Namespace),
			client.MatchingLabels{clusterv1beta1.PlacementLabel: name}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing the decisions of placement %s: %w", name, err)
		}
		p := RolloutPlacement{Name: name, Namespace: root.Namespace, Strategy: sources[name].strategy, PolicySet: sources[name].set}
		for i := range list.Items {
			p.Decisions = append(p.Decisions, &list.Items[i])
		}
		if p.PolicySet != "" {
			if err := r.setMembers(ctx, root, in.PolicySets[p.PolicySet], &p); err != nil {
				return nil, err
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// setMembers reads where the other members of set that roll out with root
// (they exist, are enabled and have no strategy of their own) stand on the
// clusters of p, from their status.rollout.
func (r *Reconciler) setMembers(ctx context.Context, root *policyv1.Policy, set *policyv1beta1.PolicySet, p *RolloutPlacement) error {
	p.Members, p.memberRollouts = map[string]map[string]policyv1.RolloutClusterStatus{}, map[string]*policyv1.RolloutStatus{}
	for _, name := range set.Spec.Policies {
		if string(name) == root.Name {
			continue
		}
		member := &policyv1.Policy{} // Note: from the API server, as previousRollout reads the root's
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: root.Namespace, Name: string(name)}, member); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("getting member %s of policy set %s: %w", name, set.Name, err)
		}
		if member.Spec.Disabled || member.Spec.RolloutStrategy != nil {
			continue
		}
		entries := map[string]policyv1.RolloutClusterStatus{}
		for _, g := range ptr.Deref(member.Status.Rollout, policyv1.RolloutStatus{}).Groups {
			for _, c := range g.Clusters {
				if g.Placement == p.Name {
					entries[c.Name] = c
				}
			}
		}
		p.Members[string(name)], p.memberRollouts[string(name)] = entries, member.Status.Rollout
	}
	return nil
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
//
// The status.rollout that shows the gated clusters about to get a new spec
// as updated is written before their replicas: a restart, or a failed
// write, never leaves a replica of a new generation that the root's status
// does not show updated, and no later group is written before it is. That
// write advances status, root's deferred status write, which then carries
// only what the reconcile changes besides.
func (r *Reconciler) writeReplicas(ctx context.Context, root *policyv1.Policy, status rootStatus, prepared []preparedReplica,
	gated []RolloutPlacement, out *syncOutcome) {
	if len(gated) == 0 {
		root.Status.Rollout = nil
		r.writeAll(ctx, root, prepared, out)
		return
	}
	current, err := r.previousRollout(ctx, root)
	if err != nil {
		out.failures = append(out.failures, err)
		return
	}
	previous := current.Status.Rollout
	in := RolloutInputs{Policy: root.Name, Placements: gated, Clusters: map[string]RolloutCluster{}, Previous: previous, Now: rolloutsdk.RolloutClock.Now()}
	r.rolloutClusters(ctx, prepared, PreviousEntries(previous), in.Clusters, out)
	plan := PlanRollout(in)
	var toWrite []preparedReplica
	respecced := sets.New[string]()
	for _, p := range prepared {
		cluster, newSpec := p.desired.Namespace, !sameSpec(p.desired, p.existing)
		switch {
		case p.upToDate:
		case newSpec && plan.Gated.Has(cluster) && !plan.ToApply.Has(cluster): // Note: the replica keeps its previous spec, or is not created yet
		default:
			toWrite = append(toWrite, p)
			if newSpec && plan.Gated.Has(cluster) {
				respecced.Insert(cluster)
			}
		}
	}
	root.Status.Rollout = plan.Status(respecced)
	out.recheck, out.invalidRollout = plan.RecheckAfter, plan.Invalid
	if respecced.Len() > 0 && !equality.Semantic.DeepEqual(previous, root.Status.Rollout) {
		if err := r.recordRollout(ctx, root, status, current); err != nil {
			root.Status.Rollout = previous
			out.failures = append(out.failures, err)
			return
		}
	}
	written := r.writeInGroupOrder(ctx, root, &plan, toWrite, out)
	root.Status.Rollout = plan.Status(respecced.Intersection(written))
	r.updateSetConditions(ctx, root, gated, out)
}

// writeInGroupOrder writes ps decision group by decision group, in the
// plan's order, the clusters of no gated group first: no replica of a
// later group is written before those of the earlier ones, also when a
// change reaches several groups at once (one that changes only metadata);
// a group's replicas are written at once (writeAll). It returns the
// clusters whose replica now has the desired spec.
func (r *Reconciler) writeInGroupOrder(ctx context.Context, root *policyv1.Policy, plan *RolloutPlan, ps []preparedReplica,
	out *syncOutcome) sets.Set[string] {
	rank := map[string]int{}
	for i, g := range plan.groups {
		for _, c := range g.clusters {
			if _, seen := rank[c]; !seen {
				rank[c] = i + 1
			}
		}
	}
	batches := map[int][]preparedReplica{}
	for _, p := range ps {
		batches[rank[p.desired.Namespace]] = append(batches[rank[p.desired.Namespace]], p)
	}
	written := sets.New[string]()
	for _, k := range slices.Sorted(maps.Keys(batches)) {
		written = written.Union(r.writeAll(ctx, root, batches[k], out))
	}
	return written
}

// sameSpec reports whether existing, when there is one, has the spec of
// desired: then writing desired changes only its metadata, which leaves
// the replica's generation, and what its agent evaluated, as they are.
func sameSpec(desired, existing *policyv1.Policy) bool {
	return existing != nil && specsEqual(&desired.Spec, &existing.Spec)
}

// rolloutReads bounds the replicas rolloutClusters reads again from the API
// server at once: a group of a hundred clusters turning Succeeded is read in
// the time of four round trips, not of a hundred in series (the API server
// answers a GET in a fraction of what a write costs it).
const rolloutReads = 32

// rolloutClusters sets, in clusters, where the replica of each prepared
// cluster stands (rolloutCluster), given the clusters' previous entries.
func (r *Reconciler) rolloutClusters(ctx context.Context, prepared []preparedReplica, entries map[string]policyv1.RolloutClusterStatus,
	clusters map[string]RolloutCluster, out *syncOutcome) {
	results := make([]RolloutCluster, len(prepared))
	errs := make([]error, len(prepared))
	sem := make(chan struct{}, rolloutReads)
	var wg sync.WaitGroup
	for i, p := range prepared {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i], errs[i] = r.rolloutCluster(ctx, p, entries[p.desired.Namespace])
		})
	}
	wg.Wait()
	for i, p := range prepared {
		clusters[p.desired.Namespace] = results[i]
		if errs[i] != nil {
			out.retry = append(out.retry, errs[i])
		}
	}
}

// rolloutCluster reads where the replica of a prepared cluster stands, from
// one object: its spec, compliance and evaluated generation are never
// mixed from two reads. A replica the cache shows newly Succeeded (its
// previous entry, prev, is not) is read again from the API server, so that
// a lagging cache never moves the rollout on by itself; one that cannot be
// read is not Succeeded (the read is retried).
func (r *Reconciler) rolloutCluster(ctx context.Context, p preparedReplica, prev policyv1.RolloutClusterStatus) (RolloutCluster, error) {
	c := clusterOf(p.desired, p.existing)
	if !c.Updated || !c.Evaluated || c.Compliance != policyv1.Compliant || prev.State == policyv1.RolloutClusterSucceeded {
		return c, nil
	}
	current := &policyv1.Policy{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(p.existing), current); err != nil {
		if !apierrors.IsNotFound(err) {
			return RolloutCluster{}, fmt.Errorf("cluster %s: reading replica %s: %w", p.existing.Namespace, klog.KObj(p.existing), err)
		}
		return RolloutCluster{}, nil
	}
	return clusterOf(p.desired, current), nil
}

// clusterOf is where a replica, existing (nil: none), stands for a rollout
// of desired.
func clusterOf(desired, existing *policyv1.Policy) RolloutCluster {
	if existing == nil {
		return RolloutCluster{}
	}
	return RolloutCluster{
		Updated:    sameSpec(desired, existing),
		Compliance: existing.Status.ComplianceState,
		Evaluated:  existing.Status.EvaluatedGeneration == existing.Generation,
	}
}

// previousRollout reads the root from the API server, for its
// status.rollout.
//
// Note: the cache may not show yet the status the last reconcile wrote,
// and a stale status, in which a cluster updated since is still Succeeded
// on the previous spec, would let the rollout go on.
func (r *Reconciler) previousRollout(ctx context.Context, root *policyv1.Policy) (*policyv1.Policy, error) {
	current := &policyv1.Policy{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(root), current); err != nil {
		return nil, fmt.Errorf("reading the rollout status of %s: %w", klog.KObj(root), err)
	}
	return current, nil
}

// recordRollout writes root's status.rollout at once, before the replicas
// it shows updated are written, on current, the root as previousRollout
// read it (statuspatch: never on a same-named successor; the rollout alone
// is sent again on a version written since), and advances rootStatus, the
// deferred write, past it. A cache behind current (another spec or another
// object) plans nothing.
func (r *Reconciler) recordRollout(ctx context.Context, root *policyv1.Policy, rootStatus rootStatus, current *policyv1.Policy) error {
	if current.UID != root.UID || current.Generation != root.Generation {
		return fmt.Errorf("recording the rollout of %s before updating its replicas: the cache shows generation %d, "+
			"the API server %d: %w", klog.KObj(root), root.Generation, current.Generation, errCacheBehind)
	}
	var err error
	status := statuspatch.Snapshot(r.Client, current, func(p *policyv1.Policy) any { return p.Status },
		statuspatch.ReadFrom[*policyv1.Policy](r.APIReader))
	current.Status.Rollout = root.Status.Rollout
	status.Apply(ctx, &err)
	if err != nil {
		return fmt.Errorf("recording the rollout of %s before updating its replicas: %w", klog.KObj(root), err)
	}
	rootStatus.Advance(current, func(from, to *policyv1.Policy) { to.Status.Rollout = from.Status.Rollout })
	return nil
}

// errCacheBehind says the hub's cache has not seen the latest root yet: the
// reconcile is retried.
var errCacheBehind = errors.New("the hub's cache is behind the API server")

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

// complianceChanged passes what moves a rollout on: the replica updates
// that change status.compliant or status.evaluatedGeneration (the agent
// reported on a new generation), and the root updates that change
// status.rollout (where a PolicySet's other members stand).
var complianceChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldP, okOld := e.ObjectOld.(*policyv1.Policy)
		newP, okNew := e.ObjectNew.(*policyv1.Policy)
		switch {
		case !okOld || !okNew:
			return false
		case !replica.IsReplica(newP):
			return !equality.Semantic.DeepEqual(oldP.Status.Rollout, newP.Status.Rollout)
		default:
			return oldP.Status.ComplianceState != newP.Status.ComplianceState ||
				oldP.Status.EvaluatedGeneration != newP.Status.EvaluatedGeneration
		}
	},
}

// replicaToRolloutRoot maps a replica to its root when the root is being
// rolled out (it has status.rollout): only then does the compliance of a
// replica change what the propagator writes. It maps a root to the other
// members of the PolicySets it rolls out with (rolloutSiblings).
func (r *Reconciler) replicaToRolloutRoot(ctx context.Context, obj client.Object) []reconcile.Request {
	if !replica.IsReplica(obj) {
		return r.rolloutSiblings(ctx, obj)
	}
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

// rolloutSiblings returns the other members of the PolicySets with a
// rollout strategy that list root, when root has no strategy of its own:
// they roll out with it as a unit, so where it stands gates them.
func (r *Reconciler) rolloutSiblings(ctx context.Context, obj client.Object) []reconcile.Request {
	root, ok := obj.(*policyv1.Policy)
	if !ok || root.Spec.RolloutStrategy != nil {
		return nil
	}
	list := &policyv1beta1.PolicySetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(root.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the policy sets of a policy", "policy", klog.KObj(root))
		return nil
	}
	seen := sets.New(root.Name)
	var reqs []reconcile.Request
	for i := range list.Items {
		set := &list.Items[i]
		if set.Spec.RolloutStrategy == nil || set.Spec.RolloutStrategy.Type == clusterv1alpha1.All || !IsMember(set, root.Name) {
			continue
		}
		for _, name := range set.Spec.Policies {
			if !seen.Has(string(name)) {
				seen.Insert(string(name))
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: root.Namespace, Name: string(name)}})
			}
		}
	}
	return reqs
}
