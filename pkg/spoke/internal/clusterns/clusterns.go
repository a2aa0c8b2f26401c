// Package clusterns is the agent's view of its cluster namespace: the hub
// cache of an agent holds only its cluster's namespace, and the local copy
// of each replica lives in the managed cluster's namespace of the same name.
// The agent's hub-side controllers (spec sync, status sync) reconcile a
// replica by that shared name, triggered from either side.
package clusterns

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Clients are the two clusters an agent's hub-side controller works with,
// and the namespace it may reach on the hub.
type Clients struct {
	// HubClient reads the hub (and writes it, for the controllers that
	// write status there), restricted to the cluster namespace.
	HubClient client.Client
	// ManagedClient reads and writes the managed cluster.
	ManagedClient client.Client
	// ClusterNamespace is the cluster namespace on the hub, and the
	// namespace of the local Policies on the managed cluster.
	ClusterNamespace string
}

// PolicyController starts a controller named name on the agent's hub
// manager mgr for the Policies of the cluster namespace, also triggered by
// the local Policies of the same namespace in managed, the managed
// cluster's cache, so that a local change is seen at once. The caller adds
// options and completes it.
func (c Clients) PolicyController(mgr ctrl.Manager, managed cache.Cache, name string) *builder.Builder {
	ns := c.ClusterNamespace
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == ns })
	local := source.Kind(managed, &policyv1.Policy{}, &handler.TypedEnqueueRequestForObject[*policyv1.Policy]{},
		predicate.NewTypedPredicateFuncs(func(p *policyv1.Policy) bool { return p.Namespace == ns }))
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&policyv1.Policy{}, builder.WithPredicates(inNamespace)).
		WatchesRawSource(local)
}
