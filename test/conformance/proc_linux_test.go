package conformance_test

import (
	"os/exec"
	"syscall"
)

// ownGroup puts cmd in a process group of its own, so that the ginkgo
// processes it starts can be killed with it, and has the kernel kill it
// when the test process dies.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
