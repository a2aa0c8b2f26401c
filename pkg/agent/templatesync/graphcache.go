package templatesync

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/depgraph"
)

// graphCache remembers each Policy's node of the dependency graph for the
// generation and template kinds it was computed from. Every reconcile needs
// the graph of the whole namespace (to find cycles), and computing a node
// decodes every template of the Policy: without the cache one reconcile
// costs O(policies) decodes, and a namespace of n policies O(n²)
// (make bench: dependency latency at 2,000 policies).
type graphCache struct {
	mu    sync.Mutex
	nodes map[types.UID]cachedNode
}

// cachedNode is a depgraph.PolicyNode and what it was computed from.
type cachedNode struct {
	namespace  string
	generation int64
	kinds      string
	node       depgraph.PolicyNode
}

// graph returns depgraph.GraphFor(namespace, kinds, policies), computing only the
// nodes of Policies that are new or changed since the last call, and
// forgetting the Policies of namespace that are gone.
func (c *graphCache) graph(namespace string, kinds map[schema.GroupKind]bool, policies []policyv1.Policy) depgraph.Graph {
	key := kindsKey(kinds)
	nodes := make([]depgraph.PolicyNode, 0, len(policies))
	seen := make(map[types.UID]bool, len(policies))
	c.mu.Lock()
	defer c.mu.Unlock()
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
