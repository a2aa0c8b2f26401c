package operatorpolicy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/depwatch"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "operatorpolicy"

// packageManifestRecheck is how often a policy that waits on a
// PackageManifest is evaluated again: PackageManifests are not watched.
const packageManifestRecheck = time.Minute

// RBAC: the evaluator reads OLM's objects and, under enforce, creates
// OperatorGroups and Subscriptions (and their namespace), approves
// InstallPlans and, for mustnothave, deletes what removalBehavior says. It
// never does OLM's own work (resolving, installing). Those reads and writes
// are what policies enforce, so they come from the separate enforcement
// ClusterRole (deploy/agent/enforcement.go), as ConfigurationPolicy's do; a
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

	dynamic dynamic.Interface
	watches *depwatch.Lifecycle
	now     func() time.Time
}

// SetupWithManager registers the controller and the dynamic watcher that
// re-evaluates a policy when one of OLM's objects it read changes.
// ManagedClient and Recorder are required; ManagedReader defaults to the
// manager's API reader.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.ManagedClient == nil || r.Recorder == nil {
		return errors.New("operatorpolicy.Reconciler needs a ManagedClient and a Recorder")
	}
	if r.ManagedReader == nil {
		r.ManagedReader = mgr.GetAPIReader()
	}
	var err error
	if r.dynamic, err = dynamic.NewForConfig(mgr.GetConfig()); err != nil {
		return fmt.Errorf("creating the dynamic client: %w", err)
	}
	watches, events, err := depwatch.Setup(mgr, depclient.Options{DisableInitialReconcile: true})
	if err != nil {
		return err
	}
	r.watches, r.now = watches, time.Now
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&policyv1beta1.OperatorPolicy{}, builder.WithPredicates(evaluationTriggers())).
		Watches(&policyv1beta1.OperatorPolicy{}, handler.EnqueueRequestsFromMapFunc(overlapping)).
		WatchesRawSource(events).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: controllerdefaults.Concurrency(0, controllerdefaults.ConfigPolicyConcurrency),
			RateLimiter:             controllerdefaults.RateLimiter[reconcile.Request](),
		}).
		Complete(r)
}

// Reconcile evaluates one OperatorPolicy.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	release, err := r.watches.Hold(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer release() // the watcher stops only once this evaluation is over
	policy := &policyv1beta1.OperatorPolicy{}
	if err := r.ManagedReader.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status := statuspatch.Snapshot(r.ManagedClient, policy, func(p *policyv1beta1.OperatorPolicy) any { return p.Status })
	defer status.Apply(ctx, &retErr) // status is written once, here, whatever happens below
	// Note: a deleted OperatorPolicy leaves the operator as it is, as in OCM.
	return r.reconcileNormal(ctx, policy)
}

func (r *Reconciler) reconcileNormal(ctx context.Context, policy *policyv1beta1.OperatorPolicy) (ctrl.Result, error) {
	id := watcherID(types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name})
	if err := r.watches.Watcher().StartQueryBatch(id); err != nil {
		return ctrl.Result{}, fmt.Errorf("starting the watches of %s: %w", klog.KObj(policy), err)
	}
	e := &evaluation{policy: policy, read: watchReader{watcher: r.watches.Watcher(), id: id}, dynamic: r.dynamic,
		policies: r.ManagedClient, now: metav1.NewTime(r.now().Truncate(time.Second))}
	errs := []error{e.run(ctx)}
	if err := r.watches.Watcher().EndQueryBatch(id); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot end the watches of a policy", "policy", klog.KObj(policy))
	}
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

// forget drops what is kept in memory for a deleted policy.
func (r *Reconciler) forget(ctx context.Context, key types.NamespacedName) {
	if err := r.watches.Watcher().RemoveWatcher(watcherID(key)); err != nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Cannot remove the watches of a policy", "error", err.Error())
	}
	r.Recorder.Forget(key)
}

// watcherID identifies a policy to the dynamic watcher.
func watcherID(key types.NamespacedName) depclient.ObjectIdentifier {
	return depclient.ObjectIdentifier{Group: policyv1beta1.GroupVersion.Group, Version: policyv1beta1.GroupVersion.Version,
		Kind: policyv1beta1.OperatorPolicyKind, Namespace: key.Namespace, Name: key.Name}
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
