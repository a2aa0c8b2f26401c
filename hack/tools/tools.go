//go:build tools

// Package tools pins the code generators the Makefile builds, so that every
// developer and CI run the same versions. It is a separate module to keep
// their dependencies out of the project's go.mod.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
