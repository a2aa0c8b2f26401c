//go:build linux

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
	replicas "github.com/canopy-policy/canopy/pkg/replica" // the package has a func replica
)

// resolve creates the templated roots and their bindings and measures the
// time until every replica exists and holds its cluster's setting.
func (t *hubTemplatesBench) resolve(ctx context.Context, b testing.TB) row {
	b.Helper()
	resolved, err := trackRunning(t.replicas, holdsSetting("v1"))
	if err != nil {
		b.Fatal(err)
	}
	before, traffic := t.writes(ctx, b), t.configMapTraffic(ctx, b)
	counted := countFromNow(ctx, b, t.cp.Config)
	cpu, start := t.hub.cpuSeconds(), time.Now()
	profileDuring(ctx, b, t.hub, 30*time.Second, "hub-templates-resolve")
	if err := t.createTemplatedRoots(ctx); err != nil {
		b.Fatal(err)
	}
	t.waitResolved(ctx, b, resolved, "v1")
	elapsed := resolved.last().Sub(start).Seconds()
	if _, err := waitSettled(ctx, t.hub, 2*time.Second, propagator.ControllerName, rootstatus.ControllerName); err != nil {
		b.Fatal(err)
	}
	d := t.writes(ctx, b).minus(before)
	b.Logf("hub templates: %d replicas resolved in %.1f s; writes %v", t.replicaCount(), elapsed, d)
	return row{
		Stage:   "hub templates: all replicas resolved",
		Seconds: elapsed,
		Extra: append([]metric{
			{Name: "writes/replica", Value: (d.total("policies") - float64(len(t.policies))) / float64(t.replicaCount())},
			{Name: "refused writes", Value: d.refused()},
			{Name: "hub CPU", Value: t.hub.cpuSeconds() - cpu, Unit: "s"},
			{Name: "hub peak RSS", Value: t.hub.peakRSS(), Unit: "MiB"},
			counted.metric(ctx, b),
		}, t.configMapTraffic(ctx, b).since(traffic)...),
	}
}

// change writes every cluster's ConfigMap with a new setting and measures
// the time from the first write until every replica holds its new setting.
func (t *hubTemplatesBench) change(ctx context.Context, b testing.TB) row {
	b.Helper()
	updated, err := trackRunning(t.replicas, holdsSetting("v2"))
	if err != nil {
		b.Fatal(err)
	}
	before, traffic := t.writes(ctx, b), t.configMapTraffic(ctx, b)
	cpu, start := t.hub.cpuSeconds(), time.Now()
	profileDuring(ctx, b, t.hub, 30*time.Second, "hub-templates-change")
	if err := parallel(ctx, len(t.clusters), seedWorkers, func(ctx context.Context, i int) error {
		cm := valuesConfigMap(t.clusters[i], "v2")
		return t.c.Patch(ctx, cm, client.Merge)
	}); err != nil {
		b.Fatal(err)
	}
	writers := since(start)
	t.waitResolved(ctx, b, updated, "v2")
	elapsed := updated.last().Sub(start).Seconds()
	if _, err := waitSettled(ctx, t.hub, 2*time.Second, propagator.ControllerName, rootstatus.ControllerName); err != nil {
		b.Fatal(err)
	}
	d := t.writes(ctx, b).minus(before)
	b.Logf("hub templates: %d replicas re-resolved in %.1f s (ConfigMaps written in %.1f s); writes %v",
		t.replicaCount(), elapsed, writers, d)
	return row{
		Stage:   "hub templates: ConfigMaps changed → replicas re-resolved",
		Seconds: elapsed,
		Extra: append([]metric{
			{Name: "ConfigMap writers", Value: writers, Unit: "s"},
			{Name: "writes/replica", Value: d.total("policies") / float64(t.replicaCount())},
			{Name: "refused writes", Value: d.refused()},
			{Name: "hub CPU", Value: t.hub.cpuSeconds() - cpu, Unit: "s"},
			{Name: "hub peak RSS", Value: t.hub.peakRSS(), Unit: "MiB"},
		}, t.configMapTraffic(ctx, b).since(traffic)...),
	}
}

// waitResolved waits until every replica holds its setting of generation
// gen; while it waits, it says how far the replicas are.
func (t *hubTemplatesBench) waitResolved(ctx context.Context, b testing.TB, resolved *seen, gen string) {
	b.Helper()
	what := fmt.Sprintf("every replica to hold its %s setting", gen)
	if err := waitFor(ctx, what, 200*time.Millisecond, func(context.Context) (bool, error) {
		if resolved.count() >= t.replicaCount() {
			return true, nil
		}
		return false, t.unresolved(gen)
	}); err != nil {
		b.Fatal(err)
	}
}

// unresolved describes the replicas that do not hold their setting of
// generation gen yet, with one example.
func (t *hubTemplatesBench) unresolved(gen string) error {
	items := t.replicas.GetStore().List()
	var pending []*unstructured.Unstructured
	for _, obj := range items {
		if u, ok := obj.(*unstructured.Unstructured); ok && !holdsSetting(gen)(u) {
			pending = append(pending, u)
		}
	}
	if len(pending) == 0 {
		return fmt.Errorf("%d of %d replicas exist", len(items), t.replicaCount())
	}
	u := pending[0]
	return fmt.Errorf("%d of %d replicas exist, %d of them without their %s setting; e.g. %s/%s holds %q",
		len(items), t.replicaCount(), len(pending), gen, u.GetNamespace(), u.GetName(), u.Object[settingKey])
}

// ceilings measures a plain client with the propagator's concurrency
// creating the resolved replicas, then updating each to its new setting.
func (t *hubTemplatesBench) ceilings(ctx context.Context) (create, update float64, err error) {
	n := t.replicaCount()
	if create, err = ceiling(ctx, t.c, n, hubWorkers, func(i int) client.Object { return t.ceilingReplica(i, "v1") }); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := parallel(ctx, n, hubWorkers, func(ctx context.Context, i int) error {
		return t.c.Patch(ctx, t.ceilingReplica(i, "v2"), client.MergeFrom(t.ceilingReplica(i, "v1")))
	}); err != nil {
		return 0, 0, fmt.Errorf("measuring the update ceiling: %w", err)
	}
	return create, since(start), nil
}

// ceilingReplica is the i-th object of the ceilings: the replica the
// propagator builds for a cluster from a root holding the cluster's setting
// of generation gen, renamed and without the root-policy label, so that it
// is nobody's replica.
func (t *hubTemplatesBench) ceilingReplica(i int, gen string) client.Object {
	cluster := t.clusters[i/len(t.policies)]
	root := settingPolicy(policyNamespace, t.policies[i%len(t.policies)], settingValue(cluster, gen))
	p := replicas.Build(root, replicas.Cluster{Name: cluster}, nil)
	p.Name = "ceiling." + p.Name
	delete(p.Labels, policyv1.RootPolicyLabel)
	p.Labels["bench"] = "ceiling"
	return p
}

// replicaCount is the number of replicas: one per policy and cluster.
func (t *hubTemplatesBench) replicaCount() int { return len(t.clusters) * len(t.policies) }

// watchReplicas starts a watch of the replicas that keeps, of each, only
// its namespace, name and the setting of its template, and waits for its
// first list.
func (t *hubTemplatesBench) watchReplicas(ctx context.Context) (cache.SharedIndexInformer, error) {
	dc, err := dynamic.NewForConfig(t.cp.Config)
	if err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = policyv1.RootPolicyLabel })
	informer := f.ForResource(policyv1.GroupVersion.WithResource("policies")).Informer()
	if err := informer.SetTransform(slimReplica); err != nil {
		return nil, fmt.Errorf("setting the replica transform: %w", err)
	}
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("listing the replicas: %w", ctx.Err())
	}
	return informer, nil
}

// slimReplica keeps, of a replica, its namespace, name, resourceVersion and
// the setting its template holds (settingKey), so that the benchmark's
// watch of every replica stays small.
func slimReplica(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok { // a tombstone
		return obj, nil
	}
	slim := &unstructured.Unstructured{Object: map[string]any{settingKey: replicaSetting(u.Object)}}
	slim.SetNamespace(u.GetNamespace())
	slim.SetName(u.GetName())
	slim.SetResourceVersion(u.GetResourceVersion())
	return slim, nil
}

// holdsSetting matches a slim replica that holds its cluster's setting of
// generation gen. That value is not in the root: a replica holding it was
// resolved, for its own cluster (its namespace), with no "{{hub" left in the
// field.
func holdsSetting(gen string) func(obj any) bool {
	return func(obj any) bool {
		u, ok := obj.(*unstructured.Unstructured)
		return ok && u.Object[settingKey] == settingValue(u.GetNamespace(), gen)
	}
}

// trackRunning records, as track does, when each object of an informer
// that already runs is first seen matching match.
func trackRunning(informer cache.SharedIndexInformer, match func(obj any) bool) (*seen, error) {
	s := &seen{when: map[string]time.Time{}, match: match}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.observe,
		UpdateFunc: func(_, obj any) { s.observe(obj) },
	}); err != nil {
		return nil, fmt.Errorf("adding a watch handler: %w", err)
	}
	return s, nil
}

// apiTraffic is what the hub API server was asked about ConfigMaps: reads
// (GET and LIST requests) so far, the seconds those reads waited for the
// watch cache to be fresh, and the watches open now.
type apiTraffic struct {
	reads, readWait, watches float64
}

// configMapTraffic reads the ConfigMap traffic from the API server's
// /metrics.
func (t *hubTemplatesBench) configMapTraffic(ctx context.Context, b testing.TB) apiTraffic {
	b.Helper()
	traffic, err := readConfigMapTraffic(ctx, t.cp.Config)
	if err != nil {
		b.Fatal(err)
	}
	return traffic
}

// since is the ConfigMap reads and their wait from before to a, and the
// watches open at a, as a row's extra metrics.
func (a apiTraffic) since(before apiTraffic) []metric {
	return []metric{
		{Name: "ConfigMap reads", Value: a.reads - before.reads},
		{Name: "their wait for the watch cache", Value: a.readWait - before.readWait, Unit: "s"},
		{Name: "open ConfigMap watches", Value: a.watches},
	}
}

// readConfigMapTraffic reads apiserver_request_total,
// apiserver_watch_cache_read_wait_seconds and apiserver_longrunning_requests
// of ConfigMaps with the administrator's
// connection cfg.
func readConfigMapTraffic(ctx context.Context, cfg *rest.Config) (apiTraffic, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return apiTraffic{}, fmt.Errorf("creating the metrics client: %w", err)
	}
	data, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiTraffic{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return parseConfigMapTraffic(data), nil
}

// parseConfigMapTraffic sums the ConfigMap reads, their wait and the open
// watches of a Prometheus text exposition.
func parseConfigMapTraffic(data []byte) apiTraffic {
	var traffic apiTraffic
	eachSample(data, func(name string, labels map[string]string, value float64) {
		if labels["resource"] != "configmaps" || labels["subresource"] != "" {
			return
		}
		switch {
		case name == "apiserver_request_total" && (labels["verb"] == "GET" || labels["verb"] == "LIST"):
			traffic.reads += value
		case name == "apiserver_watch_cache_read_wait_seconds_sum":
			traffic.readWait += value
		case name == "apiserver_longrunning_requests" && labels["verb"] == "WATCH":
			traffic.watches += value
		}
	})
	return traffic
}
