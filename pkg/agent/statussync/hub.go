package statussync

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// HubName is the name of the hub status controller.
const HubName = "statussync-hub"

// MaxHubRetryDelay caps the retry backoff of hub writes, so that a status
// is sent within seconds of the hub's return however long it was away.
const MaxHubRetryDelay = 5 * time.Second

// HubReconciler copies the status of local Policies to their hub replicas.
type HubReconciler struct {
	// HubClient reads and writes the hub, restricted to the cluster
	// namespace.
	HubClient client.Client
	// ManagedClient reads the local Policies.
	ManagedClient client.Client
	// ClusterNamespace is the cluster namespace, on the hub and locally.
	ClusterNamespace string
}

// SetupWithManager registers the controller with the hub manager mgr;
// managed is the managed cluster's cache, whose Policies it also watches.
func (r *HubReconciler) SetupWithManager(mgr ctrl.Manager, managed cache.Cache) error {
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.ClusterNamespace })
	local := source.Kind(managed, &policyv1.Policy{}, &handler.TypedEnqueueRequestForObject[*policyv1.Policy]{},
		predicate.NewTypedPredicateFuncs(func(p *policyv1.Policy) bool { return p.Namespace == r.ClusterNamespace }))
	return ctrl.NewControllerManagedBy(mgr).
		Named(HubName).
		For(&policyv1.Policy{}, builder.WithPredicates(inNamespace)).
		WatchesRawSource(local).
		WithOptions(controller.Options{
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](100*time.Millisecond, MaxHubRetryDelay),
		}).
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
