//go:build !linux

package faults

import "syscall"

// dieWithParent: only Linux has a parent-death signal; the test's cleanup
// kills the binaries elsewhere.
func dieWithParent() *syscall.SysProcAttr { return nil }
