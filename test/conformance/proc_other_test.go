//go:build !linux

package conformance_test

import (
	"os/exec"
	"syscall"
)

// ownGroup puts cmd in a process group of its own, so that the ginkgo
// processes it starts can be killed with it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
