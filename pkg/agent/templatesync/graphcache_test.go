package templatesync

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

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

func TestGraphCacheAgreesWithGraphFor(t *testing.T) {
	g := NewWithT(t)
	kinds := map[schema.GroupKind]bool{{Group: policyv1.GroupName, Kind: "ConfigurationPolicy"}: true}
	cache := &graphCache{}
	policies := []policyv1.Policy{chainPolicy("a", "", 1), chainPolicy("b", "a", 1)}
	g.Expect(cache.graph("cluster1", kinds, policies)).To(Equal(depgraph.GraphFor("cluster1", kinds, policies)))

	// A new generation is recomputed: a now waits for b, a cycle.
	policies[0] = chainPolicy("a", "b", 2)
	got := cache.graph("cluster1", kinds, policies)
	g.Expect(got).To(Equal(depgraph.GraphFor("cluster1", kinds, policies)))
	g.Expect(got.CycleThrough(cp("a-config"))).NotTo(BeNil())

	// The same generation is not recomputed (the node is the cached one),
	// which is why the key must include the generation.
	stale := chainPolicy("a", "", 2)
	g.Expect(cache.graph("cluster1", kinds, []policyv1.Policy{stale, policies[1]})).
		To(Equal(depgraph.GraphFor("cluster1", kinds, policies)), "same UID and generation: the cached node")

	// Other template kinds are recomputed.
	other := map[schema.GroupKind]bool{{Group: "example.com", Kind: "Widget"}: true}
	g.Expect(cache.graph("cluster1", other, policies)).To(Equal(depgraph.GraphFor("cluster1", other, policies)))

	// Policies that are gone are forgotten.
	cache.graph("cluster1", kinds, policies[1:])
	g.Expect(cache.nodes).To(HaveLen(1))
	g.Expect(cache.nodes).To(HaveKey(types.UID("uid-b")))
}
