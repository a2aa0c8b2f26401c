package propagator

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
	"github.com/canopy-policy/canopy/pkg/hubtemplates"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "propagator"

// The propagator's permissions on the hub: replicas are created, updated
// and deleted in any cluster namespace; events are recorded on roots.
// Hub templates read and watch what they look up, of any kind, as OCM's
// propagator does (the library confines the lookups to the root's
// namespace); the per-cluster encryption keys are created; tokens are
// requested for the ServiceAccounts of spec.hubTemplateOptions.
//
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=placementbindings;policysets,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=placements;placementdecisions,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=create
// +kubebuilder:rbac:groups=core,resources=serviceaccounts/token,verbs=create

// Reconciler replicates root Policies to the managed clusters their
// PlacementBindings select, and writes the root's status.placement and
// Propagated condition.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the hub.
	Client client.Client
	// APIReader reads from the API server, where the cache may lag: a
	// replica that Client does not list yet.
	APIReader client.Reader
	// Recorder records propagation failures as events on the root policy.
	Recorder events.EventRecorder
	// MaxConcurrentReconciles is how many root policies are reconciled at
	// once; zero means controllerdefaults.HubConcurrency.
	MaxConcurrentReconciles int
	// TemplateFuncDenylist are the template functions hub templates are
	// denied, besides those the template library always denies.
	TemplateFuncDenylist []string

	// templates resolves hub templates; SetupWithManager makes it.
	templates *hubTemplates
	// own are the replica patches the cache has not shown yet.
	own ownWrites
	// poster creates replicas; SetupWithManager makes it.
	poster *replicaPoster
}

// SetupWithManager registers the propagator's cache indexes and watches
// with mgr, and the watchers of hub templates, which run with mgr.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := addIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	templates, err := newHubTemplates(mgr, r.TemplateFuncDenylist)
	if err != nil {
		return err
	}
	if err := mgr.Add(templates); err != nil {
		return fmt.Errorf("adding the hub templates' watchers: %w", err)
	}
	r.templates = templates
	if r.poster, err = newReplicaPoster(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&policyv1.Policy{}, builder.WithPredicates(rootChanged)).
		Watches(&policyv1.Policy{}, handler.EnqueueRequestsFromMapFunc(replicaToRoot),
			builder.WithPredicates(replicaChanged)).
		Watches(&policyv1.Policy{}, handler.EnqueueRequestsFromMapFunc(r.replicaToRolloutRoot),
			builder.WithPredicates(complianceChanged)).
		Watches(&policyv1.PlacementBinding{}, handler.EnqueueRequestsFromMapFunc(r.bindingToPolicies)).
		Watches(&policyv1beta1.PolicySet{}, handler.EnqueueRequestsFromMapFunc(r.policySetToPolicies),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.decisionToPolicies),
			builder.WithPredicates(decisionsChanged)).
		Watches(&clusterv1beta1.Placement{}, handler.EnqueueRequestsFromMapFunc(r.placementObjectToPolicies),
			builder.OnlyMetadata, builder.WithPredicates(existenceChanged)).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.managedClusterToRoots),
			builder.OnlyMetadata, builder.WithPredicates(existenceChanged)).
		WatchesRawSource(templates.requestSource()).
		WithOptions(controllerdefaults.HubOptions(r.MaxConcurrentReconciles)).
		Complete(r)
}

// Reconcile makes the replicas of one root Policy match its spec and
// placement, and deletes the replicas of a root that no longer exists.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	defer observeDuration(time.Now())
	policy := &policyv1.Policy{}
	if err := r.Client.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) { // Note: no finalizer; replicas are found by label.
			return ctrl.Result{}, r.reconcileDelete(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, fmt.Errorf("getting policy %s: %w", req.NamespacedName, err)
	}
	if replica.IsReplica(policy) {
		return ctrl.Result{}, nil
	}
	status := statuspatch.Snapshot(r.Client, policy, func(p *policyv1.Policy) any { return p.Status },
		statuspatch.ReadFrom[*policyv1.Policy](r.APIReader))
	defer status.Apply(ctx, &retErr) // status is written once, here, whatever happens below
	if !policy.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, req.NamespacedName)
	}
	return r.reconcileNormal(ctx, policy, status)
}

// rootStatus is the deferred status write of the root being reconciled.
type rootStatus = *statuspatch.Patch[*policyv1.Policy]

func (r *Reconciler) reconcileNormal(ctx context.Context, policy *policyv1.Policy, status rootStatus) (ctrl.Result, error) {
	if inCluster, err := r.inClusterNamespace(ctx, policy.Namespace); err != nil {
		return ctrl.Result{}, err
	} else if inCluster {
		return r.refuseInClusterNamespace(ctx, policy)
	}
	if n := len(policy.Namespace) + len(policy.Name); n > policyv1.MaxRootPolicyNameLength {
		policy.Status.Placement = nil
		r.setPropagated(policy, NameTooLongCondition(policy))
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("policy %s: namespace and name are %d characters, more than %d",
			klog.KObj(policy), n, policyv1.MaxRootPolicyNameLength))
	}
	in, err := r.placementInputs(ctx, policy)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading the placements of %s: %w", klog.KObj(policy), err)
	}
	members, err := r.policySetMembers(ctx, policy)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading the policy sets %s depends on: %w", klog.KObj(policy), err)
	}
	gated, err := r.rolloutPlacements(ctx, policy, in)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading the rollout placements of %s: %w", klog.KObj(policy), err)
	}
	res := ResolvePlacement(in)
	gated = ExcludeFromRollouts(gated, res.Clusters, in.PolicySets)
	policy.Status.Placement = res.Placements
	out := r.syncReplicas(ctx, policy, status, res.Clusters, members, gated)
	if len(out.failures) > 0 {
		propagationFailures.WithLabelValues(policy.Namespace, policy.Name).Add(float64(len(out.failures)))
	}
	setHubTemplateFailures(policy, len(out.templateFailures))
	if out.invalidRollout != nil {
		r.setPropagated(policy, InvalidRolloutCondition(policy, out.invalidRollout))
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("policy %s: %w", klog.KObj(policy), out.invalidRollout))
	}
	r.setPropagated(policy, withRollout(PropagatedCondition(policy, res, out.failures, out.templateFailures), res, policy.Status.Rollout))
	if err := kerrors.NewAggregate(append(out.failures, out.retry...)); err != nil || out.recheck == nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: *out.recheck}, nil
}

// reconcileDelete deletes every replica of the root policy key.
func (r *Reconciler) reconcileDelete(ctx context.Context, key types.NamespacedName) error {
	replicas, err := r.replicasOf(ctx, key.Namespace+"."+key.Name)
	if err != nil {
		return err
	}
	forgetPolicy(key)
	r.templates.retain(ctx, key.Namespace+"."+key.Name, nil)
	return kerrors.NewAggregate(r.deleteReplicas(ctx, replicas))
}

// syncOutcome is what syncing the replicas of a root came to.
type syncOutcome struct {
	// failures are the replicas not written or deleted; they are retried.
	failures []error
	// templateFailures are the templates written with the error of their
	// hub templates.
	templateFailures []HubTemplateFailure
	// retry are template failures that are also retried with backoff.
	retry []error
	// recheck is when a rollout must be looked at again, or nil.
	recheck *time.Duration
	// invalidRollout is the error of a rollout strategy that cannot be read.
	invalidRollout error
}

// syncReplicas creates or updates the replica of each selected cluster, as
// the rollout strategy allows, and deletes the others. One failing cluster
// does not stop the others. status is root's deferred status write.
func (r *Reconciler) syncReplicas(ctx context.Context, root *policyv1.Policy, status rootStatus, clusters []Cluster,
	members replica.PolicySetMembers, gated []RolloutPlacement) syncOutcome {
	existing, err := r.replicasOf(ctx, replica.Name(root))
	if err != nil {
		return syncOutcome{failures: []error{err}}
	}
	var out syncOutcome
	selected := sets.New[string]()
	tr := hubtemplates.NewRoot(root)
	prepared := make([]preparedReplica, 0, len(clusters))
	for _, c := range clusters {
		desired := replica.Build(root, c, members)
		desired.Spec.RolloutStrategy = nil // Note: the strategy is the hub's; replicas never carry it
		key := client.ObjectKeyFromObject(desired)
		if p, ok := r.prepareReplica(ctx, tr, desired, existing[key], &out); ok {
			prepared = append(prepared, p)
		}
		delete(existing, key)
		selected.Insert(c.Name)
	}
	r.writeReplicas(ctx, root, status, prepared, gated, &out)
	r.templates.retain(ctx, replica.Name(root), selected)
	out.failures = append(out.failures, r.deleteReplicas(ctx, existing)...)
	return out
}

// prepareReplica resolves the hub templates of desired and compares it
// with existing; it returns false when the templates must be retried.
func (r *Reconciler) prepareReplica(ctx context.Context, root hubtemplates.Root, desired, existing *policyv1.Policy, out *syncOutcome) (preparedReplica, bool) {
	res := r.templates.resolve(ctx, root, desired, existing)
	if res.Hold { // Note: the replica stays as it is, never half resolved
		out.failures = append(out.failures, fmt.Errorf("cluster %s: resolving hub templates: %w", desired.Namespace, res.Retry))
		return preparedReplica{}, false
	}
	res.ApplyTo(desired)
	if existing != nil {
		r.own.seen(existing)
	}
	upToDate := existing != nil && ReplicaUpToDate(desired, existing)
	return preparedReplica{desired: desired, existing: existing, templates: res, upToDate: upToDate}, true
}

// writeAll writes the prepared replicas ps, as many at once as the
// propagator reconciles roots (a rollout has one root, whose decision
// group is written as fast as several roots are); it returns the clusters
// whose replica now has the desired spec. Outcomes are added to out in the
// order of ps.
func (r *Reconciler) writeAll(ctx context.Context, root *policyv1.Policy, ps []preparedReplica, out *syncOutcome) sets.Set[string] {
	outs, ok := make([]syncOutcome, len(ps)), make([]bool, len(ps))
	sem := make(chan struct{}, controllerdefaults.Concurrency(r.MaxConcurrentReconciles, controllerdefaults.HubConcurrency))
	var wg sync.WaitGroup
	for i, p := range ps {
		if p.upToDate { // Note: most of a reconcile; no goroutine for what writes nothing
			ok[i] = r.writeReplica(ctx, root, p, &outs[i])
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ok[i] = r.writeReplica(ctx, root, p, &outs[i])
		})
	}
	wg.Wait()
	written := sets.New[string]()
	for i, p := range ps {
		out.failures = append(out.failures, outs[i].failures...)
		out.templateFailures = append(out.templateFailures, outs[i].templateFailures...)
		out.retry = append(out.retry, outs[i].retry...)
		if ok[i] {
			written.Insert(p.desired.Namespace)
		}
	}
	return written
}

// writeReplica writes a prepared replica; it returns whether the replica
// now has the desired spec.
func (r *Reconciler) writeReplica(ctx context.Context, root *policyv1.Policy, p preparedReplica, out *syncOutcome) bool {
	cluster, res := p.desired.Namespace, p.templates
	r.recordTemplateFailures(root, p.desired, res, p.existing)
	var err error
	if !p.upToDate { // Note: compared once (prepareReplica); an unchanged replica is most of a reconcile
		err = r.applyReplica(ctx, p.desired, p.existing)
	}
	if err != nil {
		out.failures = append(out.failures, fmt.Errorf("cluster %s: %w", cluster, err))
	}
	for _, f := range res.Failures {
		out.templateFailures = append(out.templateFailures, HubTemplateFailure{Cluster: cluster, Message: f.Summary})
	}
	if res.Retry != nil {
		out.retry = append(out.retry, fmt.Errorf("cluster %s: hub templates: %w", cluster, res.Retry))
	}
	return err == nil
}

// recordTemplateFailures records OCM's Warning event on root for each
// template whose hub templates failed with an error the cluster's replica
// does not carry yet, so that a restart or a retry records nothing.
//
// Note: the replica is the event's related object, so that the events of
// different clusters are not merged into one series (the events API keys a
// series by its objects, reason and action, not its note).
func (r *Reconciler) recordTemplateFailures(root, replica *policyv1.Policy, res hubtemplates.Result, existing *policyv1.Policy) {
	if r.Recorder == nil {
		return
	}
	for _, f := range res.Failures {
		if existing != nil && f.Index < len(existing.Spec.PolicyTemplates) &&
			hubtemplates.AnnotationOf(existing.Spec.PolicyTemplates[f.Index].ObjectDefinition.Raw, templating.HubTemplatesErrorAnnotation) == f.Message {
			continue
		}
		r.Recorder.Eventf(root, replica, corev1.EventTypeWarning, ReasonHubTemplateError, "ResolveHubTemplates", "%s",
			truncateTo(fmt.Sprintf("Failed to resolve templates for cluster %s: %s", replica.Namespace, f.Summary), maxEventNoteLength))
	}
}

// applyReplica creates desired, or patches existing to match it; it writes
// nothing when existing is up to date.
func (r *Reconciler) applyReplica(ctx context.Context, desired, existing *policyv1.Policy) error {
	log := ctrl.LoggerFrom(ctx)
	if existing == nil {
		if err := r.createReplica(ctx, desired); apierrors.IsAlreadyExists(err) {
			return r.applyToExisting(ctx, desired, err)
		} else if err != nil {
			return fmt.Errorf("creating replica %s: %w", klog.KObj(desired), err)
		}
		log.Info("Created replica", "replica", klog.KObj(desired))
		return nil
	}
	if ReplicaUpToDate(desired, existing) || r.own.holds(desired, existing) {
		return nil
	}
	patched := existing.DeepCopy()
	patched.Labels, patched.Annotations, patched.Spec = desired.Labels, desired.Annotations, desired.Spec
	if err := r.Client.Patch(ctx, patched, client.MergeFrom(existing)); err != nil {
		return fmt.Errorf("updating replica %s: %w", klog.KObj(desired), err)
	}
	r.own.record(existing.ResourceVersion, patched)
	log.Info("Updated replica", "replica", klog.KObj(desired))
	return nil
}

// applyToExisting handles a replica that the cache did not list but the API
// server has (created, the error): when it is this root's replica, which
// the cache has not seen yet on a busy hub, it is updated as usual; any
// other Policy of that name is the user's, and left alone with an error
// that says so.
func (r *Reconciler) applyToExisting(ctx context.Context, desired *policyv1.Policy, created error) error {
	current := &policyv1.Policy{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), current); err != nil {
		return fmt.Errorf("creating replica %s: %w; reading it: %w", klog.KObj(desired), created, err)
	}
	if current.Labels[policyv1.RootPolicyLabel] != desired.Labels[policyv1.RootPolicyLabel] {
		return fmt.Errorf("creating replica %s: a Policy that is not a replica of this policy already has its name "+
			"in the cluster namespace; delete or rename it: %w", klog.KObj(desired), created)
	}
	return r.applyReplica(ctx, desired, current)
}

// deleteReplicas deletes replicas, in the order of their keys.
func (r *Reconciler) deleteReplicas(ctx context.Context, replicas map[types.NamespacedName]*policyv1.Policy) []error {
	var errs []error
	keys := slices.SortedFunc(maps.Keys(replicas), func(a, b types.NamespacedName) int {
		return cmp.Compare(a.String(), b.String())
	})
	for _, key := range keys {
		p := replicas[key]
		r.own.forget(key)
		if err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("cluster %s: deleting replica %s: %w", key.Namespace, klog.KObj(p), err))
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Deleted replica", "replica", klog.KObj(p))
	}
	return errs
}

// setPropagated sets ConditionPropagated and records a Warning event when
// the policy turns to a failure it was not in.
func (r *Reconciler) setPropagated(policy *policyv1.Policy, c metav1.Condition) {
	var prev metav1.Condition // a copy: SetStatusCondition changes the condition in place
	if found := meta.FindStatusCondition(policy.Status.Conditions, ConditionPropagated); found != nil {
		prev = *found
	}
	meta.SetStatusCondition(&policy.Status.Conditions, c)
	if !IsFailure(c) || (prev.Status == c.Status && prev.Reason == c.Reason) {
		return
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(policy, nil, corev1.EventTypeWarning, c.Reason, "Propagate", "%s", c.Message)
	}
}
