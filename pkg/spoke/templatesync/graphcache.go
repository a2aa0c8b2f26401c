package templatesync

import (
	"context"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/depgraph"
)

// graphCache keeps each namespace's dependency graph up to date one Policy
// at a time. Every reconcile needs the graph of the whole namespace (to
// find cycles), and computing a Policy's node decodes all its templates, so
// only the nodes of Policies that changed are computed again, and the
// namespace's Policies are listed only the first time and when the template
// kinds change: a burst of n new Policies costs O(n) decodes, not O(n²),
// under the one lock every reconcile takes.
type graphCache struct {
	mu         sync.Mutex
	namespaces map[string]*namespaceGraph
}

// policySource reads the Policies of one namespace: all of them, or one by
// name (nil when it does not exist).
type policySource struct {
	list func() ([]policyv1.Policy, error)
	get  func(name string) (*policyv1.Policy, error)
}

// namespaceGraph is one namespace's graph, the Policy nodes it is built
// from, and the Policies that changed since.
type namespaceGraph struct {
	// kinds is the kindsKey of the template kinds the nodes are computed for.
	kinds string
	// nodes are the namespace's Policies' nodes, by Policy name.
	nodes map[string]cachedNode
	// sources are, for each node of graph, the Policies whose templates
	// give it its edges, sorted.
	sources map[depgraph.Node][]string
	// graph is shared by every reconcile that asked for it: it is never
	// changed, only replaced.
	graph depgraph.Graph
	// dirty are the Policies that appeared, went or changed their spec
	// since graph was built.
	dirty map[string]bool
}

// cachedNode is a Policy's depgraph.PolicyNode and what it was computed from.
type cachedNode struct {
	uid        types.UID
	generation int64
	node       depgraph.PolicyNode
}

// graphFor returns the dependency graph of namespace for kinds: the last
// one when no Policy of namespace has appeared, gone or changed its spec
// since (see invalidations), one with the changed Policies' nodes replaced
// (read with src.get) otherwise, or one built from src.list the first time
// and when kinds change. The graph is shared: only read it.
//
// Note: an informer calls its handlers after it has stored the change, so
// a read that follows the handler sees the change, and a read that saw a
// change whose handler has not run yet reads it once more later.
func (c *graphCache) graphFor(namespace string, kinds map[schema.GroupKind]bool, src policySource) (depgraph.Graph, error) {
	key := kindsKey(kinds)
	c.mu.Lock()
	defer c.mu.Unlock()
	ns := c.namespaces[namespace]
	if ns == nil || ns.kinds != key {
		policies, err := src.list()
		if err != nil {
			return nil, err
		}
		if c.namespaces == nil {
			c.namespaces = map[string]*namespaceGraph{}
		}
		c.namespaces[namespace] = newNamespaceGraph(namespace, kinds, key, policies)
		return c.namespaces[namespace].graph, nil
	}
	if len(ns.dirty) > 0 {
		if err := ns.update(namespace, kinds, src.get); err != nil {
			return nil, err
		}
	}
	return ns.graph, nil
}

// changed records that Policy name of namespace appeared, went or changed
// its spec. A namespace without a graph yet lists its Policies when asked.
func (c *graphCache) changed(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ns := c.namespaces[namespace]; ns != nil {
		ns.dirty[name] = true
	}
}

// invalidations is the Policy event handler that keeps graphFor current: it
// enqueues nothing.
func (c *graphCache) invalidations() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ queue) {
			c.changed(e.Object.GetNamespace(), e.Object.GetName())
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ queue) {
			c.changed(e.Object.GetNamespace(), e.Object.GetName())
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ queue) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() || e.ObjectOld.GetUID() != e.ObjectNew.GetUID() {
				c.changed(e.ObjectNew.GetNamespace(), e.ObjectNew.GetName())
			}
		},
	}
}

// newNamespaceGraph returns the graph of policies, all in namespace, for
// kinds (key is their kindsKey).
func newNamespaceGraph(namespace string, kinds map[schema.GroupKind]bool, key string, policies []policyv1.Policy) *namespaceGraph {
	ns := &namespaceGraph{kinds: key, nodes: map[string]cachedNode{}, sources: map[depgraph.Node][]string{}, dirty: map[string]bool{}}
	nodes := make([]depgraph.PolicyNode, 0, len(policies))
	for i := range policies {
		p := &policies[i]
		cached := cachedNode{uid: p.UID, generation: p.Generation, node: depgraph.PolicyNodeOf(namespace, kinds, p)}
		ns.nodes[p.Name] = cached
		nodes = append(nodes, cached.node)
		for _, n := range nodesOf(cached.node) {
			ns.sources[n] = insertSorted(ns.sources[n], p.Name)
		}
	}
	ns.graph = depgraph.BuildGraph(nodes)
	return ns
}

// update replaces the nodes of the dirty Policies, read with get, and the
// edges of the graph's nodes they give edges to. On error nothing changes.
func (ns *namespaceGraph) update(namespace string, kinds map[schema.GroupKind]bool, get func(string) (*policyv1.Policy, error)) error {
	current := make(map[string]*cachedNode, len(ns.dirty))
	for name := range ns.dirty {
		p, err := get(name)
		if err != nil {
			return err
		}
		if p == nil {
			current[name] = nil
			continue
		}
		cached, ok := ns.nodes[name]
		if !ok || cached.uid != p.UID || cached.generation != p.Generation {
			cached = cachedNode{uid: p.UID, generation: p.Generation, node: depgraph.PolicyNodeOf(namespace, kinds, p)}
		}
		current[name] = &cached
	}
	affected := map[depgraph.Node]bool{}
	for name, cached := range current {
		if old, ok := ns.nodes[name]; ok {
			for _, n := range nodesOf(old.node) {
				ns.sources[n] = removeSorted(ns.sources[n], name)
				affected[n] = true
			}
			delete(ns.nodes, name)
		}
		if cached == nil {
			continue
		}
		ns.nodes[name] = *cached
		for _, n := range nodesOf(cached.node) {
			ns.sources[n] = insertSorted(ns.sources[n], name)
			affected[n] = true
		}
	}
	next := maps.Clone(ns.graph)
	for n := range affected {
		sources := ns.sources[n]
		if len(sources) == 0 {
			delete(ns.sources, n)
			delete(next, n)
			continue
		}
		var edges []depgraph.Node
		for _, name := range sources {
			edges = append(edges, edgesOf(ns.nodes[name].node, n)...)
		}
		next[n] = edges
	}
	ns.graph, ns.dirty = next, map[string]bool{}
	return nil
}

// nodesOf are the nodes of the graph that Policy p gives edges to.
func nodesOf(p depgraph.PolicyNode) []depgraph.Node {
	var nodes []depgraph.Node
	p.Edges(func(from depgraph.Node, _ ...depgraph.Node) { nodes = append(nodes, from) })
	return nodes
}

// edgesOf are the edges Policy p gives node n.
func edgesOf(p depgraph.PolicyNode, n depgraph.Node) []depgraph.Node {
	var edges []depgraph.Node
	p.Edges(func(from depgraph.Node, to ...depgraph.Node) {
		if from == n {
			edges = append(edges, to...)
		}
	})
	return edges
}

func insertSorted(names []string, name string) []string {
	i, found := slices.BinarySearch(names, name)
	if found {
		return names
	}
	return slices.Insert(names, i, name)
}

func removeSorted(names []string, name string) []string {
	if i, found := slices.BinarySearch(names, name); found {
		return slices.Delete(names, i, i+1)
	}
	return names
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
		out = append(out, k...)
		out = append(out, ',')
	}
	return string(out)
}
