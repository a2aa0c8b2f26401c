package statussync

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlsource "sigs.k8s.io/controller-runtime/pkg/source"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/statuspatch"
)

// Name is the name of the local status controller.
const Name = "statussync"

// EventUIDIndex indexes Events by involvedObject.uid.
const EventUIDIndex = "involvedObject.uid"

// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io,resources=policies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.open-cluster-management.io;hierarchy.canopy.io,resources=*,verbs=get;list;watch

// Reconciler writes the status of local Policies from their compliance
// events.
type Reconciler struct {
	// ManagedClient reads and writes the managed cluster.
	ManagedClient client.Client
	// ManagedReader reads the managed cluster's API server, without a
	// cache: a template the cache may not hold yet is read there
	// (templates.go). SetupWithManager defaults it to the manager's API
	// reader.
	ManagedReader client.Reader
	// Namespace, when set, restricts the controller to one namespace: the
	// cluster namespace.
	Namespace string

	templates client.Reader   // the manager's cache, for template objects; set by SetupWithManager
	scheme    *runtime.Scheme // the manager's; set by SetupWithManager
	gone      goneUIDs        // long-lived: template object UIDs found not current
	// handedOver and fresh are the compliance events Writer hands over
	// (handover.go): handedOver enqueues their Policies, fresh keeps them
	// until the informer shows them. Long-lived.
	handedOver chan ctrlevent.GenericEvent
	fresh      freshEvents
	own        ownWrites // long-lived: the versions its status writes made (own.go)
	// written is the last status written on each Policy: a reconcile soon
	// after (a handed-over event, then the same event from the informer)
	// may read the version before it from the cache. Long-lived.
	written statuspatch.Written[*policyv1.Policy]
}

// SetupWithManager registers the controller with the managed cluster's
// manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Event{}, EventUIDIndex, func(o client.Object) []string {
		return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
	})
	if err != nil {
		return fmt.Errorf("indexing events: %w", err)
	}
	r.templates, r.scheme = mgr.GetCache(), mgr.GetScheme()
	r.handedOver = make(chan ctrlevent.GenericEvent, handoverBuffer)
	if r.ManagedReader == nil {
		r.ManagedReader = mgr.GetAPIReader()
	}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.Namespace == "" || o.GetNamespace() == r.Namespace
	})
	// Note: one worker. It bounds a burst of dependency links (make bench:
	// agent cascade, each link's Policy waits for the status writes of the
	// links queued before it), but it also lets a Policy's events that
	// arrive together be written once: with eight workers, delivering the
	// agent stage's chains wrote 2.9 statuses per Policy instead of 1.8, on
	// each API server, and its dependency latency p99 went from 0.2 s to
	// 2.5-3 s.
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&policyv1.Policy{}, builder.WithPredicates(inNamespace, r.own.notOwnWrite())).
		Watches(&corev1.Event{}, handler.EnqueueRequestsFromMapFunc(eventToPolicy), builder.WithPredicates(inNamespace)).
		WatchesRawSource(ctrlsource.Channel(r.handedOver, handler.EnqueueRequestsFromMapFunc(eventToPolicy))).
		Complete(r)
}

// eventToPolicy maps an event to the Policy it is about.
func eventToPolicy(_ context.Context, o client.Object) []ctrl.Request {
	ref := o.(*corev1.Event).InvolvedObject
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	if ref.Kind != "Policy" || gv.Group != policyv1.GroupName {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}}}
}

// Reconcile writes the status of one local Policy from its compliance
// events.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	policy := &policyv1.Policy{}
	if err := r.ManagedClient.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// statussync owns the whole status: a status computed from a stale read
	// is refused and computed again from the API server's copy.
	status := statuspatch.Snapshot(r.ManagedClient, policy, func(p *policyv1.Policy) any { return p.Status },
		statuspatch.Owner[*policyv1.Policy](r.ManagedReader), statuspatch.Recompute(r.reconcileStatus),
		statuspatch.OnPatched(r.own.onPatched),
		statuspatch.Remember(&r.written)) // the status as last written, which the cache may not show yet
	defer status.Apply(ctx, &retErr) // status is written once, here
	if !policy.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.reconcileNormal(ctx, policy)
}

// reconcileStatus computes the status of policy, read again after a
// conflict: as reconcileNormal, unless it is being deleted.
func (r *Reconciler) reconcileStatus(ctx context.Context, policy *policyv1.Policy) error {
	if !policy.DeletionTimestamp.IsZero() {
		return nil
	}
	return r.reconcileNormal(ctx, policy)
}

func (r *Reconciler) reconcileNormal(ctx context.Context, policy *policyv1.Policy) error {
	events := &corev1.EventList{}
	if err := r.ManagedClient.List(ctx, events, client.InNamespace(policy.Namespace),
		client.MatchingFields{EventUIDIndex: string(policy.UID)}); err != nil {
		return fmt.Errorf("listing events of policy %s: %w", klog.KObj(policy), err)
	}
	events.Items = r.fresh.with(policy.UID, events.Items, time.Now())
	objects, histories, err := r.templateObjects(ctx, policy, events.Items)
	if err != nil {
		return err
	}
	current, ignored := CurrentEvents(string(policy.UID), events.Items, objects)
	for _, ev := range ignored {
		ctrl.LoggerFrom(ctx).V(4).Info("Ignored a compliance event about another template object", "policy", klog.KObj(policy),
			"event", ev.Name, "template", ev.Reason, "related", ev.Related)
	}
	entries := Entries(string(policy.UID), current)
	entries = append(entries, TemplateEntries(policy.Name, histories, entries, policy.Status.Details)...)
	details := Details(TemplateNames(policy), entries, policy.Status.Details)
	policy.Status.Details = details
	policy.Status.ComplianceState = PolicyCompliance(details)
	evaluated, err := r.evaluatedObjects(ctx, policy, current)
	if err != nil {
		return err
	}
	SetEvaluated(policy, Evaluated(policy, current, evaluated))
	return nil
}

// TemplateNames returns the names of the templates of policy, in order,
// once each.
func TemplateNames(policy *policyv1.Policy) []string {
	var names []string
	seen := map[string]bool{}
	for _, pt := range policy.Spec.PolicyTemplates {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(pt.ObjectDefinition.Raw); err != nil || obj.GetName() == "" || seen[obj.GetName()] {
			continue
		}
		seen[obj.GetName()] = true
		names = append(names, obj.GetName())
	}
	return names
}
