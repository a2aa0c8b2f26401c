//go:build linux

package bench

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

// coldStart starts the agent with the HierarchyPolicy already there and
// measures the time until every namespace and inherited object exists.
func (s *syncerBench) coldStart(ctx context.Context, b testing.TB) row {
	b.Helper()
	cfg := s.env.Cluster(syncerCluster).Config
	selector := hierarchyv1alpha1.PolicyLabel + "=" + syncerPolicy
	nsInformer, err := metadataInformer(cfg, corev1.SchemeGroupVersion.WithResource("namespaces"), selector)
	if err != nil {
		b.Fatal(err)
	}
	cmInformer, err := metadataInformer(cfg, corev1.SchemeGroupVersion.WithResource("configmaps"), selector)
	if err != nil {
		b.Fatal(err)
	}
	namespaces, err := track(ctx, nsInformer, always)
	if err != nil {
		b.Fatal(err)
	}
	objects, err := track(ctx, cmInformer, always)
	if err != nil {
		b.Fatal(err)
	}
	before, readsBefore := s.writes(ctx, b), s.reads(ctx, b)
	counted := countFromNow(ctx, b, cfg)
	start := time.Now()
	if err := s.agent.start(); err != nil {
		b.Fatal(err)
	}
	profileDuring(ctx, b, s.agent, 30*time.Second, "agent-syncer")
	apiServerProfileDuring(ctx, b, cfg, 30*time.Second, "agent-syncer")
	n := len(s.namespaces)
	if err := waitFor(ctx, "every namespace and inherited object", 200*time.Millisecond, func(context.Context) (bool, error) {
		return namespaces.count() >= n && objects.count() >= n*inheritedObjects, nil
	}); err != nil {
		b.Fatal(err)
	}
	converged := objects.last()
	if namespaces.last().After(converged) {
		converged = namespaces.last()
	}
	if _, err := waitSettled(ctx, s.agent, 3*time.Second, syncerController, syncerNamespaceController); err != nil {
		b.Fatal(err)
	}
	d, reads := s.writes(ctx, b).minus(before), s.reads(ctx, b).minus(readsBefore)
	b.Logf("syncer cold start: writes %v, reads %v", d, reads)
	return row{
		Stage:   "syncer: cold start (all namespaces and objects exist)",
		Seconds: converged.Sub(start).Seconds(),
		Extra: []metric{
			{Name: "writes/object", Value: d.total("namespaces", "configmaps") / float64(n*(inheritedObjects+1))},
			{Name: "refused writes", Value: d.refused()},
			{Name: "reads/namespace", Value: reads.total() / float64(n)},
			{Name: "agent peak RSS", Value: s.agent.peakRSS(), Unit: "MiB"},
			counted.metric(ctx, b),
		},
	}
}

// restart restarts the agent with nothing changed and counts its writes
// until the syncer has reconciled everything again.
func (s *syncerBench) restart(ctx context.Context, b testing.TB) row {
	b.Helper()
	cfg := s.env.Cluster(syncerCluster).Config
	s.logStatusWrites(ctx, b, cfg)
	r := measureRestart(ctx, b, s.agent, cfg, "syncer", syncerResources, syncerController, syncerNamespaceController)
	heapProfile(ctx, b, s.agent, "agent-syncer-restart") // its allocations are the restart's: a new process
	return r
}

// logStatusWrites logs what changes in every HierarchyPolicy status the
// syncer writes from now on, so that a restart's writes (goal 0) say why.
func (s *syncerBench) logStatusWrites(ctx context.Context, b testing.TB, cfg *rest.Config) {
	b.Helper()
	informer, err := dynamicInformer(cfg, hierarchyv1alpha1.GroupVersion.WithResource("hierarchypolicies"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, obj any) {
		o, okOld := oldObj.(*unstructured.Unstructured)
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || !okOld {
			return
		}
		before, _, _ := unstructured.NestedMap(o.Object, "status")
		after, _, _ := unstructured.NestedMap(u.Object, "status")
		keys := map[string]bool{} // the status's fields before and after
		for k := range before {
			keys[k] = true
		}
		for k := range after {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if !equality.Semantic.DeepEqual(before[k], after[k]) {
				b.Logf("HierarchyPolicy %s status written: %s was %.600v, is %.600v", u.GetName(), k, before[k], after[k])
			}
		}
	}}); err != nil {
		b.Fatal(err)
	}
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		b.Fatal("the HierarchyPolicy watch never synced")
	}
}

// writes reads the managed API server's write counters.
func (s *syncerBench) writes(ctx context.Context, b testing.TB) requests {
	return s.requests(ctx, b, isWrite)
}

// reads reads the managed API server's read counters.
func (s *syncerBench) reads(ctx context.Context, b testing.TB) requests {
	return s.requests(ctx, b, isRead)
}

func (s *syncerBench) requests(ctx context.Context, b testing.TB, counts func(verb string) bool) requests {
	b.Helper()
	w, err := countRequests(ctx, s.env.Cluster(syncerCluster).Config, counts)
	if err != nil {
		b.Fatal(err)
	}
	return w
}
