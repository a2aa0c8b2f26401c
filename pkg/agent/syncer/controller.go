package syncer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// RBAC: the syncer creates, updates and deletes objects of any kind a
// HierarchyPolicy declares, anywhere on the managed cluster, and lists every
// kind to find the objects it applied earlier: rights the separate
// enforcement ClusterRole grants (deploy/agent/enforcement.go). The rules
// below are what this controller itself relies on.
//
// +kubebuilder:rbac:groups=hierarchy.canopy.io,resources=hierarchypolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=hierarchy.canopy.io,resources=hierarchypolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;list
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;update;patch;delete

// Reconciler syncs the declared trees of HierarchyPolicies. Its work queue
// holds two kinds of keys: a namespace (empty Namespace, Name = the
// namespace), which applies every enforced policy's objects there, and a
// HierarchyPolicy, which applies its cluster-scoped objects, sweeps what it
// applied earlier, and writes its status.
type Reconciler struct {
	// ManagedClient reads HierarchyPolicies and Policies (cached), writes
	// objects and HierarchyPolicy status.
	ManagedClient client.Client
	// ManagedReader reads the synced objects from the API server, so that a
	// plan never starts from a stale cache.
	ManagedReader client.Reader
	// Recorder records compliance events on the parent Policies.
	Recorder *compliance.Recorder
	// MaxConcurrentReconciles is how many keys are reconciled at once
	// (default 2).
	MaxConcurrentReconciles int

	mapper    meta.RESTMapper
	discovery discovery.DiscoveryInterface
	cache     cache.Cache
	ctrl      controller.Controller
	now       func() time.Time

	// watchMu guards watched, the kinds with a watch.
	watchMu sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// SetupWithManager registers the controller, and the SubNamespace
// controller beside it. ManagedClient and Recorder are required;
// ManagedReader defaults to the manager's API reader.
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
	concurrency := r.MaxConcurrentReconciles
	if concurrency == 0 {
		concurrency = 2
	}
	r.ctrl, err = ctrl.NewControllerManagedBy(mgr).
		Named("syncer").
		For(&hierarchyv1alpha1.HierarchyPolicy{}, builder.WithPredicates(evaluationTriggers())).
		Watches(&hierarchyv1alpha1.HierarchyPolicy{}, r.subtreeHandler()).
		Watches(&corev1.Namespace{}, r.namespaceHandler()).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: concurrency,
			// Bounded backoff for transient failures: 1s doubling to 5 minutes.
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 5*time.Minute),
		}).
		Build(r)
	if err != nil {
		return err
	}
	return (&SubNamespaceReconciler{ManagedClient: r.ManagedClient}).SetupWithManager(mgr)
}

// Reconcile syncs one namespace, or one HierarchyPolicy's cluster scope and
// status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	if req.Namespace == "" {
		return ctrl.Result{}, r.reconcileNamespace(ctx, req.Name)
	}
	policy := &hierarchyv1alpha1.HierarchyPolicy{}
	if err := r.ManagedClient.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			r.Recorder.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := policy.DeepCopy()
	defer func() { // status is written once, here, whatever happens below
		if equality.Semantic.DeepEqual(orig.Status, policy.Status) || (retErr != nil && onlyTimeChanged(orig.Status, policy.Status)) {
			return // Note: a failure retried with backoff does not rewrite the status to bump lastEvaluated
		}
		if err := r.ManagedClient.Status().Patch(ctx, policy, client.MergeFrom(orig)); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, client.IgnoreNotFound(err)})
		}
	}()
	if !policy.DeletionTimestamp.IsZero() {
		// Note: like a ConfigurationPolicy with pruneObjectBehavior None, a
		// deleted HierarchyPolicy leaves what it applied.
		return ctrl.Result{}, nil
	}
	return r.reconcileNormal(ctx, policy)
}

// onlyTimeChanged tells whether two statuses differ in lastEvaluated alone.
func onlyTimeChanged(a, b hierarchyv1alpha1.HierarchyPolicyStatus) bool {
	a.LastEvaluated, b.LastEvaluated = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}

func (r *Reconciler) reconcileNormal(ctx context.Context, policy *hierarchyv1alpha1.HierarchyPolicy) (ctrl.Result, error) {
	t := newTree(policy)
	outcomes, errs := r.evaluate(ctx, policy, t)
	policy.Status = evaluatedStatus(policy, t, outcomes, r.now())
	ctrl.LoggerFrom(ctx).V(4).Info("Evaluated", "policy", klog.KObj(policy), "compliant", policy.Status.ComplianceState)
	if err := r.Recorder.RecordTemplate(ctx, r.ManagedClient, policy, hierarchyv1alpha1.GroupVersion.WithKind(hierarchyv1alpha1.HierarchyPolicyKind),
		policy.Status.ComplianceState, eventMessage(policy.Status), countRemediated(outcomes) > 0); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return ctrl.Result{}, kerrors.NewAggregate(errs)
	}
	if !t.valid() {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("%s has an invalid tree: %v", klog.KObj(policy), t.problems))
	}
	return ctrl.Result{}, nil
}

// evaluate is syncAll with what only a reconcile adds: watches on the
// declared kinds and the check of the live-propagation kinds.
func (r *Reconciler) evaluate(ctx context.Context, policy *hierarchyv1alpha1.HierarchyPolicy, t *tree) ([]outcome, []error) {
	enforce := policy.Spec.RemediationAction.IsEnforce()
	clusterDesired, problems := t.clusterObjects(policy.Spec.ClusterResources)
	t.problems = append(t.problems, problems...)
	var errs []error
	if err := r.watchKinds(ctx, policy, clusterDesired); err != nil {
		errs = append(errs, err)
	}
	outcomes, err := r.syncAll(ctx, policy, t, clusterDesired, enforce)
	if err != nil {
		errs = append(errs, err)
	}
	outcomes = append([]outcome{r.checkPropagationKinds(policy)}, outcomes...)
	for _, o := range outcomes {
		for _, err := range o.failed {
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

// checkPropagationKinds reports, as a failed read, each kind of the
// policy's live propagation that the cluster does not serve: such a kind is
// never copied, and the user must see why. The failure retries with
// backoff, so a kind served later is picked up.
func (r *Reconciler) checkPropagationKinds(policy *hierarchyv1alpha1.HierarchyPolicy) outcome {
	o := outcome{failed: map[int]error{}}
	if policy.Spec.Propagation == nil {
		return o
	}
	for i, k := range policy.Spec.Propagation.Kinds {
		gk := schema.GroupKind{Group: k.Group, Kind: k.Kind}
		if _, err := r.mapper.RESTMapping(gk); err != nil {
			o.failed[-1-i] = fmt.Errorf("propagation kind %s: %w", gk, err)
		}
	}
	return o
}

// partition separates, among the objects a policy applied, those of its
// generators from those of its tree.
func partition(owned map[string][]*unstructured.Unstructured) (map[string][]*unstructured.Unstructured, []*unstructured.Unstructured) {
	tree := map[string][]*unstructured.Unstructured{}
	var generated []*unstructured.Unstructured
	for ns, objs := range owned {
		for _, u := range objs {
			if _, ok := u.GetLabels()[hierarchyv1alpha1.GeneratedByLabel]; ok {
				generated = append(generated, u)
			} else {
				tree[ns] = append(tree[ns], u)
			}
		}
	}
	return tree, generated
}

// reconcileNamespace applies, in namespace ns, the objects of every
// enforced HierarchyPolicy whose tree has ns or whose generators select it,
// then live propagation from ns's parent or template namespace. Status is
// the policies' own reconciles' business.
func (r *Reconciler) reconcileNamespace(ctx context.Context, ns string) error {
	if reservedNamespaces[ns] {
		return nil
	}
	list := &hierarchyv1alpha1.HierarchyPolicyList{}
	if err := r.ManagedClient.List(ctx, list); err != nil {
		return fmt.Errorf("listing hierarchy policies: %w", err)
	}
	var errs []error
	for i := range list.Items {
		p := &list.Items[i]
		if !p.Spec.RemediationAction.IsEnforce() || !p.DeletionTimestamp.IsZero() {
			continue
		}
		t := newTree(p)
		var outcomes []outcome
		if t.manages(ns) {
			outcomes = append(outcomes, r.syncNamespace(ctx, t, ns, nil, true))
		}
		if len(p.Spec.Generators) > 0 {
			generated, err := r.syncGenerators(ctx, p, t, nil, ns, true)
			if err != nil {
				errs = append(errs, fmt.Errorf("policy %s: %w", klog.KObj(p), err))
			}
			outcomes = append(outcomes, generated...)
		}
		for _, o := range outcomes {
			for _, err := range o.failed {
				errs = append(errs, fmt.Errorf("policy %s: %w", klog.KObj(p), err))
			}
		}
	}
	if err := r.propagate(ctx, ns, list.Items); err != nil {
		errs = append(errs, err)
	}
	return kerrors.NewAggregate(errs)
}

func countRemediated(outcomes []outcome) int {
	n := 0
	for _, o := range outcomes {
		n += countApplied(o)
	}
	return n
}
