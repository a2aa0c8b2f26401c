//go:build linux

package bench

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// Syncer stage sizes at BENCH_SCALE=1.
const (
	syncerNamespaces = 3000
	treeDepth        = 4
	inheritedObjects = 10
	syncerCluster    = "syncer"
	// syncerPolicyNamespace holds the HierarchyPolicy on the managed cluster.
	syncerPolicyNamespace = "bench-syncer"
	syncerPolicy          = "tree"
	// syncerWorkers is the syncer's default concurrency.
	syncerWorkers = 2
	// syncerController and syncerNamespaceController are the syncer's
	// controller names in the agent's metrics: HierarchyPolicy keys and
	// namespace keys.
	syncerController          = "syncer"
	syncerNamespaceController = "syncer-namespace"
)

// syncerResources are what the syncer writes on the managed cluster.
var syncerResources = []string{"namespaces", "configmaps", "hierarchypolicies/status", "events"}

// syncerBench is the state of one syncer stage run.
type syncerBench struct {
	env        *testenv.Env
	managed    client.Client
	agent      *process
	namespaces []string
}

// BenchmarkSyncer converges a HierarchyPolicy's tree from a cold start and
// restarts the agent with nothing changed.
func BenchmarkSyncer(b *testing.B) {
	ctx := b.Context()
	for b.Loop() {
		s := startSyncerBench(ctx, b)
		cold := s.coldStart(ctx, b)
		restart := s.restart(ctx, b)
		s.agent.stop()
		ceil, err := s.ceiling(ctx)
		if err != nil {
			b.Fatal(err)
		}
		cold.CeilingSeconds = ceil
		for _, r := range []row{cold, restart} {
			r.Scale = fmt.Sprintf("%d namespaces (depth %d) × %d objects", len(s.namespaces), treeDepth, inheritedObjects)
			r.Units, r.Unit = float64(len(s.namespaces)), "namespaces"
			results.add(r)
		}
	}
}

// startSyncerBench starts a hub and a managed cluster, and creates the
// HierarchyPolicy; the agent is prepared but not started.
func startSyncerBench(ctx context.Context, b testing.TB) *syncerBench {
	b.Helper()
	env, err := testenv.Start(ctx, testenv.Options{ManagedClusters: []string{syncerCluster}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	mc := env.Cluster(syncerCluster)
	s := &syncerBench{env: env}
	if s.managed, err = plainClient(mc.Config); err != nil {
		b.Fatal(err)
	}
	for i := range scaled(syncerNamespaces) {
		s.namespaces = append(s.namespaces, fmt.Sprintf("tree-%04d", i))
	}
	if err := s.managed.Create(ctx, namespace(syncerPolicyNamespace)); err != nil {
		b.Fatal(err)
	}
	if err := s.managed.Create(ctx, treePolicy(s.namespaces)); err != nil {
		b.Fatal(err)
	}
	s.agent, err = newProcess("canopy-agent", b.TempDir(), "--kubeconfig="+mc.KubeconfigPath,
		"--hub-kubeconfig="+mc.HubKubeconfigPath, "--cluster-name="+syncerCluster)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.agent.stop)
	return s
}

// branching is the smallest fan-out whose tree of treeDepth levels holds n
// nodes.
func branching(n int) int {
	for f := 1; ; f++ {
		size, level := 0, 1
		for range treeDepth {
			size += level
			level *= f
		}
		if size >= n {
			return f
		}
	}
}

// treePolicy declares namespaces as a tree (node i's parent is node
// (i-1)/f), the root declaring the inheritedObjects ConfigMaps.
func treePolicy(namespaces []string) *hierarchyv1alpha1.HierarchyPolicy {
	p := &hierarchyv1alpha1.HierarchyPolicy{ObjectMeta: metav1.ObjectMeta{Name: syncerPolicy, Namespace: syncerPolicyNamespace}}
	p.Spec.RemediationAction = policyv1.Enforce
	f := branching(len(namespaces))
	for i, name := range namespaces {
		node := hierarchyv1alpha1.Node{Name: name}
		if i > 0 {
			node.Parent = namespaces[(i-1)/f]
		}
		p.Spec.Nodes = append(p.Spec.Nodes, node)
	}
	for i := range inheritedObjects {
		p.Spec.Nodes[0].Resources = append(p.Spec.Nodes[0].Resources, rawJSON(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("inherited-%d", i)},
			"data":     map[string]any{"key": fmt.Sprintf("value-%d", i)},
		}))
	}
	return p
}

// ceiling creates as many namespaces and ConfigMaps as the tree holds with
// the syncer's concurrency: namespaces first, then their objects.
func (s *syncerBench) ceiling(ctx context.Context) (float64, error) {
	n := len(s.namespaces)
	name := func(i int) string { return fmt.Sprintf("ceiling-%04d", i) }
	nsSeconds, err := ceiling(ctx, s.managed, n, syncerWorkers, func(i int) client.Object { return namespace(name(i)) })
	if err != nil {
		return 0, err
	}
	cmSeconds, err := ceiling(ctx, s.managed, n*inheritedObjects, syncerWorkers, func(i int) client.Object {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("inherited-%d", i%inheritedObjects), Namespace: name(i / inheritedObjects)},
			Data:       map[string]string{"key": "value"},
		}
	})
	return nsSeconds + cmSeconds, err
}
