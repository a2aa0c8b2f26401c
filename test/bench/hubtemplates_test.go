//go:build linux

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
)

// Hub templates stage sizes at BENCH_SCALE=1: OCM's published telco
// reference hub, 3,500 clusters × 5 policies, each policy's template reading
// the cluster's own ConfigMap on the hub.
const (
	templateClusters = 3500
	templatePolicies = 5
	// settingKey is the key of each values-<cluster> ConfigMap the
	// templates read.
	settingKey = "setting"
	// settingTemplate is the hub template of every policy: the value of the
	// cluster's ConfigMap, looked up in the root policy's namespace.
	settingTemplate = `{{hub fromConfigMap "" (printf "values-%s" .ManagedClusterName) "` + settingKey + `" hub}}`
)

// hubTemplatesBench is the state of one hub templates stage run: a hub
// stage whose roots use hub templates, and a watch of the replicas that
// keeps only what their templates resolved to.
type hubTemplatesBench struct {
	*hubBench
	replicas cache.SharedIndexInformer
}

// BenchmarkHubTemplates propagates policies whose hub templates read a
// per-cluster ConfigMap, changes every ConfigMap, and restarts the hub with
// nothing changed.
func BenchmarkHubTemplates(b *testing.B) {
	ctx := b.Context()
	for b.Loop() {
		t := startHubTemplatesBench(ctx, b)
		resolved := t.resolve(ctx, b)
		changed := t.change(ctx, b)
		restart := t.restart(ctx, b)
		t.hub.stop()
		var err error
		if resolved.CeilingSeconds, changed.CeilingSeconds, err = t.ceilings(ctx); err != nil {
			b.Fatal(err)
		}
		scaleText := fmt.Sprintf("%d clusters × %d policies, %d ConfigMaps", len(t.clusters), len(t.policies), len(t.clusters))
		for _, r := range []row{resolved, changed, restart} {
			r.Scale = scaleText
			r.Units, r.Unit = float64(t.replicaCount()), "replicas"
			results.add(r)
		}
	}
}

// startHubTemplatesBench starts a hub API server, seeds the clusters,
// placements and the ConfigMaps the templates read, and starts canopy-hub
// and the benchmark's watch of the replicas.
func startHubTemplatesBench(ctx context.Context, b testing.TB) *hubTemplatesBench {
	b.Helper()
	cp, err := controlplane.Start(ctx, "hub")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cp.Stop() })
	t := &hubTemplatesBench{hubBench: &hubBench{cp: cp}}
	if t.c, err = plainClient(cp.Config); err != nil {
		b.Fatal(err)
	}
	for i := range scaled(templateClusters) {
		t.clusters = append(t.clusters, clusterName(i))
	}
	for i := range templatePolicies {
		t.policies = append(t.policies, fmt.Sprintf("templated-%d", i))
	}
	if err := t.seed(ctx); err != nil { // hubPlacements placements, each selecting every cluster
		b.Fatal(err)
	}
	if err := createAll(ctx, t.c, len(t.clusters), seedWorkers, func(i int) client.Object {
		return valuesConfigMap(t.clusters[i], "v1")
	}); err != nil {
		b.Fatal(err)
	}
	if t.replicas, err = t.watchReplicas(ctx); err != nil {
		b.Fatal(err)
	}
	t.startHub(ctx, b)
	return t
}

// startHub starts canopy-hub and waits until it serves its metrics.
func (t *hubTemplatesBench) startHub(ctx context.Context, b testing.TB) {
	b.Helper()
	t.hub = startHub(ctx, b, t.cp.KubeconfigPath)
}

// restart restarts canopy-hub with nothing changed, which resolves every
// replica again (nothing survives a restart) and must write nothing. The
// hub is stopped first, apart: with one watch per ConfigMap its exit takes
// long enough to hide the restart in the row's time.
func (t *hubTemplatesBench) restart(ctx context.Context, b testing.TB) row {
	b.Helper()
	traffic := t.configMapTraffic(ctx, b)
	start := time.Now()
	t.hub.stop() // Note: SIGKILL after 30 s, as a kubelet would
	exit := since(start)
	r := measureRestart(ctx, b, t.hub, t.cp.Config, "hub templates", hubResources,
		propagator.ControllerName, rootstatus.ControllerName)
	r.Extra = append(r.Extra, t.configMapTraffic(ctx, b).since(traffic)...)
	r.Extra = append(r.Extra, metric{Name: "stop (SIGTERM to exit)", Value: exit, Unit: "s"})
	return r
}

// createTemplatedRoots creates the root policies and binds policy i to
// Placement i (every Placement selects every cluster).
func (t *hubTemplatesBench) createTemplatedRoots(ctx context.Context) error {
	if err := createAll(ctx, t.c, len(t.policies), seedWorkers, func(i int) client.Object {
		return settingPolicy(policyNamespace, t.policies[i], settingTemplate)
	}); err != nil {
		return err
	}
	for i, name := range t.policies {
		placementName := fmt.Sprintf("placement-%d", i%hubPlacements)
		if err := t.c.Create(ctx, binding("binding-"+name, placementName, []string{name})); err != nil {
			return fmt.Errorf("creating binding: %w", err)
		}
	}
	return nil
}

// valuesConfigMap is the ConfigMap values-<cluster> the templates read for
// cluster, holding the setting of generation gen.
func valuesConfigMap(cluster, gen string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "values-" + cluster, Namespace: policyNamespace},
		Data:       map[string]string{settingKey: settingValue(cluster, gen)},
	}
}

// settingValue is cluster's setting in generation gen ("v1", "v2"): a value
// per cluster, so that a replica holding it proves it was resolved for its
// own cluster.
func settingValue(cluster, gen string) string { return gen + "-" + cluster }

// settingPolicy is a Policy whose ConfigurationPolicy checks (inform) that
// ConfigMap default/bench-settings holds setting, a hub template in a root
// or its resolved value in a replica.
func settingPolicy(namespace, name, setting string) *policyv1.Policy {
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: policyv1.PolicySpec{
			RemediationAction: policyv1.Inform,
			PolicyTemplates: []policyv1.PolicyTemplate{{ObjectDefinition: rawJSON(map[string]any{
				"apiVersion": policyv1.GroupVersion.String(),
				"kind":       "ConfigurationPolicy",
				"metadata":   map[string]any{"name": name},
				"spec": map[string]any{
					"remediationAction": "inform",
					"severity":          "low",
					"object-templates": []any{map[string]any{
						"complianceType": "musthave",
						"objectDefinition": map[string]any{
							"apiVersion": "v1", "kind": "ConfigMap",
							"metadata": map[string]any{"name": "bench-settings", "namespace": "default"},
							"data":     map[string]any{settingKey: setting},
						},
					}},
				},
			})}},
		},
	}
}

// replicaSetting is the setting the first template of a replica (an
// unstructured Policy) checks for, "" when it has none.
func replicaSetting(policy map[string]any) string {
	templates, _, _ := unstructured.NestedSlice(policy, "spec", "policy-templates")
	if len(templates) == 0 {
		return ""
	}
	first, _ := templates[0].(map[string]any)
	objects, _, _ := unstructured.NestedSlice(first, "objectDefinition", "spec", "object-templates")
	if len(objects) == 0 {
		return ""
	}
	object, _ := objects[0].(map[string]any)
	setting, _, _ := unstructured.NestedString(object, "objectDefinition", "data", settingKey)
	return setting
}
