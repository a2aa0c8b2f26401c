package rootstatus

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

// PolicySetControllerName names the PolicySet status controller.
const PolicySetControllerName = "policysetstatus"

// memberIndex indexes PolicySets by the names of their member policies.
const memberIndex = "rootstatus.canopy.io/member"

// The PolicySet status controller's permissions on the hub.
//
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policysets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policysets/status,verbs=get;update;patch

// PolicySetReconciler writes a PolicySet's status.compliant, placement,
// statusMessage and exclusions from its spec and the status of its member
// policies.
type PolicySetReconciler struct {
	// Client reads from the manager's cache and writes to the hub.
	Client client.Client
	// MaxConcurrentReconciles is how many sets are reconciled at once; zero
	// means controllerdefaults.HubConcurrency.
	MaxConcurrentReconciles int

	apiReader client.Reader // the hub's API server, read after a status conflict; set by SetupWithManager
}

// SetupWithManager registers the controller's index and watches with mgr.
func (r *PolicySetReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	r.apiReader = mgr.GetAPIReader()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &policyv1beta1.PolicySet{}, memberIndex, indexMembers); err != nil {
		return fmt.Errorf("adding index %s: %w", memberIndex, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(PolicySetControllerName).
		For(&policyv1beta1.PolicySet{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&policyv1.Policy{}, handler.EnqueueRequestsFromMapFunc(r.policyToSets),
			builder.WithPredicates(memberChanged)).
		WithOptions(controllerdefaults.HubOptions(r.MaxConcurrentReconciles)).
		Complete(r)
}

// Reconcile recomputes the status of one PolicySet.
func (r *PolicySetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	defer observeDuration(PolicySetControllerName, time.Now())
	set := &policyv1beta1.PolicySet{}
	if err := r.Client.Get(ctx, req.NamespacedName, set); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status := statuspatch.Snapshot(r.Client, set, func(s *policyv1beta1.PolicySet) any { return s.Status },
		statuspatch.ReadFrom[*policyv1beta1.PolicySet](r.apiReader))
	defer status.Apply(ctx, &retErr) // status is written once, here, whatever happens below
	members, err := r.members(ctx, set)
	if err != nil {
		return ctrl.Result{}, err
	}
	st := PolicySetStatus(set, members)
	set.Status.Placement, set.Status.ComplianceState, set.Status.StatusMessage = st.Placement, st.Compliant, st.StatusMessage
	set.Status.Exclusions = st.Exclusions
	return ctrl.Result{}, nil
}

// members reads the set's member policies; missing ones are left out.
func (r *PolicySetReconciler) members(ctx context.Context, set *policyv1beta1.PolicySet) (map[string]*policyv1.Policy, error) {
	out := make(map[string]*policyv1.Policy, len(set.Spec.Policies))
	for _, name := range set.Spec.Policies {
		p := &policyv1.Policy{}
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: set.Namespace, Name: string(name)}, p)
		switch {
		case err == nil:
			out[string(name)] = p
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("getting member %s of policy set %s: %w", name, client.ObjectKeyFromObject(set), err)
		}
	}
	return out, nil
}

// policyToSets maps a root policy to the sets that list it.
func (r *PolicySetReconciler) policyToSets(ctx context.Context, obj client.Object) []reconcile.Request {
	sets := &policyv1beta1.PolicySetList{}
	if err := r.Client.List(ctx, sets, client.InNamespace(obj.GetNamespace()), client.MatchingFields{memberIndex: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the policy sets of a policy", "policy", client.ObjectKeyFromObject(obj))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(sets.Items))
	for i := range sets.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sets.Items[i])})
	}
	return reqs
}

func indexMembers(obj client.Object) []string {
	set, ok := obj.(*policyv1beta1.PolicySet)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(set.Spec.Policies))
	for _, p := range set.Spec.Policies {
		out = append(out, string(p))
	}
	return out
}

// memberChanged passes root policies when they appear or go, and when what
// a set reads of them changes: spec.disabled and the root status.
var memberChanged = predicate.And(
	predicate.NewPredicateFuncs(func(o client.Object) bool { return !replica.IsReplica(o) }),
	predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		oldP, okOld := e.ObjectOld.(*policyv1.Policy)
		newP, okNew := e.ObjectNew.(*policyv1.Policy)
		return !okOld || !okNew || oldP.Spec.Disabled != newP.Spec.Disabled ||
			!equality.Semantic.DeepEqual(oldP.Status.Placement, newP.Status.Placement) ||
			!equality.Semantic.DeepEqual(oldP.Status.Status, newP.Status.Status) ||
			oldP.Status.ComplianceState != newP.Status.ComplianceState
	}},
)
