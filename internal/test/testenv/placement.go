package testenv

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// DecisionReason is the reason of every decision SetPlacementDecisions writes.
const DecisionReason = "SetByTestenv"

// DecisionGroup is one decision group of a Placement: its name (OCM's
// decisionStrategy.groupStrategy groupName, "" for the default group) and
// the clusters it selects.
type DecisionGroup struct {
	Name     string
	Clusters []string
}

// SetPlacementDecisions makes the hub's decisions for a Placement select
// exactly clusters, in one unnamed decision group (SetDecisionGroups).
func (e *Env) SetPlacementDecisions(ctx context.Context, namespace, placement string, clusters ...string) error {
	return e.SetDecisionGroups(ctx, namespace, placement, DecisionGroup{Clusters: clusters})
}

// SetDecisionGroups makes the hub's decisions for a Placement select the
// clusters of groups, standing in for OCM's placement controller: group i
// is the PlacementDecision <placement>-decision-<i+1> in namespace,
// labelled as OCM labels it (placement, decision-group-index i,
// decision-group-name), with status.decisions listing its clusters in
// order. The Placement itself need not exist; when it does, it owns the
// decisions.
func (e *Env) SetDecisionGroups(ctx context.Context, namespace, placement string, groups ...DecisionGroup) error {
	owner := &clusterv1beta1.Placement{}
	err := e.Hub.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: placement}, owner)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("getting placement %s/%s: %w", namespace, placement, err)
	}
	if err != nil {
		owner = nil
	}
	for i, group := range groups {
		if err := e.setDecision(ctx, owner, namespace, placement, i, group); err != nil {
			return err
		}
	}
	return nil
}

// setDecision writes the PlacementDecision of decision group i.
func (e *Env) setDecision(ctx context.Context, owner *clusterv1beta1.Placement, namespace, placement string, i int, group DecisionGroup) error {
	c := e.Hub.Client
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-decision-%d", placement, i+1), Namespace: namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, pd, func() error {
		if pd.Labels == nil {
			pd.Labels = map[string]string{}
		}
		pd.Labels[clusterv1beta1.PlacementLabel] = placement
		pd.Labels[clusterv1beta1.DecisionGroupIndexLabel] = strconv.Itoa(i)
		pd.Labels[clusterv1beta1.DecisionGroupNameLabel] = group.Name
		if owner == nil {
			return nil
		}
		return controllerutil.SetControllerReference(owner, pd, c.Scheme())
	}); err != nil {
		return fmt.Errorf("writing placement decision %s/%s: %w", namespace, pd.Name, err)
	}
	decisions := make([]clusterv1beta1.ClusterDecision, 0, len(group.Clusters))
	for _, cluster := range group.Clusters {
		decisions = append(decisions, clusterv1beta1.ClusterDecision{ClusterName: cluster, Reason: DecisionReason})
	}
	if slices.Equal(pd.Status.Decisions, decisions) && pd.Status.Decisions != nil {
		return nil
	}
	pd.Status.Decisions = decisions
	if err := c.Status().Update(ctx, pd); err != nil {
		return fmt.Errorf("writing decisions of %s/%s: %w", namespace, pd.Name, err)
	}
	return nil
}
