//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
const clockTicks = 100

// process is a controller binary (canopy-hub or canopy-agent) run by a
// benchmark, with its metrics and pprof endpoints on free local ports.
type process struct {
	name    string
	args    []string
	logPath string
	metrics string // host:port of /metrics
	pprof   string // host:port of /debug/pprof
	cmd     *exec.Cmd
	done    chan error
}

// newProcess prepares bin/<binary> (or $BENCH_BIN/<binary>) with args; its
// log goes to dir, or to $BENCH_PPROF when set.
func newProcess(binary, dir string, args ...string) (*process, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir := filepath.Join(root, "bin")
	if d := os.Getenv("BENCH_BIN"); d != "" { // e.g. a build from before a change, to compare
		binDir = d
	}
	path := filepath.Join(binDir, binary)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s not built (make build): %w", path, err)
	}
	if d := os.Getenv("BENCH_PPROF"); d != "" { // keep the logs beside the profiles
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("BENCH_PPROF: %w", err)
		}
		dir = d
	}
	p := &process{name: path, logPath: filepath.Join(dir, binary+".log")}
	if p.metrics, err = freeAddress(); err != nil {
		return nil, err
	}
	if p.pprof, err = freeAddress(); err != nil {
		return nil, err
	}
	p.args = append(args, "--metrics-bind-address="+p.metrics, "--health-probe-bind-address=0",
		"--pprof-bind-address="+p.pprof)
	return p, nil
}

// start runs the binary; it dies with the benchmark process.
func (p *process) start() error {
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	p.cmd = exec.Command(p.name, p.args...) //nolint:gosec // our own binary, our own flags
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return errors.Join(fmt.Errorf("starting %s: %w", p.name, err), log.Close())
	}
	p.done = make(chan error, 1)
	go func() { p.done <- errors.Join(p.cmd.Wait(), log.Close()) }()
	return nil
}

// stop sends SIGTERM and waits for the process to exit (SIGKILL after 30 s).
func (p *process) stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
}

// restart stops and starts the process again.
func (p *process) restart() error {
	p.stop()
	return p.start()
}

// peakRSS is the process's peak resident set size (VmHWM) in MiB.
func (p *process) peakRSS() float64 { return p.statusKiB("VmHWM") / 1024 }

// rss is the process's resident set size (VmRSS) in MiB.
func (p *process) rss() float64 { return p.statusKiB("VmRSS") / 1024 }

func (p *process) statusKiB(field string) float64 {
	if p.cmd == nil {
		return 0
	}
	v := procField(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid), field)
	kib, _ := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64)
	return kib
}

// cpuSeconds is the CPU time (user + system) the process has used.
func (p *process) cpuSeconds() float64 {
	if p.cmd == nil {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses: state is
	// field 3, utime 14 and stime 15.
	_, rest, _ := strings.Cut(string(data), ") ")
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / clockTicks
}

// profile writes a CPU profile of the next d to path (BENCH_PPROF).
func (p *process) profile(ctx context.Context, d time.Duration, path string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.pprof, int(d.Seconds()))
	var err error
	for range 100 { // a process just started may not listen yet
		if err = fetchTo(ctx, url, path); err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// scrape returns the process's Prometheus metrics text.
func (p *process) scrape(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.metrics+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func fetchTo(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", url, err)
	}
	defer resp.Body.Close()
	f, err := os.Create(path) //nolint:gosec // a path the user chose with BENCH_PPROF
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

// freeAddress returns a local TCP address nobody listens on right now.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	addr := l.Addr().String()
	return addr, l.Close()
}
