package testenv_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// interruptHelperEnv names the Dir of the Env that TestInterruptHelper
// starts before it waits to be interrupted: it runs in a child process of
// TestInterruptStopsEnv.
const interruptHelperEnv = "CANOPY_TESTENV_INTERRUPT_HELPER"

func TestInterruptHelper(t *testing.T) {
	dir := os.Getenv(interruptHelperEnv)
	if dir == "" {
		t.Skip("helper process of TestInterruptStopsEnv")
	}
	if _, err := testenv.Start(context.Background(), testenv.Options{Dir: dir, ManagedClusters: []string{}}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("READY")
	time.Sleep(time.Hour) // until interrupted
}

// TestInterruptStopsEnv sends SIGINT to a process running an Env and checks
// that it stops its control planes and removes its state before dying of
// the signal.
func TestInterruptStopsEnv(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	g := NewWithT(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestInterruptHelper$", "-test.v")
	cmd.Env = append(os.Environ(), interruptHelperEnv+"="+dir, controlplane.ReaperEnv+"=none") // no parent-death signal to help
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "READY") {
				ready <- true
			}
		}
		close(ready)
	}()
	g.Eventually(ready).WithTimeout(2*time.Minute).Should(Receive(BeTrue()), "the helper's Env is ready")
	g.Expect(controlplane.Processes(cmd.Process.Pid)).To(HaveLen(2), "etcd and kube-apiserver")
	g.Expect(filepath.Join(dir, "hub.kubeconfig")).To(BeAnExistingFile())

	g.Expect(cmd.Process.Signal(os.Interrupt)).To(Succeed())
	err = cmd.Wait()
	var exitErr *exec.ExitError
	g.Expect(errors.As(err, &exitErr)).To(BeTrue(), "exits abnormally: %v", err)
	g.Expect(exitErr.Sys().(syscall.WaitStatus).Signal()).To(Equal(syscall.SIGINT), "dies of the signal")
	g.Expect(controlplane.Processes(cmd.Process.Pid)).To(BeEmpty())
	g.Expect(filepath.Join(dir, controlplane.StateDirName)).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(dir, "hub.kubeconfig")).To(BeAnExistingFile(), "a caller's Dir keeps its kubeconfigs")
}
