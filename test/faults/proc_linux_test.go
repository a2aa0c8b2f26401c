//go:build linux

package faults

import "syscall"

// dieWithParent makes the kernel kill a started binary when the test
// process dies, however it dies.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
