// Package docs holds the test of the documentation's references: in
// README.md, DEVELOPMENT.md, docs/ and examples/, every relative link leads
// to a file (and, with #anchor, to a heading of a markdown page), every
// `make <target>` names a target of the Makefile, and every
// `kubectl canopy <command> --flag` names a command and a flag of the
// built kubectl-canopy. The checker is in check_test.go.
package docs
