//go:build linux

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
)

// propagate creates the root policies and bindings and measures the time
// until every replica exists and the writes it took.
func (h *hubBench) propagate(ctx context.Context, b testing.TB) row {
	b.Helper()
	replicas := len(h.clusters) * len(h.policies)
	informer, err := metadataInformer(h.cp.Config, policyv1.GroupVersion.WithResource("policies"), policyv1.RootPolicyLabel)
	if err != nil {
		b.Fatal(err)
	}
	created, err := track(ctx, informer, always)
	if err != nil {
		b.Fatal(err)
	}
	before, counted := h.writes(ctx, b), countFromNow(ctx, b, h.cp.Config)
	cpu, start := h.hub.cpuSeconds(), time.Now()
	profileDuring(ctx, b, h.hub, 30*time.Second, "hub-propagation")
	apiServerProfileDuring(ctx, b, h.cp.Config, 30*time.Second, "hub-propagation")
	if err := h.createRoots(ctx); err != nil {
		b.Fatal(err)
	}
	if err := waitFor(ctx, "all replicas", 200*time.Millisecond, func(context.Context) (bool, error) {
		return created.count() >= replicas, nil
	}); err != nil {
		b.Fatal(err)
	}
	elapsed := created.last().Sub(start).Seconds()
	if _, err := waitSettled(ctx, h.hub, 2*time.Second, propagator.ControllerName, rootstatus.ControllerName); err != nil {
		b.Fatal(err)
	}
	d, used := h.writes(ctx, b).minus(before), h.hub.cpuSeconds()-cpu
	b.Logf("propagation: %d replicas in %.1f s; writes %v", replicas, elapsed, d)
	return row{
		Stage:   "hub: propagation (all replicas exist)",
		Seconds: elapsed,
		Extra: []metric{
			{Name: "writes/replica", Value: (d.total("policies") - float64(len(h.policies))) / float64(replicas)},
			{Name: "refused writes", Value: d.refused()},
			{Name: "root status writes", Value: d.total("policies/status")},
			{Name: "hub CPU per replica", Value: used * 1000 / float64(replicas), Unit: "ms"},
			{Name: "hub peak RSS", Value: h.hub.peakRSS(), Unit: "MiB"},
			counted.metric(ctx, b),
		},
	}
}

// createRoots creates the root policies and one binding per Placement,
// which binds every hubPlacements-th policy.
func (h *hubBench) createRoots(ctx context.Context) error {
	if err := createAll(ctx, h.c, len(h.policies), seedWorkers, func(i int) client.Object {
		return policy(policyNamespace, h.policies[i])
	}); err != nil {
		return err
	}
	for p := range hubPlacements {
		var subjects []string
		for i := p; i < len(h.policies); i += hubPlacements {
			subjects = append(subjects, h.policies[i])
		}
		name := fmt.Sprintf("placement-%d", p)
		if err := h.c.Create(ctx, binding("binding-"+name, name, subjects)); err != nil {
			return fmt.Errorf("creating binding: %w", err)
		}
	}
	return nil
}

// reflectStatuses writes every replica's status.compliant as agents would
// and measures the time until every root lists every cluster as Compliant.
// Its ceiling is the time the benchmark's own writers took for the updates.
func (h *hubBench) reflectStatuses(ctx context.Context, b testing.TB) row {
	b.Helper()
	replicas := len(h.clusters) * len(h.policies)
	before := h.writes(ctx, b)
	start := time.Now()
	profileDuring(ctx, b, h.hub, 30*time.Second, "hub-status")
	patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"compliant":"Compliant"}}`))
	if err := parallel(ctx, replicas, agentWriters, func(ctx context.Context, i int) error {
		replica := &policyv1.Policy{}
		replica.Namespace = h.clusters[i/len(h.policies)]
		replica.Name = policyNamespace + "." + h.policies[i%len(h.policies)]
		return h.c.Status().Patch(ctx, replica, patch)
	}); err != nil {
		b.Fatal(err)
	}
	writers := since(start)
	var reflected time.Time
	if err := waitFor(ctx, "root statuses", 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		ok, err := h.rootsCompliant(ctx)
		reflected = time.Now()
		return ok, err
	}); err != nil {
		b.Fatal(err)
	}
	if _, err := waitSettled(ctx, h.hub, 2*time.Second, rootstatus.ControllerName); err != nil {
		b.Fatal(err)
	}
	d := h.writes(ctx, b).minus(before)
	return row{
		Stage:          "hub: replica status → root status",
		Seconds:        reflected.Sub(start).Seconds(),
		CeilingSeconds: writers,
		Extra: []metric{
			{Name: "root status writes", Value: d.total("policies/status") - float64(replicas)},
			{Name: "hub peak RSS", Value: h.hub.peakRSS(), Unit: "MiB"},
		},
	}
}

// rootsCompliant is whether every root lists every cluster as Compliant.
func (h *hubBench) rootsCompliant(ctx context.Context) (bool, error) {
	for _, name := range h.policies {
		root := &policyv1.Policy{}
		if err := h.c.Get(ctx, rootKey(name), root); err != nil {
			return false, err
		}
		if !rootCompliant(root, len(h.clusters)) {
			return false, nil
		}
	}
	return true, nil
}

// restart restarts canopy-hub with nothing changed and counts its writes
// until its controllers have reconciled everything again.
func (h *hubBench) restart(ctx context.Context, b testing.TB) row {
	b.Helper()
	return measureRestart(ctx, b, h.hub, h.cp.Config, "hub", hubResources, propagator.ControllerName, rootstatus.ControllerName)
}

// writes reads the hub API server's write counters.
func (h *hubBench) writes(ctx context.Context, b testing.TB) requests {
	b.Helper()
	w, err := countWrites(ctx, h.cp.Config)
	if err != nil {
		b.Fatal(err)
	}
	return w
}
