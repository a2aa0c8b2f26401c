//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// Hub stage sizes at BENCH_SCALE=1.
const (
	hubClusters   = 1000
	hubPolicies   = 50
	hubPlacements = 5
	// hubWorkers is canopy-hub's default --concurrent-reconciles: the
	// propagator writes the replicas of a root one after another, so this
	// is the concurrency of its writes and of its ceiling.
	hubWorkers = 2
	// agentWriters is how many agents write replica statuses at once.
	agentWriters = 16
	// seedWorkers is the concurrency of the benchmark's own seeding.
	seedWorkers = 16
)

// hubResources are the resources the hub writes (API servers also write
// their own leases and endpoints, which are not counted).
var hubResources = []string{"policies", "policies/status", "policysets", "policysets/status", "events", "placementbindings"}

// hubBench is the state of one hub stage run.
type hubBench struct {
	cp       *controlplane.ControlPlane
	c        client.Client
	hub      *process
	clusters []string
	policies []string
}

// BenchmarkHub propagates policies × clusters through Placements, reflects
// replica statuses on the roots, and restarts the hub with nothing changed.
func BenchmarkHub(b *testing.B) {
	ctx := b.Context()
	for b.Loop() {
		h := startHubBench(ctx, b)
		replicas := len(h.clusters) * len(h.policies)
		scaleText := fmt.Sprintf("%d clusters × %d policies, %d placements", len(h.clusters), len(h.policies), hubPlacements)
		prop := h.propagate(ctx, b)
		status := h.reflectStatuses(ctx, b)
		restart := h.restart(ctx, b)
		h.hub.stop()
		ceil, err := ceiling(ctx, h.c, replicas, hubWorkers, h.ceilingReplica)
		if err != nil {
			b.Fatal(err)
		}
		prop.Scale, status.Scale, restart.Scale = scaleText, scaleText, scaleText
		for _, r := range []*row{&prop, &status, &restart} {
			r.Units, r.Unit = float64(replicas), "replicas"
		}
		prop.CeilingSeconds = ceil
		for _, r := range []row{prop, status, restart} {
			results.add(r)
		}
	}
}

// startHubBench starts a hub API server, seeds the clusters and placements,
// and starts canopy-hub.
func startHubBench(ctx context.Context, b testing.TB) *hubBench {
	b.Helper()
	h := startHubAPIServer(ctx, b)
	h.hub = startHub(ctx, b, h.cp.KubeconfigPath,
		"--zap-time-encoding=rfc3339nano") // Note: the log (BENCH_PPROF keeps it) times each step to the millisecond
	return h
}

// startHub starts canopy-hub on the API server of kubeconfig, without its
// addon manager, with args besides, and waits until it serves its metrics;
// it is stopped when the benchmark ends.
func startHub(ctx context.Context, b testing.TB, kubeconfig string, args ...string) *process {
	b.Helper()
	p, err := newProcess("canopy-hub", b.TempDir(), append([]string{"--kubeconfig=" + kubeconfig, "--addon-manager=false"}, args...)...)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.stop)
	if err := waitFor(ctx, "canopy-hub's metrics", 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := p.scrape(ctx)
		return err == nil, err
	}); err != nil {
		b.Fatal(err)
	}
	return p
}

// seed creates the cluster namespaces and ManagedClusters, the Placements
// and their decisions (every Placement selects every cluster).
func (h *hubBench) seed(ctx context.Context) error {
	if err := h.c.Create(ctx, namespace(policyNamespace)); err != nil {
		return err
	}
	n := len(h.clusters)
	if err := createAll(ctx, h.c, 2*n, seedWorkers, func(i int) client.Object {
		if i < n {
			return namespace(h.clusters[i])
		}
		return managedCluster(h.clusters[i-n])
	}); err != nil {
		return err
	}
	for p := range hubPlacements {
		name := fmt.Sprintf("placement-%d", p)
		if err := h.c.Create(ctx, placement(name)); err != nil {
			return err
		}
		for start := 0; start < n; start += 100 {
			pd := decision(name, start/100+1, h.clusters[start:min(n, start+100)])
			status := pd.Status
			if err := h.c.Create(ctx, pd); err != nil {
				return err
			}
			pd.Status = status
			if err := h.c.Status().Update(ctx, pd); err != nil {
				return err
			}
		}
	}
	return nil
}

// ceilingReplica is the i-th object of the propagation ceiling: a Policy
// like a replica, in a cluster namespace.
func (h *hubBench) ceilingReplica(i int) client.Object {
	root := h.policies[i%len(h.policies)]
	p := policy(h.clusters[i/len(h.policies)], "ceiling."+root)
	p.Labels = map[string]string{"bench": "ceiling"}
	return p
}

// profileDuring writes a CPU profile of p for d, its goroutines half-way
// through and its heap at the end, when BENCH_PPROF is set.
func profileDuring(ctx context.Context, tb testing.TB, p *process, d time.Duration, name string) {
	dir := os.Getenv("BENCH_PPROF")
	if dir == "" {
		return
	}
	go func() { // where the goroutines wait, when the CPU profile shows little
		select {
		case <-ctx.Done():
		case <-time.After(d / 2):
			url := fmt.Sprintf("http://%s/debug/pprof/goroutine?debug=1", p.pprof)
			if err := fetchTo(ctx, url, filepath.Join(dir, name+"-goroutines.txt")); err != nil {
				tb.Logf("profiling %s: %v", name, err)
			}
		}
	}()
	go func() {
		path := filepath.Join(dir, name+".pprof")
		if err := p.profile(ctx, d, path); err != nil {
			tb.Logf("profiling %s: %v", name, err)
			return
		}
		tb.Logf("CPU profile of %s written to %s", name, path)
		heapProfile(ctx, tb, p, name) // what the process holds at the end of the profile
	}()
}

// apiServerProfileDuring writes, when BENCH_PPROF is set, a CPU profile of
// the API server of cfg over the next d to <name>-apiserver.pprof, in the
// background: what the server spends its time on while a controller waits
// for its answers.
func apiServerProfileDuring(ctx context.Context, tb testing.TB, cfg *rest.Config, d time.Duration, name string) {
	dir := os.Getenv("BENCH_PPROF")
	if dir == "" {
		return
	}
	go func() {
		path := filepath.Join(dir, name+"-apiserver.pprof")
		data, err := apiGet(ctx, cfg, "/debug/pprof/profile", map[string]string{"seconds": strconv.Itoa(int(d.Seconds()))}, d+time.Minute)
		if err == nil {
			err = os.WriteFile(path, data, 0o600)
		}
		if err != nil {
			tb.Logf("profiling the API server during %s: %v", name, err)
			return
		}
		tb.Logf("CPU profile of the API server during %s written to %s", name, path)
	}()
}

// heapProfile writes p's heap profile to <name>-heap.pprof in BENCH_PPROF,
// when it is set.
func heapProfile(ctx context.Context, tb testing.TB, p *process, name string) {
	dir := os.Getenv("BENCH_PPROF")
	if dir == "" {
		return
	}
	heap := filepath.Join(dir, name+"-heap.pprof")
	if err := fetchTo(ctx, fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", p.pprof), heap); err != nil {
		tb.Logf("profiling %s: %v", name, err)
	}
}

// rootKey names root policy name.
func rootKey(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: policyNamespace, Name: name}
}

// rootCompliant is whether root lists every cluster as Compliant.
func rootCompliant(root *policyv1.Policy, clusters int) bool {
	if root.Status.ComplianceState != policyv1.Compliant || len(root.Status.Status) != clusters {
		return false
	}
	for _, s := range root.Status.Status {
		if s.ComplianceState != policyv1.Compliant {
			return false
		}
	}
	return true
}
