package controlplane

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// leakHelperEnv makes TestLeakHelper start a control plane and wait to be
// killed: it runs in a child process of TestNoLeakWhenOwnerKilled.
const leakHelperEnv = "CANOPY_TESTENV_LEAK_HELPER"

func TestLeakHelper(t *testing.T) {
	if os.Getenv(leakHelperEnv) == "" {
		t.Skip("helper process of TestNoLeakWhenOwnerKilled")
	}
	cp, err := Start(context.Background(), "leak")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("READY %s\n", cp.cleanup)
	time.Sleep(time.Hour) // until killed
}

// startHelper runs TestLeakHelper in a child process and returns it once its
// control plane is ready, with the directory it printed.
func startHelper(t *testing.T, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeakHelper$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if dir, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- dir
			}
		}
		close(ready)
	}()
	select {
	case dir, ok := <-ready:
		if !ok {
			t.Fatal("the helper exited before its control plane was ready")
		}
		return cmd, dir
	case <-time.After(2 * time.Minute):
		t.Fatal("the helper's control plane did not start")
	}
	return nil, ""
}

// childProcesses returns the control-plane processes cmd owns, and a func
// listing those still alive.
func childProcesses(cmd *exec.Cmd) ([]int, func() []int) {
	return Processes(cmd.Process.Pid), func() []int { return Processes(cmd.Process.Pid) }
}

// TestNoLeakWhenOwnerKilled SIGKILLs a process that runs a control plane, so
// that no deferred function or cleanup runs, and checks that its etcd and
// kube-apiserver die with it (parent-death signal) or, without that guard,
// are killed by the next sweep, and that the sweep removes its state.
func TestNoLeakWhenOwnerKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal and /proc are Linux's")
	}
	if _, err := BinaryPath("kube-apiserver"); err != nil {
		t.Skip(err)
	}
	modes := []string{"go", "none"}
	if _, err := exec.LookPath("setpriv"); err == nil {
		modes = append(modes, "setpriv")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			g := NewWithT(t)
			cmd, dir := startHelper(t, leakHelperEnv+"=1", ReaperEnv+"="+mode)
			pids, alive := childProcesses(cmd)
			g.Expect(pids).To(HaveLen(2), "etcd and kube-apiserver")

			g.Expect(cmd.Process.Kill()).To(Succeed())
			_ = cmd.Wait()
			if mode == "none" {
				// Note: checked once, at once: any other test process that
				// starts a control plane sweeps orphans too, and may legitimately
				// kill these a moment later.
				g.Expect(alive()).To(HaveLen(2), "without the guard the processes outlive their owner")
			} else {
				g.Eventually(alive).WithTimeout(10*time.Second).Should(BeEmpty(), "died with their owner")
			}
			g.Expect(dir).To(BeADirectory(), "SIGKILL leaves the state for the sweep")
			Sweep()
			g.Eventually(alive).WithTimeout(10 * time.Second).Should(BeEmpty())
			g.Expect(dir).NotTo(BeAnExistingFile())
		})
	}
}
