package templatesync

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/depgraph"
)

// graphCache remembers each Policy's node of the dependency graph for the
// generation and template kinds it was computed from, and each namespace's
// last graph. Every reconcile needs the graph of the whole namespace (to
// find cycles), and computing a node decodes every template of the Policy:
// without the nodes one reconcile costs O(policies) decodes, and a
// namespace of n policies O(n²) (make bench: dependency latency at 2,000
// policies). Without the last graph, each reconcile listed and linked the
// namespace's Policies again: a graph per busy worker was most of the
// agent's heap at 2,000 policies (make bench: agent heap profile).
type graphCache struct {
	mu    sync.Mutex
	nodes map[types.UID]cachedNode
	// versions counts, per namespace, the Policies that appeared, went or
	// changed their spec (invalidate).
	versions map[string]uint64
	// built is each namespace's last graph and what it was built from.
	built map[string]builtGraph
}

// cachedNode is a depgraph.PolicyNode and what it was computed from.
type cachedNode struct {
	namespace  string
	generation int64
	kinds      string
	node       depgraph.PolicyNode
}

// builtGraph is a namespace's graph, the version of its Policies and the
// template kinds it was built from. It is shared by every reconcile: only
// read it.
type builtGraph struct {
	version uint64
	kinds   string
	graph   depgraph.Graph
}

// graphFor returns the dependency graph of namespace for kinds: the last
// one when no Policy of namespace has appeared, gone or changed its spec
// since (invalidate), else one built from the Policies list returns. The
// graph is shared: only read it.
//
// Note: an informer calls its handlers after it has stored the change, so a
// list that follows the read of a version sees every change of that
// version, and a change it misses bumps the version for the next call.
func (c *graphCache) graphFor(namespace string, kinds map[schema.GroupKind]bool, list func() ([]policyv1.Policy, error)) (depgraph.Graph, error) {
	key := kindsKey(kinds)
	c.mu.Lock()
	defer c.mu.Unlock()
	version := c.versions[namespace]
	if b, ok := c.built[namespace]; ok && b.version == version && b.kinds == key {
		return b.graph, nil
	}
	policies, err := list()
	if err != nil {
		return nil, err
	}
	g := c.graphLocked(namespace, kinds, key, policies)
	if c.built == nil {
		c.built = map[string]builtGraph{}
	}
	c.built[namespace] = builtGraph{version: version, kinds: key, graph: g}
	return g, nil
}

// invalidate records that a Policy of namespace appeared, went or changed
// its spec.
func (c *graphCache) invalidate(namespace string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.versions == nil {
		c.versions = map[string]uint64{}
	}
	c.versions[namespace]++
}

// invalidations is the Policy event handler that keeps graphFor current: it
// enqueues nothing.
func (c *graphCache) invalidations() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ queue) { c.invalidate(e.Object.GetNamespace()) },
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ queue) { c.invalidate(e.Object.GetNamespace()) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() || e.ObjectOld.GetUID() != e.ObjectNew.GetUID() {
				c.invalidate(e.ObjectNew.GetNamespace())
			}
		},
	}
}

// graphLocked returns depgraph.GraphFor(namespace, kinds, policies),
// computing only the nodes of Policies that are new or changed since the
// last call, and forgetting the Policies of namespace that are gone. key is
// the kindsKey of kinds; c.mu is held.
func (c *graphCache) graphLocked(namespace string, kinds map[schema.GroupKind]bool, key string, policies []policyv1.Policy) depgraph.Graph {
	nodes := make([]depgraph.PolicyNode, 0, len(policies))
	seen := make(map[types.UID]bool, len(policies))
	if c.nodes == nil {
		c.nodes = map[types.UID]cachedNode{}
	}
	for i := range policies {
		p := &policies[i]
		cached, ok := c.nodes[p.UID]
		if !ok || p.UID == "" || cached.generation != p.Generation || cached.kinds != key {
			cached = cachedNode{namespace: namespace, generation: p.Generation, kinds: key, node: depgraph.PolicyNodeOf(namespace, kinds, p)}
			if p.UID != "" {
				c.nodes[p.UID] = cached
			}
		}
		seen[p.UID] = true
		nodes = append(nodes, cached.node)
	}
	for uid, cached := range c.nodes {
		if cached.namespace == namespace && !seen[uid] {
			delete(c.nodes, uid)
		}
	}
	return depgraph.BuildGraph(nodes)
}

// kindsKey is a canonical string of a set of template kinds.
func kindsKey(kinds map[schema.GroupKind]bool) string {
	keys := make([]string, 0, len(kinds))
	for gk, ok := range kinds {
		if ok {
			keys = append(keys, gk.String())
		}
	}
	slices.Sort(keys)
	var out []byte
	for _, k := range keys {
		out = append(append(out, k...), ',')
	}
	return string(out)
}
