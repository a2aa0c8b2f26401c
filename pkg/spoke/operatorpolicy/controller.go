package operatorpolicy

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/evaluator"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "operatorpolicy"

// RBAC: the evaluator reads OLM's objects and, under enforce, creates
// OperatorGroups and Subscriptions (and their namespace), approves
// InstallPlans and, for mustnothave, deletes what removalBehavior says. It
// never does OLM's own work (resolving, installing). Those reads and writes
// are what policies enforce, so they come from the separate enforcement
// ClusterRole (deploy/spoke/rbac/enforcement.go), as ConfigurationPolicy's do; a
// cluster administrator who narrows it must leave operators.coreos.com
// (and packages.operators.coreos.com, apps and CRDs for reading) to
// OperatorPolicies. The rules below are what this controller itself relies
// on.
//
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=operatorpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=operatorpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;list
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconciler evaluates OperatorPolicies on the managed cluster.
type Reconciler struct {
	// ManagedClient reads OperatorPolicies (cached) and Policies, and
	// writes OperatorPolicy status.
	ManagedClient client.Client
	// ManagedReader reads OperatorPolicies from the API server, so that
	// each evaluation starts from the status the last one wrote.
	ManagedReader client.Reader
	// Recorder records compliance events on the parent Policies.
	Recorder *compliance.Recorder
	// TemplateFuncDenylist are the template functions the policies'
	// managed-cluster templates (in versions, subscription and
	// operatorGroup) may not call, besides those the library always
	// denies.
	TemplateFuncDenylist []string
	// MaxHistoryLength bounds status.history; below 1 it is 10, as in OCM.
	MaxHistoryLength int

	// base is what every evaluator shares: the start and end of Reconcile,
	// the dynamic client and the watcher's lifecycle.
	base *evaluator.Base[*policyv1beta1.OperatorPolicy]
	// opGroupLocks serialise the evaluations' creations of OperatorGroups
	// by namespace (opgroup.go).
	opGroupLocks namespaceLocks
	now          func() time.Time
}

// SetupWithManager registers the controller and the dynamic watcher that
// re-evaluates a policy when one of OLM's objects it read changes.
// ManagedClient and Recorder are required; ManagedReader defaults to the
// manager's API reader.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	base, bld, err := evaluator.Setup(mgr, kind,
		evaluator.Clients{ManagedClient: r.ManagedClient, ManagedReader: r.ManagedReader, Recorder: r.Recorder},
		evaluator.Triggers(func(p *policyv1beta1.OperatorPolicy) string { return string(p.Status.ComplianceState) }))
	if err != nil {
		return err
	}
	r.base, r.ManagedReader, r.now = base, base.ManagedReader, time.Now
	return bld.Watches(&policyv1beta1.OperatorPolicy{}, handler.EnqueueRequestsFromMapFunc(overlapping)).
		WithOptions(evaluator.Options(0)).
		Complete(r)
}

// Reconcile evaluates one OperatorPolicy.
//
// Note: a deleted OperatorPolicy leaves the operator as it is, as in OCM.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.base.Reconcile(ctx, req, r.reconcileNormal)
}

// packageManifestRecheck is how often a policy that waits on a
// PackageManifest is evaluated again: PackageManifests are not watched.
const packageManifestRecheck = time.Minute

func (r *Reconciler) reconcileNormal(ctx context.Context, policy *policyv1beta1.OperatorPolicy) (ctrl.Result, error) {
	e, err := r.evaluate(ctx, policy)
	if e == nil {
		return ctrl.Result{}, err
	}
	errs := []error{err}
	recordHistory(policy, r.MaxHistoryLength)
	ctrl.LoggerFrom(ctx).V(4).Info("Evaluated", "policy", klog.KObj(policy), "compliant", policy.Status.ComplianceState)
	if policy.Status.ComplianceState != "" {
		errs = append(errs, r.Recorder.RecordTemplate(ctx, r.ManagedClient, policy,
			policyv1beta1.GroupVersion.WithKind(policyv1beta1.OperatorPolicyKind),
			policy.Status.ComplianceState, eventMessage(policy), e.remediated))
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	if e.recheck {
		return ctrl.Result{RequeueAfter: jitter(packageManifestRecheck)}, nil
	}
	return ctrl.Result{}, nil
}

// evaluate evaluates policy within its query batch of the dependency
// watcher, which ends however the evaluation does. The evaluation is nil
// when the batch did not start.
func (r *Reconciler) evaluate(ctx context.Context, policy *policyv1beta1.OperatorPolicy) (*evaluation, error) {
	id, end, err := r.base.StartQueryBatch(ctx, client.ObjectKeyFromObject(policy))
	if err != nil {
		return nil, err
	}
	defer end()
	e := &evaluation{policy: policy, read: cached(watchReader{watcher: r.base.Watches.Watcher(), id: id}), dynamic: r.base.Dynamic,
		opGroupLocks: &r.opGroupLocks, policies: r.ManagedClient, now: metav1.NewTime(r.now().Truncate(time.Second)),
		templates: &templateResolver{watcher: r.base.Watches.Watcher(), id: id, denylist: r.TemplateFuncDenylist}}
	err = e.run(ctx)
	evaluated(policy)
	return e, err
}

// cached returns the reader of an evaluation, given the watcher's: tests
// make it lag.
var cached = func(r reader) reader { return r }

// evaluated is called with the policy at the end of each evaluation,
// within the watcher's query batch: tests make it panic.
var evaluated = func(*policyv1beta1.OperatorPolicy) {}

// kind is what the evaluators' shared code needs to know of
// OperatorPolicies: they are read from the API server, and the OLM objects
// they read are watched.
var kind = evaluator.Kind[*policyv1beta1.OperatorPolicy]{
	Name: ControllerName, GVK: policyv1beta1.GroupVersion.WithKind(policyv1beta1.OperatorPolicyKind), Watch: true,
	New:    func() *policyv1beta1.OperatorPolicy { return &policyv1beta1.OperatorPolicy{} },
	Status: func(p *policyv1beta1.OperatorPolicy) any { return p.Status },
}

// overlapping maps a policy to the other policies its status says manage
// the same Subscription, so that they see the overlap appear or end.
func overlapping(_ context.Context, obj client.Object) []reconcile.Request {
	policy, ok := obj.(*policyv1beta1.OperatorPolicy)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	for _, o := range policy.Status.OverlappingPolicies {
		name, ns, ok := strings.Cut(o, ".")
		if ok && (name != policy.Name || ns != policy.Namespace) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		}
	}
	return reqs
}

func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(d)/10+1)) //nolint:gosec // spreading load, not security
}
