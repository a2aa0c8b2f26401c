package rootstatus

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

// ControllerName names the root status controller in logs and metrics.
const ControllerName = "rootstatus"

// DefaultCoalesceWindow is how long replica status changes are collected
// before their root's status is recomputed.
const DefaultCoalesceWindow = time.Second

// The root status controller's permissions on the hub.
//
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies/status,verbs=get;update;patch

// Reconciler writes a root Policy's status.status (the compliance of its
// replica on each selected cluster) and status.compliant.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the hub.
	Client client.Client
	// CoalesceWindow delays the recomputation of a root's status after a
	// replica's compliance changes, so that the changes of a burst are
	// written in one update; zero means DefaultCoalesceWindow.
	CoalesceWindow time.Duration
	// MaxConcurrentReconciles is how many roots are reconciled at once;
	// zero means controllerdefaults.HubConcurrency.
	MaxConcurrentReconciles int

	apiReader client.Reader // the hub's API server, read after a status conflict; set by SetupWithManager
}

// SetupWithManager registers the controller's watches with mgr.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	r.apiReader = mgr.GetAPIReader()
	if err := complianceMetric.collectFrom(mgr, mgr.GetClient()); err != nil {
		return fmt.Errorf("adding the compliance metric: %w", err)
	}
	window := r.CoalesceWindow
	if window == 0 {
		window = DefaultCoalesceWindow
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&policyv1.Policy{}, builder.WithPredicates(placementChanged)).
		Watches(&policyv1.Policy{}, coalesce(window, replicaToRoot), builder.WithPredicates(replicaComplianceChanged)).
		WithOptions(controllerdefaults.HubOptions(r.MaxConcurrentReconciles)).
		Complete(r)
}

// Reconcile recomputes the per-cluster compliance of one root Policy.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	defer observeDuration(ControllerName, time.Now())
	root := &policyv1.Policy{}
	if err := r.Client.Get(ctx, req.NamespacedName, root); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting policy %s: %w", req.NamespacedName, err)
	}
	if replica.IsReplica(root) {
		return ctrl.Result{}, nil
	}
	status := statuspatch.Snapshot(r.Client, root, func(p *policyv1.Policy) any { return p.Status },
		statuspatch.ReadFrom[*policyv1.Policy](r.apiReader))
	defer status.Apply(ctx, &retErr) // status is written once, here, whatever happens below
	return ctrl.Result{}, r.reconcileNormal(ctx, root)
}

func (r *Reconciler) reconcileNormal(ctx context.Context, root *policyv1.Policy) error {
	clusters := SelectedClusters(root.Status.Placement)
	compliance, err := r.replicaCompliance(ctx, root, clusters)
	if err != nil {
		return err
	}
	root.Status.Status = ClusterStatuses(clusters, compliance, RemainingBindings(root.Status.Placement))
	root.Status.ComplianceState = RootCompliance(root.Status.Status)
	return nil
}

// replicaCompliance reads the compliance of the root's replica on each
// cluster; a missing replica is left out (unknown).
func (r *Reconciler) replicaCompliance(ctx context.Context, root *policyv1.Policy, clusters []string) (map[string]policyv1.ComplianceState, error) {
	out := make(map[string]policyv1.ComplianceState, len(clusters))
	name := replica.Name(root)
	var errs []error
	for _, c := range clusters {
		replica := &policyv1.Policy{}
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: c, Name: name}, replica)
		switch {
		case err == nil && replica.Labels[policyv1.RootPolicyLabel] != name:
			// Note: a Policy that is not this root's replica holds the
			// name (the propagator says so on the root); its status is not ours.
		case err == nil:
			out[c] = replica.Status.ComplianceState
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("getting the replica of %s on cluster %s: %w", name, c, err))
		}
	}
	return out, kerrors.NewAggregate(errs)
}

// placementChanged passes root policies when they appear or go, when the
// propagator changes their status.placement, and when their status.status
// or status.compliant changes (so that another writer is corrected).
var placementChanged = predicate.And(
	predicate.NewPredicateFuncs(func(o client.Object) bool { return !replica.IsReplica(o) }),
	predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldP, okOld := e.ObjectOld.(*policyv1.Policy)
		newP, okNew := e.ObjectNew.(*policyv1.Policy)
		return !okOld || !okNew || !equality.Semantic.DeepEqual(oldP.Status.Placement, newP.Status.Placement) ||
			!equality.Semantic.DeepEqual(oldP.Status.Status, newP.Status.Status) ||
			oldP.Status.ComplianceState != newP.Status.ComplianceState
	}},
)

// replicaComplianceChanged passes replicas when they appear or go, and
// when their compliance or labels change.
var replicaComplianceChanged = predicate.And(
	predicate.NewPredicateFuncs(func(o client.Object) bool { return replica.IsReplica(o) }),
	predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldP, okOld := e.ObjectOld.(*policyv1.Policy)
		newP, okNew := e.ObjectNew.(*policyv1.Policy)
		return !okOld || !okNew || oldP.Status.ComplianceState != newP.Status.ComplianceState ||
			!equality.Semantic.DeepEqual(oldP.Labels, newP.Labels)
	}},
)
