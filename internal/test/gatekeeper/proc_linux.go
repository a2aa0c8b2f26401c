package gatekeeper

import (
	"os/exec"
	"syscall"
)

// tieToTest asks the kernel to SIGKILL Gatekeeper when the test process
// dies, as internal/test/ocmagents does for OCM's processes, in a process
// group of its own.
func tieToTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
