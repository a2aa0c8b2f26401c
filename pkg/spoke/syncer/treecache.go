package syncer

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/hierarchy"
)

// treeCacheSize bounds how many built trees are kept; beyond it the cache
// starts over.
const treeCacheSize = 256

// treeKey identifies what a tree is built from: a policy's spec, which its
// generation versions (name and namespace are fixed for a UID).
type treeKey struct {
	uid        types.UID
	generation int64
}

// trees memoizes hierarchy.Build. Note: building a tree decodes the resources of
// every node's ancestry, which for thousands of namespaces takes most of a
// second, and every namespace reconcile needs the tree (make bench found it
// to be the syncer's bottleneck: O(namespaces²) decoding on a cold start).
var trees = struct {
	sync.Mutex
	m map[treeKey]*hierarchy.Tree
}{m: map[treeKey]*hierarchy.Tree{}}

// newTree returns the tree of p, built once per generation of a policy read
// from an API server. Callers own the returned tree's problems slice; the
// rest is shared and read-only.
func newTree(p *hierarchyv1alpha1.HierarchyPolicy) *tree {
	if p.UID == "" || p.Generation == 0 { // not from an API server: no identity to key on
		return &tree{Tree: hierarchy.Build(p)}
	}
	key := treeKey{uid: p.UID, generation: p.Generation}
	trees.Lock()
	t, ok := trees.m[key]
	trees.Unlock()
	if !ok {
		t = hierarchy.Build(p)
		trees.Lock()
		if len(trees.m) >= treeCacheSize {
			clear(trees.m)
		}
		trees.m[key] = t
		trees.Unlock()
	}
	shallow := *t
	shallow.Problems = slices.Clone(t.Problems)
	return &tree{Tree: &shallow, id: key}
}

// policyTree returns the tree of p with the problems of its
// clusterResources added (any problem holds every deletion, in every
// scope), and its cluster-scoped objects.
func policyTree(p *hierarchyv1alpha1.HierarchyPolicy) (*tree, []*unstructured.Unstructured) {
	t := newTree(p)
	clusterDesired, problems := t.ClusterObjects(p.Spec.ClusterResources)
	t.Problems = append(t.Problems, problems...)
	return t, clusterDesired
}
