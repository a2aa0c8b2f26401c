package webdriver

import (
	"os/exec"
	"syscall"
)

// ownGroup runs cmd in a process group of its own, so that Stop can end
// chromedriver and the browsers it started together, and asks the kernel
// to kill chromedriver when the process that started it dies.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills every process of cmd's group: chromedriver, and the
// browsers of sessions not deleted, which would otherwise outlive it.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
