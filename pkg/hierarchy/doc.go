// Package hierarchy builds and validates the declared tree of a
// HierarchyPolicy (Build): its nodes, their ancestry, and the objects each
// namespace gets from the levels above it, merged per kind rule and
// labelled as Canopy writes them. TreeProblems lists what makes a tree
// invalid, as the TreeValid condition does; DeclaredTree describes it.
//
// It is a leaf, pure and reading nothing: the agent's syncer syncs what it
// computes, pkg/vet reports its problems before anything is applied, and
// kubectl canopy tree prints it.
package hierarchy
