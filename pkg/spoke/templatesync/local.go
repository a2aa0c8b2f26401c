package templatesync

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/depgraph"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/enqueue"
)

// The Policies and ConfigurationPolicies of the cluster namespace, by far
// the most common dependencies and templates, are read from the manager's
// informers instead of per-object dynamic watches: the dependency watcher
// starts each watch (a list and a watch request) under one lock shared by
// every worker, which made the agent's dependency latency grow with the
// number of policies (make bench: agent). Other kinds keep the dynamic
// watches.

// dependsOnIndex indexes Policies by the objects they depend on and the
// objects their templates would be, as dependencyRef values.
const dependsOnIndex = "templatesync.dependsOn"

// configurationPolicyGVK is the template kind read from the informers.
var configurationPolicyGVK = policyv1.GroupVersion.WithKind("ConfigurationPolicy")

// local reports whether the object k names is read from the informers.
func (r *Reconciler) local(k depgraph.Key) bool {
	return k.Group == policyv1.GroupName && k.Version == policyv1.GroupVersion.Version &&
		(k.Kind == "Policy" || k.Kind == configurationPolicyGVK.Kind) &&
		(r.Namespace == "" || k.Namespace == r.Namespace)
}

// keyOf returns the Key of obj.
func keyOf(obj *unstructured.Unstructured) depgraph.Key {
	gvk := obj.GroupVersionKind()
	return depgraph.Key{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// observeLocal reads the dependency k from the informers.
func (r *Reconciler) observeLocal(ctx context.Context, k depgraph.Key) (Observation, error) {
	key := types.NamespacedName{Namespace: k.Namespace, Name: k.Name}
	var state policyv1.ComplianceState
	if k.Kind == "Policy" {
		p := &policyv1.Policy{}
		if err := r.cache.Get(ctx, key, p); err != nil {
			return Observation{}, client.IgnoreNotFound(err)
		}
		state = p.Status.ComplianceState
	} else {
		c := &policyv1.ConfigurationPolicy{}
		if err := r.cache.Get(ctx, key, c); err != nil {
			return Observation{}, client.IgnoreNotFound(err)
		}
		state = c.Status.ComplianceState
	}
	return Observation{Found: true, Compliance: state}, nil
}

// readLocal reads the ConfigurationPolicy k names from the informers, as
// unstructured: nil when it does not exist.
//
// Note: it reads the typed informer configpolicy evaluates from and
// converts the one object, rather than keep a second, unstructured informer
// of every ConfigurationPolicy (a fifth of the agent's heap at 2,000
// policies: make bench, agent idle heap profile).
func (r *Reconciler) readLocal(ctx context.Context, k depgraph.Key) (*unstructured.Unstructured, error) {
	typed := &policyv1.ConfigurationPolicy{}
	err := r.cache.Get(ctx, types.NamespacedName{Namespace: k.Namespace, Name: k.Name}, typed)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting %s %s: %w", k.Kind, k.Name, err)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s: %w", k.Kind, k.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(k.GroupVersionKind())
	return u, nil
}

// readObject reads, through reader, the object of kind gvk named key, as
// unstructured: nil when it does not exist.
func readObject(ctx context.Context, reader client.Reader, gvk schema.GroupVersionKind, key types.NamespacedName) (*unstructured.Unstructured, error) {
	u := unstructuredFor(gvk)
	err := reader.Get(ctx, key, u)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("getting %s %s: %w", gvk.Kind, key.Name, err)
	}
	return u, nil
}

// dependencyRef is the dependsOnIndex value of an object: its kind,
// namespace and name (the group is left out: a wider match only enqueues
// more).
func dependencyRef(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// dependsOn is the index function of dependsOnIndex: every object a
// Policy's dependencies and its templates' extra dependencies name.
func dependsOn(obj client.Object) []string {
	p, ok := obj.(*policyv1.Policy)
	if !ok {
		return nil
	}
	var out []string
	add := func(deps []policyv1.PolicyDependency) {
		for _, d := range deps {
			ns := d.Namespace
			if ns == "" {
				ns = p.Namespace
			}
			out = append(out, dependencyRef(d.Kind, ns, d.Name))
			if ns != p.Namespace { // our own kinds resolve to the Policy's namespace
				out = append(out, dependencyRef(d.Kind, p.Namespace, d.Name))
			}
		}
	}
	add(p.Spec.Dependencies)
	for _, t := range p.Spec.PolicyTemplates {
		add(t.ExtraDependencies)
		// A Policy also waits on the objects its templates would be: one
		// that holds a template's name elsewhere may go and free it.
		if kind, name := t.KindAndName(); name != "" {
			out = append(out, dependencyRef(kind, p.Namespace, name))
		}
	}
	return out
}

// dependants returns the Policies that depend on obj.
func (r *Reconciler) dependants(ctx context.Context, obj client.Object, kind string) []reconcile.Request {
	list := &policyv1.PolicyList{}
	if err := r.cache.List(ctx, list, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{dependsOnIndex: dependencyRef(kind, obj.GetNamespace(), obj.GetName())}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the dependants", "kind", kind, "name", obj.GetName())
		return nil
	}
	return enqueue.Each(list.Items)
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// dependencyEvents enqueues the dependants of a Policy or
// ConfigurationPolicy when it appears, goes, or changes compliance; and,
// for a template (withOwner), its owner when it appears, goes, or changes
// other than in status.
func (r *Reconciler) dependencyEvents(kind string, withOwner bool) handler.EventHandler {
	enqueue := func(ctx context.Context, q queue, obj client.Object, dependants, owner bool) {
		if r.Namespace != "" && obj.GetNamespace() != r.Namespace {
			return
		}
		if dependants {
			addFirst(q, r.dependants(ctx, obj, kind)...)
		}
		if name := obj.GetLabels()[policyv1.PolicyLabel]; owner && withOwner && name != "" {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}})
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) { enqueue(ctx, q, e.Object, true, true) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { enqueue(ctx, q, e.Object, true, true) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			enqueue(ctx, q, e.ObjectNew, complianceOf(e.ObjectOld) != complianceOf(e.ObjectNew), notStatusOnly(e.ObjectOld, e.ObjectNew))
		},
	}
}

// UnblockPriority is the queue priority of a Policy enqueued because one of
// its dependencies appeared, went or changed compliance. Such work can end
// a Pending state (or start one that is due), so it goes before new work:
// a dependency turning Compliant must not wait behind a burst of
// thousands of newly copied Policies, which the queue takes at priority 0
// (and at a lower one when they come from the initial list).
const UnblockPriority = 10

// addFirst adds reqs to q at UnblockPriority when q is a priority queue
// (controller-runtime's default), else in order.
func addFirst(q queue, reqs ...reconcile.Request) {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(UnblockPriority)}, reqs...)
		return
	}
	for _, req := range reqs {
		q.Add(req)
	}
}

// complianceOf returns obj's status.compliant.
func complianceOf(obj client.Object) policyv1.ComplianceState {
	switch o := obj.(type) {
	case *policyv1.Policy:
		return o.Status.ComplianceState
	case *policyv1.ConfigurationPolicy:
		return o.Status.ComplianceState
	}
	return ""
}

// notStatusOnly reports whether an update changed more than the status:
// the spec (generation), labels, annotations, owners or deletion.
func notStatusOnly(old, updated client.Object) bool {
	return old.GetGeneration() != updated.GetGeneration() ||
		!equality.Semantic.DeepEqual(old.GetLabels(), updated.GetLabels()) ||
		!equality.Semantic.DeepEqual(old.GetAnnotations(), updated.GetAnnotations()) ||
		!equality.Semantic.DeepEqual(old.GetOwnerReferences(), updated.GetOwnerReferences()) ||
		!equality.Semantic.DeepEqual(old.GetDeletionTimestamp(), updated.GetDeletionTimestamp())
}
