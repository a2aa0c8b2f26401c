package faults

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// binDir holds the binaries TestMain builds.
var binDir string

func TestMain(m *testing.M) {
	code, err := buildAndRun(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "faults: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// buildAndRun builds canopy-hub and canopy-agent into a temporary directory
// and runs the tests.
func buildAndRun(m *testing.M) (int, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return 0, err
	}
	if binDir, err = os.MkdirTemp("", "canopy-faults-bin-"); err != nil {
		return 0, err
	}
	defer os.RemoveAll(binDir)
	for name, pkg := range map[string]string{"canopy-agent": "./cmd/spoke", "canopy-hub": "./cmd/hub"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, name), pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("building %s: %w\n%s", pkg, err, out)
		}
	}
	return m.Run(), nil
}

// process is one of the binaries, started, killed and restarted by a test.
type process struct {
	t       *testing.T
	name    string
	args    []string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan error
	runs int
}

// newProcess prepares binary (canopy-agent or canopy-hub) with args; it is
// killed when the test ends, and its log is shown when the test fails.
func newProcess(t *testing.T, binary string, args ...string) *process {
	p := &process{t: t, name: binary, args: args, logPath: filepath.Join(t.TempDir(), binary+".log")}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			p.showLog(40)
		}
	})
	return p
}

// start starts the process; it must not be running.
func (p *process) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	NewWithT(p.t).Expect(err).NotTo(HaveOccurred())
	p.runs++
	fmt.Fprintf(log, "=== run %d\n", p.runs)
	var out io.Writer = log
	if os.Getenv("CANOPY_TEST_LOG") != "" {
		out = io.MultiWriter(log, os.Stderr)
	}
	cmd := exec.Command(filepath.Join(binDir, p.name), p.args...) //nolint:gosec // the test's own binary
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = dieWithParent()
	NewWithT(p.t).Expect(cmd.Start()).To(Succeed(), "starting %s", p.name)
	done := make(chan error, 1)
	go func() {
		done <- cmd.Wait()
		log.Close()
	}()
	p.cmd, p.done = cmd, done
}

// kill sends SIGKILL and waits until the process is gone; it does nothing
// when the process is not running.
func (p *process) kill() { p.signal(syscall.SIGKILL) }

// stop sends SIGTERM, a graceful shutdown, and waits until the process is gone.
func (p *process) stop() { p.signal(syscall.SIGTERM) }

func (p *process) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
}

// exited reports whether the process started last has exited by itself.
func (p *process) exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("%s exited: %w", p.name, errors.Join(err, errors.New("see its log")))
	default:
		return nil
	}
}

// showLog logs the last lines of the process's log.
func (p *process) showLog(lines int) {
	f, err := os.Open(p.logPath)
	if err != nil {
		return
	}
	defer f.Close()
	var tail []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 300 {
			line = line[:300] + "..."
		}
		tail = append(tail, line)
		if len(tail) > lines {
			tail = tail[1:]
		}
	}
	p.t.Logf("last lines of the log of %s:\n%s", p.name, strings.Join(tail, "\n"))
}

// waitReady waits until the process answers 200 on healthAddress's /readyz.
func (p *process) waitReady(healthAddress string) {
	p.t.Helper()
	NewWithT(p.t).Eventually(func() error {
		if err := p.exited(); err != nil {
			return StopTrying(err.Error())
		}
		resp, err := http.Get("http://" + healthAddress + "/readyz") //nolint:gosec,noctx // the test's own process
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
}
