package ocmagents

import (
	"os/exec"
	"syscall"
)

// tieToTest asks the kernel to SIGKILL the OCM process when the test process
// dies, as internal/test/controlplane does for etcd and kube-apiserver. The
// process gets a process group of its own, so that Ctrl-C in a terminal
// (the demo) reaches only the test process, which stops it in order.
//
// Note: the parent-death signal fires when the OS thread that started the
// child exits, not only the process. The Go runtime ends a thread only when a
// goroutine exits while locked to it (runtime.LockOSThread), which neither
// this package nor the testing package does.
func tieToTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
