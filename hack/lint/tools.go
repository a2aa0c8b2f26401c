//go:build tools

// Package tools pins golangci-lint, built by `make lint` into bin/. It is a
// module of its own so that the linter's dependencies never touch Canopy's.
package tools

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
