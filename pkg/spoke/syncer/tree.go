package syncer

import "github.com/canopy-policy/canopy/pkg/hierarchy"

// tree is a HierarchyPolicy's declared tree, as pkg/hierarchy builds and
// validates it (newTree memoizes it); the syncer adds the methods of its
// own planning (generate.go, sync.go).
type tree struct {
	*hierarchy.Tree
	// id is the policy's UID and generation; zero for a policy not read
	// from an API server.
	id treeKey
}
