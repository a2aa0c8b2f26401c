package statussync

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/clusterns"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

// HubName is the name of the hub status controller.
const HubName = "statussync-hub"

// HubReconciler copies the status of local Policies to their hub replicas:
// it reads the local Policies and writes the replicas' status on the hub.
type HubReconciler struct {
	clusterns.Clients
	// HubReader reads the hub's API server, where a replica is read again
	// after a conflict; SetupWithManager defaults it to the hub manager's
	// API reader.
	HubReader client.Reader
}

// SetupWithManager registers the controller with the hub manager mgr;
// managed is the managed cluster's cache, whose Policies it also watches.
func (r *HubReconciler) SetupWithManager(mgr ctrl.Manager, managed cache.Cache) error {
	if r.HubReader == nil {
		r.HubReader = mgr.GetAPIReader()
	}
	return r.PolicyController(mgr, managed, HubName).
		WithOptions(controllerdefaults.HubWriterOptions()).
		Complete(r)
}

// Reconcile copies the local status of one Policy to its hub replica.
func (r *HubReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	replica := &policyv1.Policy{}
	if err := r.HubClient.Get(ctx, req.NamespacedName, replica); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	local := &policyv1.Policy{}
	if err := r.ManagedClient.Get(ctx, req.NamespacedName, local); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !replica.DeletionTimestamp.IsZero() || replica.Labels[policyv1.RootPolicyLabel] == "" {
		return ctrl.Result{}, nil // not a replica (no root-policy label): its status is not ours
	}
	// The replica's compliance and details are this controller's alone: a
	// write from a stale read is refused and computed again on the hub's
	// copy (keeping the hub's own fields), never written on a successor.
	sendLocal := func(_ context.Context, replica *policyv1.Policy) error {
		replica.Status.ComplianceState = local.Status.ComplianceState
		replica.Status.Details = local.Status.Details
		replica.Status.EvaluatedGeneration = EvaluatedGeneration(local)
		return nil
	}
	var err error
	status := statuspatch.Snapshot(r.HubClient, replica, func(p *policyv1.Policy) any { return p.Status },
		statuspatch.Owner[*policyv1.Policy](r.hubReader()), statuspatch.Recompute(sendLocal), statuspatch.OnPatched(logSent))
	_ = sendLocal(ctx, replica)
	status.Apply(ctx, &err)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("patching the status of replica %s: %w", klog.KObj(replica), err)
	}
	return ctrl.Result{}, nil
}

// hubReader is HubReader, or HubClient when not set.
func (r *HubReconciler) hubReader() client.Reader {
	if r.HubReader != nil {
		return r.HubReader
	}
	return r.HubClient
}

// logSent logs a replica status written on the hub.
func logSent(ctx context.Context, replica *policyv1.Policy) {
	ctrl.LoggerFrom(ctx).Info("Sent policy status to the hub", "policy", klog.KObj(replica), "compliance", replica.Status.ComplianceState)
}
