package testenv

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// DecisionReason is the reason of every decision SetPlacementDecisions writes.
const DecisionReason = "SetByTestenv"

// SetPlacementDecisions makes the hub's decisions for a Placement select
// exactly clusters, standing in for OCM's placement controller: it creates or
// updates the PlacementDecision <placement>-decision-1 in namespace, labelled
// as OCM labels it, with status.decisions listing clusters in order. The
// Placement itself need not exist; when it does, it owns the decision.
func (e *Env) SetPlacementDecisions(ctx context.Context, namespace, placement string, clusters ...string) error {
	c := e.Hub.Client
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: placement + "-decision-1", Namespace: namespace}}
	owner := &clusterv1beta1.Placement{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: placement}, owner)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("getting placement %s/%s: %w", namespace, placement, err)
	}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, pd, func() error {
		if pd.Labels == nil {
			pd.Labels = map[string]string{}
		}
		pd.Labels[clusterv1beta1.PlacementLabel] = placement
		pd.Labels[clusterv1beta1.DecisionGroupIndexLabel] = "0"
		pd.Labels[clusterv1beta1.DecisionGroupNameLabel] = ""
		if apierrors.IsNotFound(err) {
			return nil
		}
		return controllerutil.SetControllerReference(owner, pd, c.Scheme())
	}); err != nil {
		return fmt.Errorf("writing placement decision %s/%s: %w", namespace, pd.Name, err)
	}
	decisions := make([]clusterv1beta1.ClusterDecision, 0, len(clusters))
	for _, cluster := range clusters {
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
