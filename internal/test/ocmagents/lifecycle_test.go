package ocmagents_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// TestNoProcessOutlivesEnv checks that the OCM processes of an Env carry
// internal/test/controlplane's owner mark, log to files in its Dir, and are gone
// once its Stop returns.
func TestNoProcessOutlivesEnv(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	g := NewWithT(t)
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{"cluster1"}})
	logOnFailure(t, env)
	g.Expect(ocmagents.StartPlacementController(t.Context(), env)).To(Succeed())
	g.Expect(ocmagents.StartWorkAgents(t.Context(), env)).To(Succeed())
	pids := ocmagents.Processes(env.Dir)
	g.Expect(pids).To(HaveLen(2), "the placement controller and the work agent")
	g.Expect(controlplane.Processes(os.Getpid())).To(ContainElements(pids), "marked for internal/test/controlplane's Sweep")
	for _, name := range []string{"placement-controller", "work-agent-cluster1"} {
		g.Expect(os.ReadFile(filepath.Join(env.Dir, "logs", name+".log"))).NotTo(BeEmpty())
	}

	g.Expect(env.Stop()).To(Succeed())
	g.Expect(ocmagents.Processes(env.Dir)).To(BeEmpty())
	for _, pid := range pids {
		g.Expect(controlplane.Processes(os.Getpid())).NotTo(ContainElement(pid))
	}
}

// dieHelperEnv names the Dir of the Env that TestDieHelper starts, with the
// placement controller, before it waits to be killed: it runs in a child
// process of TestProcessesDieWithTestProcess.
const dieHelperEnv = "CANOPY_OCMAGENTS_DIE_HELPER"

func TestDieHelper(t *testing.T) {
	dir := os.Getenv(dieHelperEnv)
	if dir == "" {
		t.Skip("helper process of TestProcessesDieWithTestProcess")
	}
	env, err := testenv.Start(context.Background(), testenv.Options{Dir: dir, ManagedClusters: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ocmagents.StartPlacementController(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	fmt.Println("READY")
	time.Sleep(time.Hour) // until killed
}

// TestProcessesDieWithTestProcess SIGKILLs a test process running the
// placement controller, so that no Stop runs, and checks that the
// controller dies with it.
func TestProcessesDieWithTestProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal and /proc are Linux's")
	}
	g := NewWithT(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDieHelper$", "-test.v")
	cmd.Env = append(os.Environ(), dieHelperEnv+"="+dir)
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
	g.Eventually(ready).WithTimeout(3*time.Minute).Should(Receive(BeTrue()), "the helper is ready")
	g.Expect(ocmagents.Processes(dir)).To(HaveLen(1), "the placement controller")

	g.Expect(cmd.Process.Kill()).To(Succeed())
	_ = cmd.Wait()
	g.Eventually(func() []int { return ocmagents.Processes(dir) }).WithTimeout(10 * time.Second).Should(BeEmpty())
	// Note: so are the helper's etcd and kube-apiserver, before t.TempDir
	// removes their data.
	g.Eventually(func() []int { return controlplane.Processes(cmd.Process.Pid) }).WithTimeout(10 * time.Second).Should(BeEmpty())
}

// logOnFailure logs the end of each OCM process's log of env when t fails,
// before env.Stop removes them.
func logOnFailure(t *testing.T, env *testenv.Env) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(ocmagents.LogTails(env))
			if kept, err := keepLogs(env); err == nil {
				t.Logf("the whole logs are kept in %s", kept)
			}
		}
	})
}

// keepLogs copies env's logs out of its directory, which is removed when
// the test ends, so that a failure can be read in full.
func keepLogs(env *testenv.Env) (string, error) {
	dir, err := os.MkdirTemp("", "canopy-ocmagents-logs-")
	if err != nil {
		return "", err
	}
	return dir, os.CopyFS(dir, os.DirFS(filepath.Join(env.Dir, "logs")))
}
