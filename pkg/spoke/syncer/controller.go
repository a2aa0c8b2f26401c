package syncer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

// RBAC: the syncer creates, updates and deletes objects of any kind a
// HierarchyPolicy declares, anywhere on the managed cluster, and lists every
// kind to find the objects it applied earlier: rights the separate
// enforcement ClusterRole grants (deploy/spoke/rbac/enforcement.go). The rules
// below are what this controller itself relies on.
//
// +kubebuilder:rbac:groups=hierarchy.canopy.io,resources=hierarchypolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=hierarchy.canopy.io,resources=hierarchypolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;list
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;update;patch;delete

// ControllerName names the controller of HierarchyPolicy keys (in logs and
// metrics).
const ControllerName = "syncer"

// Reconciler syncs the declared trees of HierarchyPolicies. It runs two
// controllers, each with its own typed work queue: one of HierarchyPolicy
// keys (Reconcile), which applies a policy's cluster-scoped objects and
// all its namespaces, sweeps what it applied earlier and writes its status,
// and one of namespace keys (reconcileNamespace, namespace.go), which
// applies every enforced policy's objects in one namespace.
type Reconciler struct {
	// ManagedClient reads HierarchyPolicies and Policies (cached), writes
	// objects and HierarchyPolicy status.
	ManagedClient client.Client
	// ManagedReader reads the synced objects from the API server, so that a
	// plan never starts from a stale cache.
	ManagedReader client.Reader
	// Recorder records compliance events on the parent Policies.
	Recorder *compliance.Recorder
	// MaxConcurrentReconciles is how many keys each of the two controllers
	// reconciles at once; zero means controllerdefaults.SyncerConcurrency.
	MaxConcurrentReconciles int

	mapper    meta.RESTMapper
	discovery discovery.DiscoveryInterface
	cache     cache.Cache
	// policies and namespaces are the controllers of the two key types.
	policies   controller.Controller
	namespaces controller.TypedController[namespaceRequest]
	now        func() time.Time

	// namespaceLocks serialise the syncs of each namespace (syncNamespace).
	namespaceLocks namespaceLocks
	// synced are the outcomes of syncs that wrote nothing, per namespace,
	// until its next watch event.
	synced syncedNamespaces
	// written is the status last written on each policy.
	written statuspatch.Written[*hierarchyv1alpha1.HierarchyPolicy]

	// watchMu guards watched, the kinds with a watch.
	watchMu sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// SetupWithManager registers the controllers of HierarchyPolicy keys and of
// namespace keys, and the SubNamespace controller beside them. ManagedClient
// and Recorder are required; ManagedReader defaults to the manager's API
// reader.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.ManagedClient == nil || r.Recorder == nil {
		return errors.New("syncer.Reconciler needs a ManagedClient and a Recorder")
	}
	if r.ManagedReader == nil {
		r.ManagedReader = mgr.GetAPIReader()
	}
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("creating the discovery client: %w", err)
	}
	r.discovery, r.mapper, r.cache = dc, mgr.GetRESTMapper(), mgr.GetCache()
	r.watched, r.now = map[schema.GroupVersionKind]bool{}, time.Now
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Namespace{}, sourceIndex, indexSources); err != nil {
		return fmt.Errorf("indexing namespaces by source: %w", err)
	}
	if err := r.setupPolicies(mgr); err != nil {
		return err
	}
	if err := r.setupNamespaces(mgr); err != nil {
		return err
	}
	return (&SubNamespaceReconciler{ManagedClient: r.ManagedClient}).SetupWithManager(mgr)
}

// setupPolicies registers the controller of HierarchyPolicy keys: a policy's
// own changes that call for an evaluation, and the changes of Namespaces
// (and, through watch, of the kinds the policies name) that concern it.
func (r *Reconciler) setupPolicies(mgr ctrl.Manager) error {
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&hierarchyv1alpha1.HierarchyPolicy{}, builder.WithPredicates(evaluationTriggers())).
		Watches(&corev1.Namespace{}, r.policyKeys(namespaceName)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.concurrency(), RateLimiter: controllerdefaults.RateLimiter[reconcile.Request]()}).
		Build(r)
	r.policies = c
	return err
}

// concurrency is MaxConcurrentReconciles, defaulted.
func (r *Reconciler) concurrency() int {
	return controllerdefaults.Concurrency(r.MaxConcurrentReconciles, controllerdefaults.SyncerConcurrency)
}

// Reconcile syncs one HierarchyPolicy's cluster scope and namespaces, and
// writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	policy := &hierarchyv1alpha1.HierarchyPolicy{}
	if err := r.ManagedClient.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			r.Recorder.Forget(req.NamespacedName)
			r.written.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status := statuspatch.Snapshot(r.ManagedClient, policy, func(p *hierarchyv1alpha1.HierarchyPolicy) any { return p.Status },
		statuspatch.SkipWhen(onlyTimeChanged),
		statuspatch.Owner[*hierarchyv1alpha1.HierarchyPolicy](r.ManagedReader),
		statuspatch.Remember(&r.written)) // the status as last written, which the cache may not show yet
	defer status.Apply(ctx, &retErr) // status is written once, here, whatever happens below
	if !policy.DeletionTimestamp.IsZero() {
		// Note: like a ConfigurationPolicy with pruneObjectBehavior None, a
		// deleted HierarchyPolicy leaves what it applied.
		return ctrl.Result{}, nil
	}
	return r.reconcileNormal(ctx, policy)
}

// onlyTimeChanged tells a status that differs from orig's in lastEvaluated
// alone: an evaluation that finds everything as it was writes nothing, so
// that a restart with nothing changed makes no write, and a failure
// retried with backoff does not rewrite the status to bump the time.
//
// Note: the statuses are compared as the API server stores them (JSON),
// not as Go values: a value that differs only where JSON does not look (a
// condition time's fraction of a second) would write a status that
// changes nothing but lastEvaluated.
func onlyTimeChanged(orig, policy *hierarchyv1alpha1.HierarchyPolicy, _ error) bool {
	a, errA := storedStatus(orig.Status)
	b, errB := storedStatus(policy.Status)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// storedStatus is st as the API server stores it, without lastEvaluated.
func storedStatus(st hierarchyv1alpha1.HierarchyPolicyStatus) ([]byte, error) {
	st.LastEvaluated = nil
	return json.Marshal(st)
}

func (r *Reconciler) reconcileNormal(ctx context.Context, policy *hierarchyv1alpha1.HierarchyPolicy) (ctrl.Result, error) {
	t, clusterDesired := policyTree(policy)
	outcomes, errs := r.evaluate(ctx, policy, t, clusterDesired)
	policy.Status = evaluatedStatus(policy, t, outcomes, r.now())
	ctrl.LoggerFrom(ctx).V(4).Info("Evaluated", "policy", klog.KObj(policy), "compliant", policy.Status.ComplianceState)
	if err := r.Recorder.RecordTemplate(ctx, r.ManagedClient, policy, hierarchyv1alpha1.GroupVersion.WithKind(hierarchyv1alpha1.HierarchyPolicyKind),
		policy.Status.ComplianceState, eventMessage(policy.Status), countRemediated(outcomes) > 0); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return ctrl.Result{}, kerrors.NewAggregate(errs)
	}
	if !t.Valid() {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("%s has an invalid tree: %v", klog.KObj(policy), t.Problems))
	}
	return ctrl.Result{}, nil
}

// evaluate is syncAll with what only a reconcile adds: watches on the
// declared kinds and the check of the live-propagation kinds.
func (r *Reconciler) evaluate(ctx context.Context, policy *hierarchyv1alpha1.HierarchyPolicy, t *tree,
	clusterDesired []*unstructured.Unstructured) ([]outcome, []error) {
	enforce := policy.Spec.RemediationAction.IsEnforce()
	var errs []error
	if err := r.watchKinds(ctx, policy, clusterDesired); err != nil {
		errs = append(errs, err)
	}
	outcomes, err := r.syncAll(ctx, policy, t, clusterDesired, enforce)
	if err != nil {
		errs = append(errs, err)
	}
	// Note: a kind the cluster does not serve counts as a failed read, so that
	// it retries with backoff and a kind served later is picked up.
	outcomes = append([]outcome{{failed: failures{kinds: unservedKinds(r.mapper, policy)}}}, outcomes...)
	for _, o := range outcomes {
		for _, err := range o.failed.all() {
			errs = append(errs, fmt.Errorf("namespace %q: %w", o.namespace, err))
		}
	}
	return outcomes, errs
}

// syncAll plans, and under enforce applies, what policy declares: its
// cluster-scoped objects clusterDesired, each namespace of t (and those
// where it applied objects earlier), and its generators. The error is the
// reads that failed; the outcomes hold the writes that failed. Reconcile
// and DryRun both plan with it.
func (r *Reconciler) syncAll(ctx context.Context, policy *hierarchyv1alpha1.HierarchyPolicy, t *tree,
	clusterDesired []*unstructured.Unstructured, enforce bool) ([]outcome, error) {
	var errs []error
	owned, err := r.owned(ctx, t)
	if err != nil {
		// Note: what could not be listed cannot be deleted; the error retries.
		errs = append(errs, fmt.Errorf("finding the objects %s applied: %w", policy.Name, err))
	}
	treeOwned, generatedOwned := partition(owned)
	outcomes := []outcome{r.syncCluster(ctx, t, clusterDesired, treeOwned[""], enforce)}
	for _, ns := range scopes(t, treeOwned) {
		outcomes = append(outcomes, r.syncNamespace(ctx, t, ns, treeOwned[ns], enforce))
	}
	generated, err := r.syncGenerators(ctx, policy, t, generatedOwned, "", enforce)
	if err != nil {
		errs = append(errs, fmt.Errorf("planning the generators of %s: %w", policy.Name, err))
	}
	return append(outcomes, generated...), errors.Join(errs...)
}

// partition separates, among the objects a policy applied, those of its
// generators from those of its tree.
func partition(owned map[string][]*metav1.PartialObjectMetadata) (map[string][]*metav1.PartialObjectMetadata, []*unstructured.Unstructured) {
	tree := map[string][]*metav1.PartialObjectMetadata{}
	var generated []*unstructured.Unstructured
	for ns, objs := range owned {
		for _, u := range objs {
			if _, ok := u.GetLabels()[hierarchyv1alpha1.GeneratedByLabel]; ok {
				generated = append(generated, metadataObject(u))
			} else {
				tree[ns] = append(tree[ns], u)
			}
		}
	}
	return tree, generated
}

func countRemediated(outcomes []outcome) int {
	n := 0
	for _, o := range outcomes {
		n += countApplied(o)
	}
	return n
}
