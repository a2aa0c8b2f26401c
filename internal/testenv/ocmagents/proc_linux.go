package ocmagents

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// tieToTest asks the kernel to SIGKILL the OCM process when the test process
// dies, as internal/controlplane does for etcd and kube-apiserver. The
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

// processes returns the pids of the live OCM processes started for the Env
// whose Dir is dir: those whose environment holds envDir=dir.
func processes(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(envDir + "=" + dir)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err := os.ReadFile("/proc/" + e.Name() + "/environ") // empty for a zombie
		if err != nil {
			continue
		}
		for kv := range bytes.SplitSeq(environ, []byte{0}) {
			if bytes.Equal(kv, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
