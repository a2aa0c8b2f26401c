package templatesync

import (
	"context"
	"fmt"
	"sync"
	"time"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/depwatch"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/enqueue"
	"github.com/canopy-policy/canopy/pkg/templatekinds"
)

// Name is the controller's name.
const Name = "templatesync"

// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io;hierarchy.canopy.io,resources=*,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=templates.gatekeeper.sh;constraints.gatekeeper.sh,resources=*,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch;create;patch

// Reconciler creates, updates and deletes the policy templates of local
// Policies.
type Reconciler struct {
	// ManagedClient reads and writes the managed cluster.
	ManagedClient client.Client
	// Recorder records compliance events. Share one Recorder with the
	// evaluators of the process: a Recorder remembers the last event of each
	// template, and must see theirs to know that a Pending is news.
	Recorder *compliance.Recorder
	// Namespace, when set, restricts the controller to the Policies of one
	// namespace: the cluster namespace.
	Namespace string
	// MaxConcurrentReconciles is how many Policies are synced at once; zero
	// means controllerdefaults.TemplateSyncConcurrency.
	MaxConcurrentReconciles int
	// PendingGrace is how long a template that has never reported waits
	// before it reports Pending on dependencies that exist but have no
	// compliance yet (pendingGrace); zero means DefaultPendingGrace, a
	// negative value reports at once.
	PendingGrace time.Duration

	watcher depclient.DynamicWatcher // set by SetupWithManager; long-lived, not per request
	// watches runs watcher; each query batch holds it, so that the watcher
	// never stops with a batch open.
	watches *depwatch.Lifecycle
	cache   client.Reader // the manager's informers (local.go)
	graphs  graphCache    // long-lived: each Policy's graph node, by generation
	pruned  sync.Map      // types.NamespacedName → prunedFor
	grace   pendingGrace
	now     func() time.Time
}

// SetupWithManager registers the controller and its dependency watcher
// with mgr, the managed cluster's manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	watches, src, err := depwatch.Setup(mgr, depclient.Options{})
	if err != nil {
		return err
	}
	r.watches, r.watcher, r.cache, r.now = watches, watches.Watcher(), mgr.GetCache(), time.Now
	if r.PendingGrace == 0 {
		r.PendingGrace = DefaultPendingGrace
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &policyv1.Policy{}, dependsOnIndex, dependsOn); err != nil {
		return fmt.Errorf("indexing policies by dependency: %w", err)
	}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.Namespace == "" || o.GetNamespace() == r.Namespace
	})
	concurrency := controllerdefaults.Concurrency(r.MaxConcurrentReconciles, controllerdefaults.TemplateSyncConcurrency)
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		// Note: a Policy's own status (written by statussync on every
		// compliance event) changes no template; skipping it keeps the queue
		// short at thousands of policies (make bench: dependency latency).
		// Only a change of a template's compliance in status is looked at:
		// it may hide what templatesync reports (record).
		For(&policyv1.Policy{}, builder.WithPredicates(inNamespace, predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{},
			templateComplianceChanged))).
		// A new template kind, or a kind a dependency names, can appear at any time.
		Watches(&apiextensionsv1.CustomResourceDefinition{}, handler.EnqueueRequestsFromMapFunc(r.allPolicies)).
		WatchesRawSource(src).
		WatchesRawSource(r.orphans(mgr.GetAPIReader())).
		Watches(&policyv1.Policy{}, r.dependencyEvents("Policy", false)).
		Watches(&policyv1.Policy{}, r.graphs.invalidations()).
		Watches(&policyv1.ConfigurationPolicy{}, r.dependencyEvents(configurationPolicyGVK.Kind, true)).
		Complete(r)
}

// Reconcile makes the templates of one local Policy match its spec and the
// state of its dependencies.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	policy := &policyv1.Policy{}
	if err := r.ManagedClient.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.reconcileDelete(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, fmt.Errorf("getting policy %s: %w", req, err)
	}
	if !policy.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, req.NamespacedName)
	}
	wait, err := r.reconcileNormal(ctx, policy)
	return ctrl.Result{RequeueAfter: wait}, err
}

// reconcileNormal syncs policy's templates; wait, when not zero, is when
// a template waiting in its Pending grace is to be looked at again.
func (r *Reconciler) reconcileNormal(ctx context.Context, policy *policyv1.Policy) (wait time.Duration, _ error) {
	kinds, err := r.templateKinds(ctx)
	if err != nil {
		return 0, err
	}
	kindSet := kinds.set()
	graph, err := r.graphs.graphFor(policy.Namespace, kindSet, r.policiesIn(ctx, policy.Namespace))
	if err != nil {
		return 0, err
	}
	plan := Plan(policy, Inputs{TemplateKinds: kindSet, Graph: graph})
	observed, err := r.observe(ctx, policy, plan)
	if err != nil {
		return 0, err
	}
	var errs []error // one broken template must not block the others
	for _, t := range plan {
		left, err := r.apply(ctx, policy, t, observed)
		if err != nil {
			errs = append(errs, fmt.Errorf("template %s: %w", t.Name, err))
		}
		if left > 0 && (wait == 0 || left < wait) {
			wait = left
		}
	}
	if err := r.pruneOnce(ctx, policy, plan, kinds); err != nil {
		errs = append(errs, err)
	}
	return wait, kerrors.NewAggregate(errs)
}

// policiesIn reads the Policies of namespace from the cache for the graph
// cache, which only reads them: at thousands of policies the copies
// dominated.
func (r *Reconciler) policiesIn(ctx context.Context, namespace string) policySource {
	return policySource{
		list: func() ([]policyv1.Policy, error) {
			siblings := &policyv1.PolicyList{}
			if err := r.ManagedClient.List(ctx, siblings, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
				return nil, fmt.Errorf("listing policies in %s: %w", namespace, err)
			}
			return siblings.Items, nil
		},
		get: func(name string) (*policyv1.Policy, error) {
			p := &policyv1.Policy{}
			err := r.ManagedClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, p, client.UnsafeDisableDeepCopy)
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, fmt.Errorf("getting policy %s/%s: %w", namespace, name, err)
			}
			return p, nil
		},
	}
}

// pruneOnce prunes policy's stale templates once per spec and set of
// template kinds: a template becomes stale only when either changes, and
// each prune lists every template kind from the API server.
func (r *Reconciler) pruneOnce(ctx context.Context, policy *policyv1.Policy, plan []Template, kinds templateKinds) error {
	key := client.ObjectKeyFromObject(policy)
	done := prunedFor{uid: policy.UID, generation: policy.Generation, kinds: kindsKey(kinds.set())}
	if last, ok := r.pruned.Load(key); ok && last == done {
		return nil
	}
	if err := r.prune(ctx, policy, plan, kinds); err != nil {
		return err
	}
	r.pruned.Store(key, done)
	return nil
}

// prunedFor says which spec of a Policy, with which template kinds, its
// stale templates were last pruned for.
type prunedFor struct {
	uid        types.UID
	generation int64
	kinds      string
}

// reconcileDelete stops watching for a Policy that is gone and deletes its
// templates (owner references do the same where a garbage collector runs).
func (r *Reconciler) reconcileDelete(ctx context.Context, key types.NamespacedName) error {
	if release, running := r.watches.TryHold(); running { // else the watcher holds no watch
		err := r.watcher.RemoveWatcher(watcherID(key))
		release()
		if err != nil {
			return fmt.Errorf("removing the watches of policy %s: %w", key, err)
		}
	}
	kinds, err := r.templateKinds(ctx)
	if err != nil {
		return err
	}
	gone := &policyv1.Policy{}
	gone.Namespace, gone.Name = key.Namespace, key.Name
	r.pruned.Delete(key)
	r.grace.forgetPolicy(key)
	return r.prune(ctx, gone, nil, kinds)
}

// apply carries out the plan of one template. wait, when not zero, says
// that the template waits in its Pending grace that long yet.
func (r *Reconciler) apply(ctx context.Context, policy *policyv1.Policy, t Template, observed observation) (wait time.Duration, _ error) {
	switch {
	case t.Problem != "":
		return 0, r.record(ctx, policy, t.Name, t.Object, policyv1.NonCompliant, t.Problem)
	case t.Cycle != "":
		if err := r.deleteTemplate(ctx, policy, t.Object); err != nil {
			return 0, err
		}
		return 0, r.record(ctx, policy, t.Name, t.Object, policyv1.NonCompliant, t.Cycle)
	}
	if unmet := Evaluate(t.Deps, observed.deps); len(unmet) > 0 {
		return r.applyPending(ctx, policy, t, unmet)
	}
	r.grace.forget(policy, t)
	if t.HubError != "" { // after the dependencies: Pending comes first, as in OCM
		return 0, r.reportHubError(ctx, policy, t)
	}
	return 0, r.write(ctx, policy, t.Object, observed)
}

// applyPending deletes the template of t, whose dependencies unmet are
// not met, and reports it Pending (Compliant under ignorePending) unless it
// waits in its grace.
func (r *Reconciler) applyPending(ctx context.Context, policy *policyv1.Policy, t Template, unmet []Unmet) (time.Duration, error) {
	if err := r.deleteTemplate(ctx, policy, t.Object); err != nil {
		return 0, err
	}
	if wait := r.grace.left(policy, t, unmet, r.PendingGrace, r.now()); wait > 0 {
		return wait, nil
	}
	state := policyv1.Pending
	if t.IgnorePending {
		state = policyv1.Compliant
	}
	return 0, r.record(ctx, policy, t.Name, t.Object, state, PendingMessage(unmet, t.IgnorePending))
}

// record reports the compliance of template (whose desired object is obj,
// nil when the entry is invalid) when there is no object of policy's to
// evaluate it: the event references the template without a UID
// (compliance.TemplateRef), which statussync counts whatever object
// exists. It records again whenever the status shows something else
// (RecordOptions.Visible): templatesync recomputes what it reports on every
// reconcile, and does not trust the Recorder's memory of having said it.
// The event's version is the Policy's generation
// (replica.TemplateSyncVersion): every change of the Policy is reported
// again, so that statussync sees it evaluated.
func (r *Reconciler) record(ctx context.Context, policy *policyv1.Policy, template string, obj *unstructured.Unstructured,
	state policyv1.ComplianceState, msg string,
) error {
	c := compliance.Compliance{
		Template: types.NamespacedName{Namespace: policy.Namespace, Name: template},
		State:    state,
		Message:  msg,
	}
	var gvk schema.GroupVersionKind
	if obj != nil {
		gvk = obj.GroupVersionKind()
	}
	opts := compliance.RecordOptions{Related: compliance.TemplateRef(gvk, policy.Namespace, template), Visible: visible(policy, template),
		Version: replica.TemplateSyncVersion(policy.Generation)}
	emitted, err := r.Recorder.Record(ctx, compliance.ParentFromPolicy(policy), c, opts)
	if err != nil {
		return err
	}
	if emitted {
		ctrl.LoggerFrom(ctx).Info("Recorded template compliance", "policy", klog.KObj(policy),
			"template", template, "compliance", state)
	}
	return nil
}

// visible returns the newest entry of template's history in policy's
// status, as statussync wrote it: nil when there is none.
func visible(policy *policyv1.Policy, template string) *policyv1.ComplianceHistory {
	for i := range policy.Status.Details {
		if d := &policy.Status.Details[i]; d.TemplateMeta.Name == template && len(d.History) > 0 {
			return &d.History[0]
		}
	}
	return nil
}

// allPolicies maps any event to every Policy the controller handles.
func (r *Reconciler) allPolicies(ctx context.Context, _ client.Object) []ctrl.Request {
	list := &policyv1.PolicyList{}
	var opts []client.ListOption
	if r.Namespace != "" {
		opts = append(opts, client.InNamespace(r.Namespace))
	}
	if err := r.ManagedClient.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing policies to re-evaluate")
		return nil
	}
	return enqueue.Each(list.Items)
}

// templateKinds maps each policy template kind to the version to list it at.
type templateKinds map[schema.GroupKind]string

func (k templateKinds) set() map[schema.GroupKind]bool {
	out := make(map[schema.GroupKind]bool, len(k))
	for gk := range k {
		out[gk] = true
	}
	return out
}

func (r *Reconciler) templateKinds(ctx context.Context) (templateKinds, error) {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	// Note: only read, so no copies: a CRD's schema is large, and its deep
	// copy showed in the agent's CPU profile at every reconcile.
	if err := r.ManagedClient.List(ctx, crds, client.MatchingLabels{policyv1.PolicyTypeLabel: policyv1.PolicyTypeTemplate},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing policy template kinds: %w", err)
	}
	kinds := templateKinds{}
	kinds.add(crds.Items)
	if err := r.gatekeeperKinds(ctx, kinds); err != nil {
		return nil, err
	}
	return kinds, nil
}

// add adds the kind of each CRD of crds, at its storage version.
func (k templateKinds) add(crds []apiextensionsv1.CustomResourceDefinition) {
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				k[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = v.Name
			}
		}
	}
}

// gatekeeperKinds adds Gatekeeper's kinds to kinds when Gatekeeper is
// installed: its ConstraintTemplate, and the constraint kind of each
// ConstraintTemplate it has made a CRD for. Their CRDs carry no policy-type
// label; OCM's framework addon syncs them by an allow list
// (pkg/templatekinds, IsGatekeeper).
func (r *Reconciler) gatekeeperKinds(ctx context.Context, kinds templateKinds) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := r.ManagedClient.Get(ctx, types.NamespacedName{Name: templatekinds.ConstraintTemplateCRD}, crd, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting the ConstraintTemplate CRD: %w", err)
	}
	kinds.add([]apiextensionsv1.CustomResourceDefinition{*crd})
	constraints := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := r.ManagedClient.List(ctx, constraints, client.MatchingLabels{templatekinds.ConstraintCRDLabel: "yes"},
		client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing Gatekeeper constraint kinds: %w", err)
	}
	for _, c := range constraints.Items {
		if c.Spec.Group == templatekinds.GatekeeperConstraintsGroup {
			kinds.add([]apiextensionsv1.CustomResourceDefinition{c})
		}
	}
	return nil
}

func watcherID(key types.NamespacedName) depclient.ObjectIdentifier {
	return depclient.ObjectIdentifier{
		Group: policyv1.GroupName, Version: policyv1.GroupVersion.Version, Kind: "Policy",
		Namespace: key.Namespace, Name: key.Name,
	}
}

func unstructuredFor(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}
