package main

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/canopy-policy/canopy/internal/testenv"
)

// defaultClusterSet is the set of clusters that carry no cluster-set label.
const defaultClusterSet = "default"

// decidePlacements writes a PlacementDecision for every Placement on the hub.
//
// Note: this is the demo's stand-in for OCM's placement controller, which
// does not run in the local environment. It honours cluster sets (by the
// cluster-set label; unlabelled clusters are in "default"), label-selector
// predicates and numberOfClusters; not claims, CEL, prioritizers, spread or
// tolerations.
func decidePlacements(ctx context.Context, env *testenv.Env) error {
	placements := &clusterv1beta1.PlacementList{}
	if err := env.Hub.Client.List(ctx, placements); err != nil {
		return fmt.Errorf("listing placements: %w", err)
	}
	clusters := &clusterv1.ManagedClusterList{}
	if err := env.Hub.Client.List(ctx, clusters); err != nil {
		return fmt.Errorf("listing managed clusters: %w", err)
	}
	for i := range placements.Items {
		p := &placements.Items[i]
		chosen, err := decide(p, clusters.Items)
		if err != nil {
			return fmt.Errorf("placement %s/%s: %w", p.Namespace, p.Name, err)
		}
		if err := env.SetPlacementDecisions(ctx, p.Namespace, p.Name, chosen...); err != nil {
			return err
		}
	}
	return nil
}

// decide returns the clusters p selects, sorted by name.
func decide(p *clusterv1beta1.Placement, clusters []clusterv1.ManagedCluster) ([]string, error) {
	selectors, err := predicateSelectors(p.Spec.Predicates)
	if err != nil {
		return nil, err
	}
	var chosen []string
	for _, c := range clusters {
		if inClusterSets(c, p.Spec.ClusterSets) && matchesAny(selectors, labels.Set(c.Labels)) {
			chosen = append(chosen, c.Name)
		}
	}
	slices.Sort(chosen)
	if n := p.Spec.NumberOfClusters; n != nil && int(*n) < len(chosen) {
		chosen = chosen[:*n]
	}
	return chosen, nil
}

func predicateSelectors(predicates []clusterv1beta1.ClusterPredicate) ([]labels.Selector, error) {
	selectors := make([]labels.Selector, 0, len(predicates))
	for _, pred := range predicates {
		s, err := metav1.LabelSelectorAsSelector(&pred.RequiredClusterSelector.LabelSelector)
		if err != nil {
			return nil, err
		}
		selectors = append(selectors, s)
	}
	return selectors, nil
}

// matchesAny reports whether set matches one of the selectors (predicates are
// alternatives); no predicate matches every cluster.
func matchesAny(selectors []labels.Selector, set labels.Set) bool {
	if len(selectors) == 0 {
		return true
	}
	return slices.ContainsFunc(selectors, func(s labels.Selector) bool { return s.Matches(set) })
}

func inClusterSets(c clusterv1.ManagedCluster, sets []string) bool {
	if len(sets) == 0 {
		return true
	}
	set, ok := c.Labels[clusterv1beta2.ClusterSetLabel]
	if !ok {
		set = defaultClusterSet
	}
	return slices.Contains(sets, set)
}
