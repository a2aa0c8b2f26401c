package depgraph

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// policyWaitingOn is a Policy of namespace c1 with one ConfigurationPolicy
// template that depends on the Policy dep.
func policyWaitingOn(name, template, dep string) policyv1.Policy {
	p := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "c1"}}
	p.Spec.PolicyTemplates = []policyv1.PolicyTemplate{{
		ObjectDefinition: runtime.RawExtension{Raw: fmt.Appendf(nil,
			`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":%q}}`, template)},
		ExtraDependencies: []policyv1.PolicyDependency{pdep("", "Policy", "", dep, policyv1.Compliant)},
	}, {
		ObjectDefinition: runtime.RawExtension{Raw: []byte(`{"kind":"ConfigurationPolicy","metadata":{}}`)}, // unnamed: not a node
	}}
	return p
}

func TestGraphFor(t *testing.T) {
	g := NewWithT(t)
	kinds := map[schema.GroupKind]bool{{Group: policyv1.GroupName, Kind: "ConfigurationPolicy"}: true}
	policies := []policyv1.Policy{policyWaitingOn("a", "ta", "b"), policyWaitingOn("b", "tb", "a"), policyWaitingOn("c", "tc", "a")}
	graph := GraphFor("c1", kinds, policies)
	g.Expect(graph).To(Equal(Graph{
		{Kind: "Policy", Name: "a"}:               {{Kind: "ConfigurationPolicy", Name: "ta"}},
		{Kind: "Policy", Name: "b"}:               {{Kind: "ConfigurationPolicy", Name: "tb"}},
		{Kind: "Policy", Name: "c"}:               {{Kind: "ConfigurationPolicy", Name: "tc"}},
		{Kind: "ConfigurationPolicy", Name: "ta"}: {{Kind: "Policy", Name: "b"}},
		{Kind: "ConfigurationPolicy", Name: "tb"}: {{Kind: "Policy", Name: "a"}},
		{Kind: "ConfigurationPolicy", Name: "tc"}: {{Kind: "Policy", Name: "a"}},
	}))
	g.Expect(graph.CycleMessage("a", Node{Kind: "ConfigurationPolicy", Name: "ta"})).To(Equal("dependency cycle: Policy a -> Policy b -> Policy a"))
	g.Expect(graph.CycleMessage("c", Node{Kind: "ConfigurationPolicy", Name: "tc"})).To(BeEmpty(), "c waits for the cycle, it is not on it")
}
