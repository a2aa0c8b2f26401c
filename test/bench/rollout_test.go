//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Rollout stage sizes at BENCH_SCALE=1 (the clusters are the hub stage's).
const (
	rolloutGroups    = 10
	rolloutPlacement = "rollout"
	rolloutPolicy    = "rolled-out"
	// templateKey is where the benchmark's slim replicas keep the name of
	// their template, which says which spec they have.
	templateKey = "template"
)

// rolloutBench is the state of one rollout stage run: a hub stage with one
// root rolled out ProgressivePerGroup over a Placement of rolloutGroups
// decision groups, and agents simulated by the benchmark, which report
// each replica Compliant as soon as it has the current spec.
type rolloutBench struct {
	*hubBench
	groups   [][]string
	replicas cache.SharedIndexInformer

	mu       sync.Mutex
	template string          // the template name of the current spec
	reported map[string]bool // replicas reported on for template
}

// BenchmarkRollout measures the time from a change of a root rolled out
// ProgressivePerGroup to the last decision group having it, beside the sum
// of the per-group write ceilings.
func BenchmarkRollout(b *testing.B) {
	ctx := b.Context()
	for b.Loop() {
		r := startRolloutBench(ctx, b)
		r.rollOut(ctx, b, "rollout-v1")
		x := r.change(ctx, b)
		r.hub.stop()
		ceil, err := r.groupCeilings(ctx)
		if err != nil {
			b.Fatal(err)
		}
		x.CeilingSeconds = ceil
		x.Scale = fmt.Sprintf("%d clusters in %d decision groups", len(r.clusters), len(r.groups))
		x.Units, x.Unit = float64(len(r.clusters)), "clusters"
		results.add(x)
	}
}

// startRolloutBench starts a hub stage, adds the rollout Placement with its
// decision groups, and starts the watch of the replicas that the simulated
// agents report from.
func startRolloutBench(ctx context.Context, b testing.TB) *rolloutBench {
	b.Helper()
	r := &rolloutBench{hubBench: startHubBench(ctx, b), reported: map[string]bool{}}
	n, groups := len(r.clusters), min(rolloutGroups, len(r.clusters))
	for g := range groups {
		r.groups = append(r.groups, r.clusters[g*n/groups:(g+1)*n/groups])
	}
	if err := r.seedGroups(ctx); err != nil {
		b.Fatal(err)
	}
	var err error
	if r.replicas, err = r.watchReplicas(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := r.replicas.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.agentReport(ctx, b, obj) },
		UpdateFunc: func(_, obj any) { r.agentReport(ctx, b, obj) },
	}); err != nil {
		b.Fatal(err)
	}
	return r
}

// seedGroups creates the rollout Placement and its PlacementDecisions,
// group g labelled with decision-group-index g, at most 100 clusters each.
func (r *rolloutBench) seedGroups(ctx context.Context) error {
	if err := r.c.Create(ctx, placement(rolloutPlacement)); err != nil {
		return err
	}
	index := 0
	for g, clusters := range r.groups {
		for start := 0; start < len(clusters); start += 100 {
			index++
			pd := decision(rolloutPlacement, index, clusters[start:min(len(clusters), start+100)])
			pd.Labels[clusterv1beta1.DecisionGroupIndexLabel] = strconv.Itoa(g)
			pd.Labels[clusterv1beta1.DecisionGroupNameLabel] = fmt.Sprintf("group-%d", g)
			status := pd.Status
			if err := r.c.Create(ctx, pd); err != nil {
				return err
			}
			pd.Status = status
			if err := r.c.Status().Update(ctx, pd); err != nil {
				return err
			}
		}
	}
	return nil
}

// rolledOutPolicy is the root of the stage, with its template named
// template, rolled out ProgressivePerGroup.
func rolledOutPolicy(template string) *policyv1.Policy {
	p := policyWithTemplate(policyNamespace, rolloutPolicy, template)
	p.Spec.RolloutStrategy = &clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup,
		ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{}}
	return p
}

// rollOut creates the root and its binding and waits until every cluster
// has it (not measured: the stage measures a change).
func (r *rolloutBench) rollOut(ctx context.Context, b testing.TB, template string) {
	b.Helper()
	r.setTemplate(template)
	held, err := trackRunning(r.replicas, holdsTemplate(template))
	if err != nil {
		b.Fatal(err)
	}
	if err := r.c.Create(ctx, rolledOutPolicy(template)); err != nil {
		b.Fatal(err)
	}
	if err := r.c.Create(ctx, binding("binding-rollout", rolloutPlacement, []string{rolloutPolicy})); err != nil {
		b.Fatal(err)
	}
	r.waitHeld(ctx, b, held, template)
}

// change changes the root's template and measures the time until the last
// decision group has the new spec, and when each group was done.
func (r *rolloutBench) change(ctx context.Context, b testing.TB) row {
	b.Helper()
	held, err := trackRunning(r.replicas, holdsTemplate("rollout-v2"))
	if err != nil {
		b.Fatal(err)
	}
	before, counted := r.writes(ctx, b), countFromNow(ctx, b, r.cp.Config)
	start := time.Now()
	profileDuring(ctx, b, r.hub, 15*time.Second, "rollout-change")
	r.setTemplate("rollout-v2")
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"policy-templates":[{"objectDefinition":`+
		string(rawJSON(configurationPolicy("rollout-v2")).Raw)+`}]}}`))
	root := &policyv1.Policy{}
	root.Namespace, root.Name = policyNamespace, rolloutPolicy
	if err := r.c.Patch(ctx, root, patch); err != nil {
		b.Fatal(err)
	}
	r.waitHeld(ctx, b, held, "rollout-v2")
	elapsed := held.last().Sub(start).Seconds()
	d := r.writes(ctx, b).minus(before)
	first := r.groupDone(held, 0).Sub(start).Seconds()
	b.Logf("rollout: %d clusters in %d groups updated in %.1f s (first group %.1f s); writes %v", len(r.clusters), len(r.groups), elapsed, first, d)
	return row{
		Stage:   "hub: rollout, root changed → last decision group updated",
		Seconds: elapsed,
		Extra: []metric{
			{Name: "first group", Value: first, Unit: "s"},
			{Name: "replica writes", Value: d.total("policies") - 1},
			{Name: "refused writes", Value: d.refused()},
			{Name: "root status writes", Value: d.total("policies/status") - float64(len(r.clusters))},
			{Name: "hub peak RSS", Value: r.hub.peakRSS(), Unit: "MiB"},
			counted.metric(ctx, b),
		},
	}
}

// groupDone is when the last replica of group g was seen with the spec
// held tracks.
func (r *rolloutBench) groupDone(held *seen, g int) time.Time {
	var last time.Time
	for _, c := range r.groups[g] {
		if t, ok := held.at(c + "/" + policyNamespace + "." + rolloutPolicy); ok && t.After(last) {
			last = t
		}
	}
	return last
}

// waitHeld waits until every cluster's replica has the template.
func (r *rolloutBench) waitHeld(ctx context.Context, b testing.TB, held *seen, template string) {
	b.Helper()
	if err := waitFor(ctx, "every replica to have "+template, 200*time.Millisecond, func(context.Context) (bool, error) {
		if n := held.count(); n < len(r.clusters) {
			return false, fmt.Errorf("%d of %d replicas have %s", n, len(r.clusters), template)
		}
		return true, nil
	}); err != nil {
		b.Fatal(err)
	}
}

// setTemplate makes template the one the simulated agents report on.
func (r *rolloutBench) setTemplate(template string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.template, r.reported = template, map[string]bool{}
}

// agentReport reports a replica that has the current spec Compliant, once,
// as its agent would after evaluating it: status.compliant, a history entry
// made now, and the replica's generation as evaluated.
func (r *rolloutBench) agentReport(ctx context.Context, b testing.TB, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	key := u.GetNamespace() + "/" + u.GetName()
	r.mu.Lock()
	template := r.template
	news := u.Object[templateKey] == template && !r.reported[key]
	r.reported[key] = r.reported[key] || news
	r.mu.Unlock()
	if !news {
		return
	}
	replica := &policyv1.Policy{}
	replica.Namespace, replica.Name = u.GetNamespace(), u.GetName()
	go func() { // Note: the informer's handler must not wait on the API server
		if err := r.c.Status().Patch(ctx, replica, complianceReport(template, u.GetGeneration())); err != nil && ctx.Err() == nil {
			b.Errorf("reporting %s: %v", key, err)
		}
	}()
}

// complianceReport is the status patch of an agent that found template
// Compliant now, having evaluated the replica's generation.
func complianceReport(template string, generation int64) client.Patch {
	now := metav1.Now()
	entry := map[string]any{"lastTimestamp": now, "eventName": fmt.Sprintf("%s.%x", template, now.UnixNano()),
		"message": "Compliant; notification - namespaces [default] found as specified"}
	data, _ := json.Marshal(map[string]any{"status": map[string]any{"compliant": "Compliant", "evaluatedGeneration": generation, "details": []any{map[string]any{
		"templateMeta": map[string]any{"name": template}, "compliant": "Compliant", "history": []any{entry}}}}})
	return client.RawPatch(types.MergePatchType, data)
}

// watchReplicas starts a watch of the root's replicas that keeps, of each,
// its namespace, name and template name, and waits for its first list.
func (r *rolloutBench) watchReplicas(ctx context.Context) (cache.SharedIndexInformer, error) {
	dc, err := dynamic.NewForConfig(r.cp.Config)
	if err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.LabelSelector = policyv1.RootPolicyLabel + "=" + policyNamespace + "." + rolloutPolicy
	})
	informer := f.ForResource(policyv1.GroupVersion.WithResource("policies")).Informer()
	if err := informer.SetTransform(slimTemplate); err != nil {
		return nil, fmt.Errorf("setting the replica transform: %w", err)
	}
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("listing the replicas: %w", ctx.Err())
	}
	return informer, nil
}

// slimTemplate keeps, of a replica, its namespace, name, generation and the
// name of its first template.
func slimTemplate(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok { // a tombstone
		return obj, nil
	}
	name := ""
	if templates, _, _ := unstructured.NestedSlice(u.Object, "spec", "policy-templates"); len(templates) > 0 {
		if t, ok := templates[0].(map[string]any); ok {
			name, _, _ = unstructured.NestedString(t, "objectDefinition", "metadata", "name")
		}
	}
	slim := &unstructured.Unstructured{Object: map[string]any{templateKey: name}}
	slim.SetNamespace(u.GetNamespace())
	slim.SetName(u.GetName())
	slim.SetResourceVersion(u.GetResourceVersion())
	slim.SetGeneration(u.GetGeneration()) // Note: the simulated agents report it as evaluated
	return slim, nil
}

// holdsTemplate matches a slim replica whose template is named template.
func holdsTemplate(template string) func(obj any) bool {
	return func(obj any) bool {
		u, ok := obj.(*unstructured.Unstructured)
		return ok && u.Object[templateKey] == template
	}
}

// groupCeilings is the sum, over the decision groups, of the time a plain
// client takes for what a group must see before the next one starts: its
// replicas updated with the propagator's concurrency, then their reports
// written with the agents' concurrency.
func (r *rolloutBench) groupCeilings(ctx context.Context) (float64, error) {
	replica := func(cluster, template string) client.Object {
		p := policyWithTemplate(cluster, "ceiling."+policyNamespace+"."+rolloutPolicy, template)
		p.Labels = map[string]string{"bench": "ceiling"}
		return p
	}
	if err := createAll(ctx, r.c, len(r.clusters), seedWorkers, func(i int) client.Object { return replica(r.clusters[i], "rollout-v1") }); err != nil {
		return 0, err
	}
	var sum float64
	for _, group := range r.groups {
		start := time.Now()
		updated := make([]client.Object, len(group))
		if err := parallel(ctx, len(group), hubWorkers, func(ctx context.Context, i int) error {
			updated[i] = replica(group[i], "rollout-v2")
			return r.c.Patch(ctx, updated[i], client.MergeFrom(replica(group[i], "rollout-v1")))
		}); err != nil {
			return 0, fmt.Errorf("measuring the update ceiling: %w", err)
		}
		if err := parallel(ctx, len(group), agentWriters, func(ctx context.Context, i int) error {
			return r.c.Status().Patch(ctx, replica(group[i], "rollout-v2"), complianceReport("rollout-v2", updated[i].GetGeneration()))
		}); err != nil {
			return 0, fmt.Errorf("measuring the report ceiling: %w", err)
		}
		sum += since(start)
	}
	return sum, nil
}
