package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// report is what one `make bench` run prints and writes as JSON.
type report struct {
	mu      sync.Mutex
	Machine machine `json:"machine"`
	Scale   float64 `json:"scale"`
	Rows    []row   `json:"rows"`
}

// machine describes where the numbers were measured.
type machine struct {
	CPUs      int    `json:"cpus"`
	Model     string `json:"model"`
	MemoryGiB string `json:"memoryGiB"`
	LoadAvg   string `json:"loadAvgAtStart"`
	GoVersion string `json:"goVersion"`
}

// row is one measured stage.
type row struct {
	Stage string `json:"stage"`
	// Scale says what was measured, e.g. "1000 clusters × 50 policies".
	Scale string `json:"scale"`
	// Units is how many units of work the stage handled (Unit names them:
	// replicas, policies, namespaces, clusters), the x of a scaling curve.
	Units   float64 `json:"units,omitempty"`
	Unit    string  `json:"unit,omitempty"`
	Seconds float64 `json:"seconds"`
	// CeilingSeconds is the time a plain client took for the same number of
	// objects of the same kind with the same concurrency; 0 when none applies.
	CeilingSeconds float64  `json:"ceilingSeconds,omitempty"`
	Ratio          float64  `json:"ratio,omitempty"`
	Extra          []metric `json:"extra,omitempty"`
}

// metric is an extra figure of a row (writes per replica, p99, RSS ...).
type metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

// add records a row; it is safe for concurrent use.
func (r *report) add(x row) {
	if x.CeilingSeconds > 0 {
		x.Ratio = x.Seconds / x.CeilingSeconds
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Rows = append(r.Rows, x)
}

// write prints the markdown table to w and the JSON to path.
func (r *report) write(w io.Writer, path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.Machine
	fmt.Fprintf(w, "\nMachine: %d CPUs, %s, %s GiB RAM, load average at start %s, %s; BENCH_SCALE=%g\n\n",
		m.CPUs, m.Model, m.MemoryGiB, m.LoadAvg, m.GoVersion, r.Scale)
	fmt.Fprintln(w, "| stage | scale | time | ceiling | ratio | other |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---|")
	for _, x := range r.Rows {
		ceiling, ratio := "–", "–"
		if x.CeilingSeconds > 0 {
			ceiling, ratio = fmt.Sprintf("%.1f s", x.CeilingSeconds), fmt.Sprintf("%.2f", x.Ratio)
		}
		fmt.Fprintf(w, "| %s | %s | %.1f s | %s | %s | %s |\n", x.Stage, x.Scale, x.Seconds, ceiling, ratio, extras(x.Extra))
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	fmt.Fprintf(w, "\nResults written to %s\n", path)
	return nil
}

// extras renders the extra metrics of a row as "name value unit, ...".
func extras(ms []metric) string {
	parts := make([]string, 0, len(ms))
	for _, m := range ms {
		v := fmt.Sprintf("%.3g", m.Value)
		if m.Value >= 1000 || m.Value == float64(int64(m.Value)) {
			v = fmt.Sprintf("%.0f", m.Value)
		}
		parts = append(parts, strings.TrimSpace(m.Name+" "+v+" "+m.Unit))
	}
	return strings.Join(parts, ", ")
}

// outPath is BENCH_OUT, or bench-results.json at the repository root.
func outPath() string {
	if p := os.Getenv("BENCH_OUT"); p != "" {
		return p
	}
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "bench-results.json"
	}
	return filepath.Join(root, "bench-results.json")
}

// describeMachine reads the CPU model, memory and load from /proc.
func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Model: "unknown", MemoryGiB: "?"}
	if v := procField("/proc/cpuinfo", "model name"); v != "" {
		m.Model = v
	}
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		var kb float64
		if _, err := fmt.Sscanf(v, "%f", &kb); err == nil {
			m.MemoryGiB = fmt.Sprintf("%.1f", kb/1024/1024)
		}
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.Join(strings.Fields(string(data))[:3], " ")
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// since is the seconds elapsed from t.
func since(t time.Time) float64 { return time.Since(t).Seconds() }
