package syncer

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/hierarchy"
)

// evaluationTriggers lets through the changes of a HierarchyPolicy that
// call for an evaluation: spec (generation), deletion and labels (which name
// the parent Policy). Status updates, this controller's own included, do
// not.
func evaluationTriggers() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{})
}

// subtreeHandler fans a HierarchyPolicy's change out to the namespace keys it
// affects: on an update, those under the nodes that changed (the subtree
// fan-out of docs/architecture.md, "Inside the hierarchical syncer"); on
// a creation, all of them. A deletion adds none: a deleted HierarchyPolicy
// leaves what it applied.
func (r *Reconciler) subtreeHandler() handler.TypedEventHandler[client.Object, namespaceRequest] {
	return handler.TypedFuncs[client.Object, namespaceRequest]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[namespaceRequest]) {
			p, ok := e.Object.(*hierarchyv1alpha1.HierarchyPolicy)
			if ok {
				addAll(q, newTree(p).Namespaces())
				r.addPropagated(ctx, q, p.Spec.Propagation != nil)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[namespaceRequest]) {
			o, okOld := e.ObjectOld.(*hierarchyv1alpha1.HierarchyPolicy)
			n, okNew := e.ObjectNew.(*hierarchyv1alpha1.HierarchyPolicy)
			if okOld && okNew && o.Generation != n.Generation {
				addAll(q, affectedNamespaces(o, n))
				r.addPropagated(ctx, q, !equality.Semantic.DeepEqual(o.Spec.Propagation, n.Spec.Propagation))
			}
		},
	}
}

// affectedNamespaces returns the namespaces of old and new whose declared
// state may differ: the subtrees of the nodes that were added, removed or
// changed, or all of them when the managed kinds changed. It is pure.
func affectedNamespaces(old, updated *hierarchyv1alpha1.HierarchyPolicy) []string {
	to, tn := newTree(old), newTree(updated)
	set := map[string]bool{}
	if !equality.Semantic.DeepEqual(old.Spec.ManagedKinds, updated.Spec.ManagedKinds) || old.Spec.RemediationAction != updated.Spec.RemediationAction {
		for _, ns := range append(to.Namespaces(), tn.Namespaces()...) {
			set[ns] = true
		}
	}
	for name := range mergedKeys(to.Nodes, tn.Nodes) {
		a, inOld := to.Nodes[name]
		b, inNew := tn.Nodes[name]
		if inOld && inNew && equality.Semantic.DeepEqual(a, b) {
			continue
		}
		for _, ns := range append(to.Subtree(name), tn.Subtree(name)...) {
			set[ns] = true
		}
		if inOld && !a.Abstract {
			set[name] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// namespaceName is the namespace a Namespace's change concerns: itself.
func namespaceName(ns client.Object) string { return ns.GetName() }

// namespaceKeys maps a change to the key of the namespace it concerns
// (scope: namespaceName for a Namespace, the object's namespace for a synced
// object; none for a cluster-scoped one), and to those of the namespaces
// that copy from it: labels and objects propagate down.
func (r *Reconciler) namespaceKeys(scope func(client.Object) string) handler.TypedEventHandler[client.Object, namespaceRequest] {
	return forgetting[namespaceRequest]{synced: &r.synced, scope: scope, next: handler.TypedEnqueueRequestsFromMapFunc(
		func(ctx context.Context, obj client.Object) []namespaceRequest {
			ns := scope(obj)
			if ns == "" {
				return nil
			}
			keys := []namespaceRequest{{Name: ns}}
			for _, child := range r.children(ctx, ns) {
				keys = append(keys, namespaceRequest{Name: child})
			}
			return keys
		})}
}

// policyKeys maps a change of a Namespace or of a synced object to the
// HierarchyPolicies concerned (for their status); scope is as for
// namespaceKeys.
func (r *Reconciler) policyKeys(scope func(client.Object) string) handler.EventHandler {
	return forgetting[reconcile.Request]{synced: &r.synced, scope: scope, next: handler.EnqueueRequestsFromMapFunc(
		func(ctx context.Context, obj client.Object) []reconcile.Request {
			return r.policiesOf(ctx, scope(obj), obj)
		})}
}

// policiesOf returns the HierarchyPolicies whose tree has namespace ns,
// which applied obj, which have generators (a namespace's labels or a clone
// source may have changed), or (for a cluster-scoped obj) which declare
// clusterResources.
func (r *Reconciler) policiesOf(ctx context.Context, ns string, obj client.Object) []reconcile.Request {
	list, err := r.listPolicies(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot list hierarchy policies")
		return nil
	}
	owner := obj.GetLabels()[hierarchyv1alpha1.PolicyLabel]
	var out []reconcile.Request
	for i := range list.Items {
		p := &list.Items[i]
		declares := slices.ContainsFunc(p.Spec.Nodes, func(n hierarchyv1alpha1.Node) bool { return n.Name == ns })
		if declares || p.Name == owner || len(p.Spec.Generators) > 0 ||
			(obj.GetNamespace() == "" && len(p.Spec.ClusterResources) > 0) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)})
		}
	}
	return out
}

// watchKinds starts watches on the kinds the policy declares or manages,
// once per kind for the life of the process.
func (r *Reconciler) watchKinds(ctx context.Context, p *hierarchyv1alpha1.HierarchyPolicy, cluster []*unstructured.Unstructured) error {
	kinds := map[schema.GroupKind]bool{}
	for _, u := range cluster {
		kinds[u.GroupVersionKind().GroupKind()] = true
	}
	for _, mk := range p.Spec.ManagedKinds {
		kinds[schema.GroupKind{Group: mk.Group, Kind: mk.Kind}] = true
	}
	for _, g := range p.Spec.Generators {
		if g.Clone != nil {
			kinds[schema.FromAPIVersionAndKind(g.Clone.APIVersion, g.Clone.Kind).GroupKind()] = true
		} else if u, err := hierarchy.Decode(*g.Data); err == nil {
			kinds[u.GroupVersionKind().GroupKind()] = true
		}
	}
	// Note: each node's own resources, decoded once: a namespace's objects
	// are its ancestry's, so decoding every namespace's objects decoded
	// each resource once per descendant (make bench: at 3,000 namespaces,
	// 30,000 decodes per reconcile, a tenth of the syncer's allocations).
	for _, n := range p.Spec.Nodes {
		for _, raw := range n.Resources {
			if u, err := hierarchy.Decode(raw); err == nil {
				kinds[u.GroupVersionKind().GroupKind()] = true
			}
		}
	}
	for _, gk := range slices.SortedFunc(maps.Keys(kinds), compareGroupKinds) {
		if err := r.watch(ctx, gk); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) watch(ctx context.Context, gk schema.GroupKind) error {
	mapping, err := r.mapper.RESTMapping(gk)
	if err != nil {
		return fmt.Errorf("resolving kind %s: %w", gk, err)
	}
	r.watchMu.Lock()
	defer r.watchMu.Unlock()
	if r.watched[mapping.GroupVersionKind] {
		return nil
	}
	// Note: both watches share the cache's one informer of the kind, which
	// keeps metadata only: the handlers read namespaces and labels, and the
	// syncer reads what it plans from the API server. A full informer of
	// 30,000 ConfigMaps held most of the agent's memory.
	u := &metav1.PartialObjectMetadata{}
	u.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := r.policies.Watch(source.Kind[client.Object](r.cache, u, r.policyKeys(client.Object.GetNamespace))); err != nil {
		return fmt.Errorf("watching %s: %w", gk, err)
	}
	if err := r.namespaces.Watch(source.TypedKind[client.Object, namespaceRequest](r.cache, u,
		r.namespaceKeys(client.Object.GetNamespace))); err != nil {
		return fmt.Errorf("watching %s: %w", gk, err)
	}
	r.watched[mapping.GroupVersionKind] = true
	ctrl.LoggerFrom(ctx).V(4).Info("Watching kind", "kind", mapping.GroupVersionKind.String())
	return nil
}

// watching reports whether the cache has a watch of gvk (watch).
func (r *Reconciler) watching(gvk schema.GroupVersionKind) bool {
	r.watchMu.Lock()
	defer r.watchMu.Unlock()
	return r.watched[gvk]
}

func addAll(q workqueue.TypedRateLimitingInterface[namespaceRequest], namespaces []string) {
	for _, ns := range namespaces {
		q.Add(namespaceRequest{Name: ns})
	}
}

func mergedKeys[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// addPropagated adds, when changed, every namespace in a live-propagation
// tree: the propagation settings apply to all of them.
func (r *Reconciler) addPropagated(ctx context.Context, q workqueue.TypedRateLimitingInterface[namespaceRequest], changed bool) {
	if !changed {
		return
	}
	list := &corev1.NamespaceList{}
	if err := r.ManagedClient.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot list namespaces")
		return
	}
	for _, ns := range list.Items {
		if sourceOf(&ns) != "" {
			q.Add(namespaceRequest{Name: ns.Name})
		}
	}
}

// listPolicies lists the HierarchyPolicies from the cache, shared, not copied:
// only read them. A policy declaring thousands of namespaces is large, and
// each namespace event and namespace reconcile listed it: copying it was
// two thirds of what the syncer allocated during a cold start of 3,000
// namespaces, and set its peak memory (make bench: syncer heap profile).
func (r *Reconciler) listPolicies(ctx context.Context) (*hierarchyv1alpha1.HierarchyPolicyList, error) {
	list := &hierarchyv1alpha1.HierarchyPolicyList{}
	if err := r.ManagedClient.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing hierarchy policies: %w", err)
	}
	return list, nil
}
