package configpolicy

import (
	"context"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// selections remembers, per policy, the namespaces its namespaceSelector
// chose at its last evaluation. A namespace that is created, deleted or
// relabelled so that the choice changes evaluates the policy at once,
// whatever its evaluationInterval, as OCM's controller does: an interval
// says how often to look again at the same objects, not to ignore new ones.
type selections struct {
	mu     sync.Mutex
	chosen map[types.NamespacedName][]string
}

// get returns what the last evaluation of key chose, and whether one was
// remembered.
func (s *selections) get(key types.NamespacedName) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names, ok := s.chosen[key]
	return names, ok
}

// set remembers names as what key's namespaceSelector chose.
func (s *selections) set(key types.NamespacedName, names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chosen == nil {
		s.chosen = map[types.NamespacedName][]string{}
	}
	s.chosen[key] = slices.Clone(names)
}

// keepOnly forgets the policies that exist no more.
func (s *selections) keepOnly(exist map[types.NamespacedName]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key := range s.chosen {
		if !exist[key] {
			delete(s.chosen, key)
		}
	}
}

// usesSelector reports whether policy chooses namespaces by its
// namespaceSelector.
func usesSelector(policy *policyv1.ConfigurationPolicy) bool {
	sel := policy.Spec.NamespaceSelector
	return len(sel.Include) > 0 || sel.LabelSelector != nil
}

// selectionChanged reports whether the namespaces policy's
// namespaceSelector chooses now, in the cache, differ from those its last
// evaluation chose. Without a remembered choice (the agent restarted) the
// current one is remembered and nothing changed: the status is the last
// evaluation's, and its interval decides.
func (r *Reconciler) selectionChanged(ctx context.Context, policy *policyv1.ConfigurationPolicy) bool {
	if !usesSelector(policy) {
		return false
	}
	parsed, err := parseNamespaceSelector(policy.Spec.NamespaceSelector)
	if err != nil {
		return false
	}
	all, err := r.cachedNamespaces(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Cannot list namespaces", "error", err.Error())
		return false
	}
	return r.selected.changed(client.ObjectKeyFromObject(policy), parsed.selectNamespaces(all))
}

// changed reports whether now differs from what key's last evaluation
// chose; with nothing remembered (a restart) it remembers now and reports
// no change.
func (s *selections) changed(key types.NamespacedName, now []string) bool {
	before, known := s.get(key)
	if !known {
		s.set(key, now)
		return false
	}
	return !slices.Equal(before, now)
}

// cachedNamespaces lists the namespaces from the manager's cache (their
// metadata only).
func (r *Reconciler) cachedNamespaces(ctx context.Context) ([]namespace, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.ManagedClient.List(ctx, list); err != nil {
		return nil, err
	}
	out := make([]namespace, 0, len(list.Items))
	for _, o := range list.Items {
		out = append(out, namespace{name: o.Name, labels: o.Labels, terminating: o.DeletionTimestamp != nil})
	}
	return out, nil
}

// selectingPolicies maps a namespace change to the policies that choose
// namespaces by selector; each decides in Reconcile whether its choice
// changed (selectionChanged). It forgets the choices of policies that are
// gone.
func (r *Reconciler) selectingPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	var list policyv1.ConfigurationPolicyList
	if err := r.ManagedClient.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot list the ConfigurationPolicies a namespace change may concern")
		return nil
	}
	var reqs []reconcile.Request
	exist := map[types.NamespacedName]bool{}
	for i := range list.Items {
		key := client.ObjectKeyFromObject(&list.Items[i])
		exist[key] = true
		if usesSelector(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: key})
		}
	}
	r.selected.keepOnly(exist)
	return reqs
}

// namespaceChoiceMayChange passes the namespace events that can change
// which namespaces a selector chooses: creation, deletion, and an update
// of the labels or of the deletion timestamp.
var namespaceChoiceMayChange = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
			e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}
