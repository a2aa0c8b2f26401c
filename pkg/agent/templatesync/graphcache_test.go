package templatesync

import (
	"context"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/depgraph"
)

// chainPolicy is a Policy with one ConfigurationPolicy template that waits
// for Policy dep ("" for none).
func chainPolicy(name, dep string, generation int64) policyv1.Policy {
	p := policyv1.Policy{}
	p.Namespace, p.Name, p.UID, p.Generation = "cluster1", name, types.UID("uid-"+name), generation
	raw := fmt.Sprintf(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":%q}}`, name+"-config")
	p.Spec.PolicyTemplates = []policyv1.PolicyTemplate{{ObjectDefinition: runtime.RawExtension{Raw: []byte(raw)}}}
	if dep != "" {
		d := policyv1.PolicyDependency{Name: dep, Compliance: policyv1.Compliant}
		d.Kind = "Policy"
		p.Spec.Dependencies = []policyv1.PolicyDependency{d}
	}
	return p
}

// rebuilt returns cache's graph of cluster1 after an invalidation, so that
// it is built from policies.
func rebuilt(t *testing.T, cache *graphCache, kinds map[schema.GroupKind]bool, policies []policyv1.Policy) depgraph.Graph {
	t.Helper()
	cache.invalidate("cluster1")
	got, err := cache.graphFor("cluster1", kinds, func() ([]policyv1.Policy, error) { return policies, nil })
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestGraphCacheAgreesWithGraphFor(t *testing.T) {
	g := NewWithT(t)
	kinds := map[schema.GroupKind]bool{{Group: policyv1.GroupName, Kind: "ConfigurationPolicy"}: true}
	cache := &graphCache{}
	policies := []policyv1.Policy{chainPolicy("a", "", 1), chainPolicy("b", "a", 1)}
	g.Expect(rebuilt(t, cache, kinds, policies)).To(Equal(depgraph.GraphFor("cluster1", kinds, policies)))

	// A new generation is recomputed: a now waits for b, a cycle.
	policies[0] = chainPolicy("a", "b", 2)
	got := rebuilt(t, cache, kinds, policies)
	g.Expect(got).To(Equal(depgraph.GraphFor("cluster1", kinds, policies)))
	g.Expect(got.CycleThrough(cp("a-config"))).NotTo(BeNil())

	// The same generation is not recomputed (the node is the cached one),
	// which is why the key must include the generation.
	stale := chainPolicy("a", "", 2)
	g.Expect(rebuilt(t, cache, kinds, []policyv1.Policy{stale, policies[1]})).
		To(Equal(depgraph.GraphFor("cluster1", kinds, policies)), "same UID and generation: the cached node")

	// Other template kinds are recomputed.
	other := map[schema.GroupKind]bool{{Group: "example.com", Kind: "Widget"}: true}
	g.Expect(rebuilt(t, cache, other, policies)).To(Equal(depgraph.GraphFor("cluster1", other, policies)))

	// Policies that are gone are forgotten.
	rebuilt(t, cache, kinds, policies[1:])
	g.Expect(cache.nodes).To(HaveLen(1))
	g.Expect(cache.nodes).To(HaveKey(types.UID("uid-b")))
}

// TestGraphForReusesTheLastGraph: a namespace's graph is built again only
// when one of its Policies appeared, went or changed its spec, or the
// template kinds changed; a failed list is returned and not remembered.
func TestGraphForReusesTheLastGraph(t *testing.T) {
	g := NewWithT(t)
	kinds := map[schema.GroupKind]bool{{Group: policyv1.GroupName, Kind: "ConfigurationPolicy"}: true}
	cache := &graphCache{}
	events := cache.invalidations()
	policies := []policyv1.Policy{chainPolicy("a", "", 1), chainPolicy("b", "a", 1)}
	lists := 0
	var listErr error
	graphFor := func(kinds map[schema.GroupKind]bool) (depgraph.Graph, error) {
		return cache.graphFor("cluster1", kinds, func() ([]policyv1.Policy, error) {
			lists++
			return policies, listErr
		})
	}
	ctx := context.Background()
	expectLists := func(want int, why string) {
		t.Helper()
		got, err := graphFor(kinds)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(depgraph.GraphFor("cluster1", kinds, policies)), why)
		g.Expect(lists).To(Equal(want), why)
	}
	expectLists(1, "the first call builds")
	expectLists(1, "nothing changed: the last graph")

	old, updated := policies[0].DeepCopy(), policies[0].DeepCopy()
	updated.Labels = map[string]string{"x": "y"}
	events.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: updated}, nil)
	expectLists(1, "a label changes no dependency")

	policies[0] = chainPolicy("a", "b", 2)
	events.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: &policies[0]}, nil)
	expectLists(2, "a new generation")

	other := policies[0].DeepCopy()
	other.Namespace = "cluster2"
	events.Create(ctx, event.CreateEvent{Object: other}, nil)
	expectLists(2, "a Policy of another namespace")

	policies = policies[1:]
	events.Delete(ctx, event.DeleteEvent{Object: old}, nil)
	expectLists(3, "a Policy went")

	widgets := map[schema.GroupKind]bool{{Group: "example.com", Kind: "Widget"}: true}
	_, err := graphFor(widgets)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lists).To(Equal(4), "other template kinds")

	listErr = errors.New("cache not started")
	events.Create(ctx, event.CreateEvent{Object: &policies[0]}, nil)
	_, err = graphFor(kinds)
	g.Expect(err).To(MatchError(listErr))
	listErr = nil
	expectLists(6, "a failed list is not remembered")
}
