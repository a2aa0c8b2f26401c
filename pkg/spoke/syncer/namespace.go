package syncer

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/hierarchy"
)

// NamespaceControllerName names the controller of namespace keys (in logs
// and metrics); ControllerName names the controller of HierarchyPolicy keys.
const NamespaceControllerName = "syncer-namespace"

// namespaceRequest is the key of the namespace controller: one namespace,
// where every enforced HierarchyPolicy's objects are applied and live
// propagation runs.
type namespaceRequest struct {
	// Name is the namespace's name.
	Name string
}

// setupNamespaces registers the controller of namespace keys. A
// HierarchyPolicy's change fans out to the namespaces it affects; a
// Namespace's change maps to itself and to the namespaces that copy from
// it. watch adds the kinds the policies name.
func (r *Reconciler) setupNamespaces(mgr ctrl.Manager) error {
	log := mgr.GetLogger().WithValues("controller", NamespaceControllerName)
	c, err := builder.TypedControllerManagedBy[namespaceRequest](mgr).
		Named(NamespaceControllerName).
		Watches(&hierarchyv1alpha1.HierarchyPolicy{}, r.subtreeHandler()).
		Watches(&corev1.Namespace{}, r.namespaceKeys(namespaceName)).
		WithOptions(controller.TypedOptions[namespaceRequest]{
			MaxConcurrentReconciles: r.concurrency(),
			RateLimiter:             controllerdefaults.RateLimiter[namespaceRequest](),
		}).
		WithLogConstructor(func(req *namespaceRequest) logr.Logger {
			if req == nil {
				return log
			}
			return log.WithValues("namespace", req.Name)
		}).
		Build(reconcile.TypedFunc[namespaceRequest](r.reconcileNamespace))
	r.namespaces = c
	return err
}

// reconcileNamespace applies, in one namespace, the objects of every
// enforced HierarchyPolicy whose tree has it or whose generators select it,
// then live propagation from its parent or template namespace. Status is
// the policies' own reconciles' business.
func (r *Reconciler) reconcileNamespace(ctx context.Context, req namespaceRequest) (ctrl.Result, error) {
	ns := req.Name
	if hierarchy.IsReserved(ns) {
		return ctrl.Result{}, nil
	}
	list, err := r.listPolicies(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	var errs []error
	for i := range list.Items {
		p := &list.Items[i]
		if !p.Spec.RemediationAction.IsEnforce() || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.syncPolicyIn(ctx, p, ns); err != nil {
			errs = append(errs, fmt.Errorf("policy %s: %w", klog.KObj(p), err))
		}
	}
	if err := r.propagate(ctx, ns, list.Items); err != nil {
		errs = append(errs, err)
	}
	return ctrl.Result{}, kerrors.NewAggregate(errs)
}

// syncPolicyIn applies, in namespace ns, what the enforced policy p
// declares there: its tree's objects when its tree has ns, and its
// generators' objects.
func (r *Reconciler) syncPolicyIn(ctx context.Context, p *hierarchyv1alpha1.HierarchyPolicy, ns string) error {
	t, _ := policyTree(p) // Note: with its clusterResources' problems, which hold deletions here too
	var outcomes []outcome
	var errs []error
	if t.Manages(ns) {
		outcomes = append(outcomes, r.syncNamespace(ctx, t, ns, nil, true))
	}
	if len(p.Spec.Generators) > 0 {
		generated, err := r.syncGenerators(ctx, p, t, nil, ns, true)
		if err != nil {
			errs = append(errs, err)
		}
		outcomes = append(outcomes, generated...)
	}
	for _, o := range outcomes {
		errs = append(errs, o.failed.all()...)
	}
	return kerrors.NewAggregate(errs)
}
