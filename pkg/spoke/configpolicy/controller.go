package configpolicy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/evaluator"
)

// PruneFinalizer holds a ConfigurationPolicy whose pruneObjectBehavior is
// DeleteIfCreated or DeleteAll until its objects are deleted. The value is
// OCM's.
const PruneFinalizer = "policy.open-cluster-management.io/delete-related-objects"

// RBAC: enforcing a ConfigurationPolicy creates, updates and deletes objects
// of any kind the policy names, anywhere on the managed cluster, and
// informing reads them (and dry-runs updates, which needs update rights).
// The kinds are not known in advance — they come from the hub's policies —
// so reading and writing them is granted by the separate enforcement
// ClusterRole (deploy/spoke/rbac/enforcement.go), broad by default. The rules
// below are what this controller itself relies on.
//
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=configurationpolicies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=configurationpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=configurationpolicies/finalizers,verbs=update
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch

// Reconciler evaluates ConfigurationPolicies on the managed cluster.
type Reconciler struct {
	// ManagedClient reads Policies (cached) and writes ConfigurationPolicy
	// status and finalizers.
	ManagedClient client.Client
	// ManagedReader reads ConfigurationPolicies from the API server, so that
	// each evaluation starts from the status the last one wrote.
	ManagedReader client.Reader
	// Recorder records compliance events on the parent Policies.
	Recorder *compliance.Recorder
	// MaxConcurrentReconciles is how many policies are evaluated at once;
	// zero means controllerdefaults.ConfigPolicyConcurrency.
	MaxConcurrentReconciles int
	// TemplateFuncDenylist are the template functions the policies'
	// templates are denied, besides those the template library always
	// denies: a template that calls one fails with the library's
	// ErrDenylistedFunctionUsed.
	TemplateFuncDenylist []string

	// base is what every evaluator shares: the start and end of Reconcile,
	// the dynamic client and the watcher's lifecycle.
	base *evaluator.Base[*policyv1.ConfigurationPolicy]
	// dynamic reads and writes the objects the policies name.
	dynamic dynamic.Interface
	// discovery resolves kinds for the template resolvers of policies that
	// are not watched (resolve.go).
	discovery discovery.DiscoveryInterface
	// watcher watches them, and resolves kinds through discovery.
	watcher depclient.DynamicWatcher
	// events records OCM's PolicyUpdate events on the policies themselves.
	events events.EventRecorder
	// selected is what each policy's namespaceSelector chose when it was
	// last evaluated (selection.go).
	selected selections
	// updates are the diffs of the objects the policies last updated
	// (updates.go).
	updates updateDiffs
	now     func() time.Time
}

// SetupWithManager registers the controller, and the dynamic watcher that
// re-evaluates a policy when an object it checked changes. ManagedClient
// and Recorder are required; ManagedReader defaults to the manager's API
// reader.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	var bld *builder.Builder
	var err error
	if r.discovery, err = discovery.NewDiscoveryClientForConfig(mgr.GetConfig()); err != nil {
		return fmt.Errorf("creating the discovery client: %w", err)
	}
	clients := evaluator.Clients{ManagedClient: r.ManagedClient, ManagedReader: r.ManagedReader, Recorder: r.Recorder}
	if r.base, bld, err = evaluator.Setup(mgr, kind, clients, evaluator.Triggers(func(p *policyv1.ConfigurationPolicy) string { return string(p.Status.ComplianceState) })); err != nil {
		return err
	}
	r.ManagedReader, r.dynamic, r.watcher, r.now = r.base.ManagedReader, r.base.Dynamic, r.base.Watches.Watcher(), time.Now
	r.events = mgr.GetEventRecorder(EventSource)
	r.base.OnForget = r.updates.forget
	bld = bld.WatchesMetadata(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.selectingPolicies),
		builder.WithPredicates(namespaceChoiceMayChange))
	return bld.WithOptions(evaluator.Options(r.MaxConcurrentReconciles)).Complete(r)
}

// Reconcile evaluates one ConfigurationPolicy when it is due, and prunes
// its objects when it is deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.base.Reconcile(ctx, req, r.reconcile)
}

// reconcile keeps the finalizer as the policy says, then evaluates or
// prunes. The finalizer's patch leaves policy, so its status, as it was.
func (r *Reconciler) reconcile(ctx context.Context, policy *policyv1.ConfigurationPolicy) (ctrl.Result, error) {
	if changed, err := r.reconcileFinalizer(ctx, policy); changed || err != nil {
		return ctrl.Result{}, err
	}
	if !policy.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, policy)
	}
	return r.reconcileNormal(ctx, policy)
}

func (r *Reconciler) reconcileNormal(ctx context.Context, policy *policyv1.ConfigurationPolicy) (ctrl.Result, error) {
	now := r.now()
	if due, wait := dueForEvaluation(policy, now); !due && !r.selectionChanged(ctx, policy) {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	e, outcomes, err := r.evaluate(ctx, policy)
	if err != nil {
		return ctrl.Result{}, err
	}
	if e.chose {
		r.selected.set(client.ObjectKeyFromObject(policy), e.chosen)
	}
	prev := policy.Status
	policy.Status = evaluatedStatus(policy, outcomes, now)
	e.pruneUnlisted(ctx, outcomes) // objects the policy no longer lists (prune.go)
	ctrl.LoggerFrom(ctx).V(4).Info("Evaluated", "policy", klog.KObj(policy), "compliant", policy.Status.ComplianceState,
		"watching", e.watching)
	newSpec := prev.LastEvaluatedGeneration != policy.Generation
	r.record(ctx, policy, e, capMessage(policy.Status.ComplianceState, complianceMessage(policy, outcomes)), remediated(outcomes), newSpec, now)
	r.announce(policy, prev)
	return r.schedule(ctx, policy, e)
}

// record sends the compliance of policy, message after its state, to its
// parent Policy, and keeps in status.history what was sent.
func (r *Reconciler) record(ctx context.Context, policy *policyv1.ConfigurationPolicy, e *evaluation, message string, remediated, newSpec bool, now time.Time) {
	state := policy.Status.ComplianceState
	hasParent, sent, err := r.Recorder.RecordTemplateSent(ctx, r.ManagedClient, policy,
		policyv1.GroupVersion.WithKind("ConfigurationPolicy"), state, message, remediated)
	if err != nil {
		e.transient = append(e.transient, err)
		return // the history is left as it is: the next evaluation sends this again
	}
	full := compliance.Compliance{State: state, Message: message}.EventMessage()
	policy.Status.History = withHistory(policy.Status.History, hasParent, sent, full, newSpec, now)
}

// EventSource names the configpolicy controller in the events it records
// on ConfigurationPolicies.
const EventSource = "canopy-configpolicy"

// announce records OCM's PolicyUpdate event on the policy ("Policy status
// is NonCompliant: ..."), a Warning when NonCompliant, when an evaluation
// changed its compliance, its messages or the generation it evaluated, as
// OCM's controller does: tools that follow a ConfigurationPolicy's events,
// and OCM's own tests, read them.
func (r *Reconciler) announce(policy *policyv1.ConfigurationPolicy, prev policyv1.ConfigurationPolicyStatus) {
	st := policy.Status
	msgs := conditionMessages(st)
	if st.ComplianceState == prev.ComplianceState && st.LastEvaluatedGeneration == prev.LastEvaluatedGeneration &&
		slices.Equal(msgs, conditionMessages(prev)) {
		return
	}
	eventType := corev1.EventTypeNormal
	if st.ComplianceState == policyv1.NonCompliant {
		eventType = corev1.EventTypeWarning
	}
	r.events.Eventf(policy, nil, eventType, "PolicyUpdate", "Policy status updated",
		"Policy status is %s: %s", st.ComplianceState, strings.Join(msgs, "; "))
}

// conditionMessages are the messages of the first condition of each
// template's status.
func conditionMessages(st policyv1.ConfigurationPolicyStatus) []string {
	var msgs []string
	for _, d := range st.CompliancyDetails {
		if len(d.Conditions) > 0 {
			msgs = append(msgs, d.Conditions[0].Message)
		}
	}
	return msgs
}

// reconcileDelete prunes the objects of a deleted policy, then lets it go.
// An object held by finalizers of its own keeps the policy Terminating,
// watched, until it is gone, as OCM does. When the ConfigurationPolicy CRD
// itself is being deleted, nothing is pruned: its deletion deletes every
// policy, and that must not delete what they manage.
func (r *Reconciler) reconcileDelete(ctx context.Context, policy *policyv1.ConfigurationPolicy) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(policy, PruneFinalizer) {
		r.stopWatching(ctx, policy)
		return ctrl.Result{}, nil
	}
	crdDeleting, err := r.definitionDeleting(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if crdDeleting {
		ctrl.LoggerFrom(ctx).Info("The ConfigurationPolicy CRD is being deleted: the policy's objects are kept",
			"policy", klog.KObj(policy))
		return ctrl.Result{}, r.removeFinalizer(ctx, policy)
	}
	held, errs := r.pruneDeleted(ctx, policy)
	if len(held) > 0 || len(errs) > 0 {
		setCleanupFailed(policy, held, errs, r.now())
		if len(errs) > 0 {
			return ctrl.Result{}, fmt.Errorf("pruning the objects of %s: %w", klog.KObj(policy), kerrors.NewAggregate(errs))
		}
		return ctrl.Result{RequeueAfter: heldRecheck}, nil // and when a watched object goes
	}
	r.stopWatching(ctx, policy)
	if err := r.removeFinalizer(ctx, policy); err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("Pruned the objects of a deleted policy", "policy", klog.KObj(policy))
	return ctrl.Result{}, nil
}

// removeFinalizer removes PruneFinalizer from policy.
func (r *Reconciler) removeFinalizer(ctx context.Context, policy *policyv1.ConfigurationPolicy) error {
	done := policy.DeepCopy()
	controllerutil.RemoveFinalizer(done, PruneFinalizer)
	if err := r.ManagedClient.Patch(ctx, done, client.MergeFromWithOptions(policy, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing the finalizer of %s: %w", klog.KObj(policy), err))
	}
	return nil
}

// reconcileFinalizer adds PruneFinalizer when the policy prunes and removes
// it when it does not, and reports whether it changed the policy (the watch
// then brings the policy back).
func (r *Reconciler) reconcileFinalizer(ctx context.Context, policy *policyv1.ConfigurationPolicy) (bool, error) {
	if !policy.DeletionTimestamp.IsZero() {
		return false, nil
	}
	prunes := policy.Spec.PruneObjectBehavior == policyv1.PruneDeleteAll ||
		policy.Spec.PruneObjectBehavior == policyv1.PruneDeleteIfCreated
	changed := policy.DeepCopy()
	if prunes {
		controllerutil.AddFinalizer(changed, PruneFinalizer)
	} else {
		controllerutil.RemoveFinalizer(changed, PruneFinalizer)
	}
	if len(changed.Finalizers) == len(policy.Finalizers) {
		return false, nil
	}
	if err := r.ManagedClient.Patch(ctx, changed, client.MergeFromWithOptions(policy, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, client.IgnoreNotFound(fmt.Errorf("updating the finalizers of %s: %w", klog.KObj(policy), err))
	}
	return true, nil
}

// evaluate evaluates policy's object templates. It reads through the
// dynamic watcher, within the policy's query batch, when the interval of
// the policy's current state is watch; the batch ends however the
// evaluation does.
func (r *Reconciler) evaluate(ctx context.Context, policy *policyv1.ConfigurationPolicy) (*evaluation, []templateOutcome, error) {
	e := &evaluation{
		r:        r,
		policy:   policy,
		enforce:  policy.Spec.RemediationAction.IsEnforce(),
		reader:   directReader{client: r.dynamic},
		previous: map[policyv1.ObjectResource]policyv1.RelatedObject{},
	}
	for _, rel := range policy.Status.RelatedObjects {
		e.previous[rel.Object] = rel
	}
	if intervalFor(policy.Spec.EvaluationInterval, policy.Status.ComplianceState).watch {
		id, end, err := r.base.StartQueryBatch(ctx, client.ObjectKeyFromObject(policy))
		if err != nil {
			return nil, nil, err
		}
		defer end()
		e.reader = watchReader{watcher: r.watcher, id: id, direct: directReader{client: r.dynamic}}
		e.watching = true
	}
	outcomes := e.run(ctx)
	evaluated(policy)
	return e, outcomes, nil
}

// unknownKindRecheck is how often a policy whose kind is not served is
// evaluated again, besides the watch on the CRD that would serve it (a CRD
// whose plural is not the conventional one escapes that watch).
const unknownKindRecheck = time.Minute

// schedule says when policy is evaluated next, after evaluation e: on
// watch events, after its interval, or after a transient failure (with
// backoff). A policy that cannot be applied as it is ends in a terminal
// error: it is evaluated again when it or a watched object changes.
func (r *Reconciler) schedule(ctx context.Context, policy *policyv1.ConfigurationPolicy, e *evaluation) (ctrl.Result, error) {
	iv := intervalFor(policy.Spec.EvaluationInterval, policy.Status.ComplianceState)
	if !iv.watch {
		r.stopWatching(ctx, policy)
	}
	if len(e.transient) > 0 {
		return ctrl.Result{}, kerrors.NewAggregate(e.transient)
	}
	switch {
	case iv.watch && !e.watching: // the new state is watched: start the watches
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case len(e.invalid) > 0 && iv.every == 0 && !e.unknownKind:
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("%s cannot be applied until it changes: %s",
			klog.KObj(policy), strings.Join(e.invalid, "; ")))
	case iv.every > 0:
		return ctrl.Result{RequeueAfter: jitter(iv.every)}, nil
	case e.unknownKind && !iv.never:
		return ctrl.Result{RequeueAfter: unknownKindRecheck}, nil
	}
	return ctrl.Result{}, nil
}

func remediated(outcomes []templateOutcome) bool {
	for _, o := range outcomes {
		if o.remediated {
			return true
		}
	}
	return false
}

func (r *Reconciler) stopWatching(ctx context.Context, policy *policyv1.ConfigurationPolicy) {
	r.base.StopWatching(ctx, client.ObjectKeyFromObject(policy))
}

// evaluated is called with the policy at the end of each evaluation,
// within the watcher's query batch: tests make it panic.
var evaluated = func(*policyv1.ConfigurationPolicy) {}

// kind is what the evaluators' shared code needs to know of
// ConfigurationPolicies: they are read from the API server, and what they
// read is watched.
var kind = evaluator.Kind[*policyv1.ConfigurationPolicy]{Name: "configpolicy", Watch: true,
	GVK:    policyv1.GroupVersion.WithKind(policyv1.ConfigurationPolicyKind),
	New:    func() *policyv1.ConfigurationPolicy { return &policyv1.ConfigurationPolicy{} },
	Status: func(p *policyv1.ConfigurationPolicy) any { return p.Status }}

// watcherID identifies a policy to the dynamic watcher.
func watcherID(key types.NamespacedName) depclient.ObjectIdentifier {
	return evaluator.WatcherID(kind.GVK, key)
}
