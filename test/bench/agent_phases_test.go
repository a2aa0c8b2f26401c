//go:build linux

package bench

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// agentWatches are the benchmark's clocks on the managed cluster and hub.
type agentWatches struct {
	localCompliant *seen // local Policies seen Compliant
	evaluated      *seen // ConfigurationPolicies seen evaluated
	hubCompliant   *seen // hub replicas seen Compliant
}

func (s *agentBench) watch(ctx context.Context, b testing.TB) agentWatches {
	b.Helper()
	mc := s.env.Cluster(agentCluster)
	var w agentWatches
	for _, x := range []struct {
		into  **seen
		cfg   bool // the hub's
		res   string
		match func(any) bool
	}{
		{&w.localCompliant, false, "policies", statusCompliant},
		{&w.evaluated, false, "configurationpolicies", evaluatedTemplate},
		{&w.hubCompliant, true, "policies", statusCompliant},
	} {
		cfg := mc.Config
		if x.cfg {
			cfg = s.env.Hub.Config
		}
		informer, err := dynamicInformer(cfg, policyv1.GroupVersion.WithResource(x.res))
		if err != nil {
			b.Fatal(err)
		}
		if *x.into, err = track(ctx, informer, x.match); err != nil {
			b.Fatal(err)
		}
	}
	return w
}

// converge writes the replicas on the hub and waits until every template
// has been evaluated and every replica is Compliant on the hub.
func (s *agentBench) converge(ctx context.Context, b testing.TB) []row {
	b.Helper()
	w := s.watch(ctx, b)
	n := s.chains * chainDepth
	managedBefore, hubBefore := s.writes(ctx, b)
	counted := countFromNow(ctx, b, s.env.Cluster(agentCluster).Config, s.env.Hub.Config)
	start := time.Now()
	profileDuring(ctx, b, s.agent, 30*time.Second, "agent-dependencies")
	apiServerProfileDuring(ctx, b, s.env.Cluster(agentCluster).Config, 30*time.Second, "agent-dependencies")
	if err := createAll(ctx, s.hub, n, seedWorkers, func(i int) client.Object {
		return replica(i/chainDepth, i%chainDepth)
	}); err != nil {
		b.Fatal(err)
	}
	if err := waitFor(ctx, "every template evaluated and every replica Compliant", 200*time.Millisecond,
		func(context.Context) (bool, error) {
			return w.evaluated.count() >= n && w.localCompliant.count() >= n && w.hubCompliant.count() >= n, nil
		}); err != nil {
		b.Fatal(err)
	}
	ms := latencies(s.chains, w.localCompliant, w.evaluated)
	b.Logf("agent: %d latencies, max %.0f ms", len(ms), percentile(ms, 100))
	managedAfter, hubAfter := s.writes(ctx, b)
	managed, hub := managedAfter.minus(managedBefore), hubAfter.minus(hubBefore)
	b.Logf("agent: writes on the managed cluster %v, on the hub %v", managed, hub)
	return []row{{
		Stage:          "agent: all templates evaluated (dependency chains)",
		Seconds:        w.evaluated.last().Sub(start).Seconds(),
		CeilingSeconds: -1,
		Extra: []metric{
			{Name: "dependency latency p50", Value: percentile(ms, 50), Unit: "ms"},
			{Name: "p99", Value: percentile(ms, 99), Unit: "ms"},
			{Name: "max", Value: percentile(ms, 100), Unit: "ms"},
		},
	}, {
		Stage:          "agent: all replicas Compliant on the hub",
		Seconds:        w.hubCompliant.last().Sub(start).Seconds(),
		CeilingSeconds: -1,
		Extra: []metric{
			// Note: lease renewals are the agent's heartbeat, not the workload's.
			{Name: "writes/policy on the managed cluster", Value: (managed.total() - managed["leases"]) / float64(n)},
			{Name: "on the hub", Value: hub.total(agentHubResources...) / float64(n)},
			{Name: "agent peak RSS", Value: s.agent.peakRSS(), Unit: "MiB"},
			counted.metric(ctx, b),
		},
	}}
}

// agentHubResources are what the agent writes on the hub for its policies
// (the benchmark writes the replicas themselves).
var agentHubResources = []string{"policies/status", "events"}

// writes reads the write counters of the managed cluster's API server and
// the hub's.
func (s *agentBench) writes(ctx context.Context, b testing.TB) (managed, hub requests) {
	b.Helper()
	managed, err := countWrites(ctx, s.env.Cluster(agentCluster).Config)
	if err != nil {
		b.Fatal(err)
	}
	if hub, err = countWrites(ctx, s.env.Hub.Config); err != nil {
		b.Fatal(err)
	}
	return managed, hub
}

// idle measures the agent's CPU and memory once everything has converged.
func (s *agentBench) idle(ctx context.Context, b testing.TB) row {
	b.Helper()
	select {
	case <-ctx.Done():
		b.Fatal(ctx.Err())
	case <-time.After(10 * time.Second): // let the last status writes finish
	}
	cpu0, t0 := s.agent.cpuSeconds(), time.Now()
	select {
	case <-ctx.Done():
		b.Fatal(ctx.Err())
	case <-time.After(idleWindow):
	}
	cpu := (s.agent.cpuSeconds() - cpu0) / since(t0) * 100
	heapProfile(ctx, b, s.agent, "agent-idle")
	return row{
		Stage:   "agent: agent idle",
		Seconds: idleWindow.Seconds(),
		Extra: []metric{
			{Name: "agent CPU", Value: cpu, Unit: "%"},
			{Name: "RSS", Value: s.agent.rss(), Unit: "MiB"},
			{Name: "peak RSS", Value: s.agent.peakRSS(), Unit: "MiB"},
		},
	}
}
