package statussync

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/clusterns"
)

// HubName is the name of the hub status controller.
const HubName = "statussync-hub"

// HubReconciler copies the status of local Policies to their hub replicas:
// it reads the local Policies and writes the replicas' status on the hub.
type HubReconciler struct {
	clusterns.Clients
}

// SetupWithManager registers the controller with the hub manager mgr;
// managed is the managed cluster's cache, whose Policies it also watches.
func (r *HubReconciler) SetupWithManager(mgr ctrl.Manager, managed cache.Cache) error {
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
	orig := replica.DeepCopy()
	replica.Status.ComplianceState = local.Status.ComplianceState
	replica.Status.Details = local.Status.Details
	replica.Status.EvaluatedGeneration = EvaluatedGeneration(local)
	if equality.Semantic.DeepEqual(orig.Status, replica.Status) {
		return ctrl.Result{}, nil
	}
	if err := r.HubClient.Status().Patch(ctx, replica, client.MergeFrom(orig)); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("patching the status of replica %s: %w", klog.KObj(replica), err)
	}
	ctrl.LoggerFrom(ctx).Info("Sent policy status to the hub", "policy", klog.KObj(replica), "compliance", replica.Status.ComplianceState)
	return ctrl.Result{}, nil
}
