//go:build linux

package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
)

// Agent stage sizes at BENCH_SCALE=1.
const (
	agentChains = 500
	chainDepth  = 4
	// agentCluster is the managed cluster's name and cluster namespace.
	agentCluster = "managed"
	// configPolicyWorkers is the configpolicy controller's default
	// concurrency, the concurrency of the agent ceiling.
	configPolicyWorkers = controllerdefaults.ConfigPolicyConcurrency
	// idleWindow is how long the agent's idle CPU is measured.
	idleWindow = 30 * time.Second
)

// agentBench is the state of one agent stage run.
type agentBench struct {
	env     *testenv.Env
	hub     client.Client // administrator of the hub
	managed client.Client // administrator of the managed cluster
	agent   *process
	chains  int
}

// BenchmarkAgent delivers chains of dependent policies to one agent and
// measures the dependency latency, the convergence and the agent at idle.
func BenchmarkAgent(b *testing.B) {
	ctx := b.Context()
	for b.Loop() {
		s := startAgentBench(ctx, b)
		rows := s.converge(ctx, b)
		rows = append(rows, s.idle(ctx, b))
		s.agent.stop()
		ceil, err := ceiling(ctx, s.managed, s.chains*chainDepth, configPolicyWorkers, ceilingConfigPolicy)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rows {
			r.Scale = fmt.Sprintf("%d policies in %d chains of depth %d", s.chains*chainDepth, s.chains, chainDepth)
			r.Units, r.Unit = float64(s.chains*chainDepth), "policies"
			if r.CeilingSeconds < 0 {
				r.CeilingSeconds = ceil
			}
			results.add(r)
		}
	}
}

// startAgentBench starts a hub and a managed cluster and canopy-agent.
func startAgentBench(ctx context.Context, b testing.TB) *agentBench {
	b.Helper()
	env, err := testenv.Start(ctx, testenv.Options{ManagedClusters: []string{agentCluster}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	mc := env.Cluster(agentCluster)
	s := &agentBench{env: env, chains: scaled(agentChains)}
	if s.hub, err = plainClient(env.Hub.Config); err != nil {
		b.Fatal(err)
	}
	if s.managed, err = plainClient(mc.Config); err != nil {
		b.Fatal(err)
	}
	s.agent, err = newProcess("canopy-agent", b.TempDir(), "--kubeconfig="+mc.KubeconfigPath,
		"--hub-kubeconfig="+mc.HubKubeconfigPath, "--cluster-name="+agentCluster)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.agent.start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.agent.stop)
	return s
}

// chainPolicy is the replica name of link k of chain c, and its template's.
func chainPolicy(c, k int) (replica, template string) {
	template = fmt.Sprintf("chain-%03d-%d", c, k)
	return policyNamespace + "." + template, template
}

// replica is link k of chain c as the hub propagator would write it: a
// Policy in the cluster namespace depending on link k-1.
func replica(c, k int) *policyv1.Policy {
	name, template := chainPolicy(c, k)
	var deps []string
	if k > 0 {
		dep, _ := chainPolicy(c, k-1)
		deps = append(deps, dep)
	}
	p := policyWithTemplate(agentCluster, name, template, deps...)
	p.Labels = map[string]string{
		policyv1.RootPolicyLabel:       policyNamespace + "." + template,
		policyv1.ClusterNameLabel:      agentCluster,
		policyv1.ClusterNamespaceLabel: agentCluster,
	}
	return p
}

// ceilingConfigPolicy is the i-th object of the agent ceiling: the same
// ConfigurationPolicy as the templates, in namespace default.
func ceilingConfigPolicy(i int) client.Object {
	obj := &unstructured.Unstructured{Object: configurationPolicy(fmt.Sprintf("ceiling-%04d", i))}
	obj.SetNamespace("default")
	return obj
}

// percentile is the p-th percentile (0..100) of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// latencies are, for each link after the first, the time from its
// dependency's local Policy being seen Compliant to its template being seen
// evaluated, in milliseconds, sorted.
func latencies(chains int, compliant, evaluated *seen) []float64 {
	var ms []float64
	for c := range chains {
		for k := 1; k < chainDepth; k++ {
			dep, _ := chainPolicy(c, k-1)
			_, template := chainPolicy(c, k)
			from, ok1 := compliant.at(agentCluster + "/" + dep)
			to, ok2 := evaluated.at(agentCluster + "/" + template)
			if ok1 && ok2 {
				ms = append(ms, float64(to.Sub(from).Microseconds())/1000)
			}
		}
	}
	slices.Sort(ms)
	return ms
}

// statusCompliant matches an unstructured object whose status.compliant is
// Compliant.
func statusCompliant(obj any) bool {
	return unstructuredField(obj, "status", "compliant") == string(policyv1.Compliant)
}

// evaluatedTemplate matches a ConfigurationPolicy that has been evaluated.
func evaluatedTemplate(obj any) bool {
	return unstructuredField(obj, "status", "compliant") != "" && unstructuredField(obj, "status", "lastEvaluated") != ""
}
