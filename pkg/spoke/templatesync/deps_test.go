package templatesync

import (
	"testing"

	. "github.com/onsi/gomega"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/depgraph"
)

func TestEvaluateAndPendingMessage(t *testing.T) {
	a := depgraph.Dependency{Key: depgraph.Key{Group: policyv1.GroupName, Version: "v1", Kind: "Policy", Namespace: "c1", Name: "a"}, Compliance: policyv1.Compliant}
	b := depgraph.Dependency{Key: depgraph.Key{Group: policyv1.GroupName, Version: "v1", Kind: "ConfigurationPolicy", Namespace: "c1", Name: "b"}, Compliance: policyv1.NonCompliant}
	w := depgraph.Dependency{Key: depgraph.Key{Group: "example.com", Version: "v1", Kind: "Widget", Name: "w"}, Compliance: policyv1.Compliant}
	noVersion := depgraph.Dependency{Key: depgraph.Key{Kind: "Thing", Name: "t"}, Compliance: policyv1.Compliant}
	for _, tc := range []struct {
		name     string
		deps     []depgraph.Dependency
		observed map[depgraph.Key]Observation
		want     string // PendingMessage, "" = all met
	}{
		{name: "no dependencies"},
		{name: "met", deps: []depgraph.Dependency{a, b}, observed: map[depgraph.Key]Observation{
			a.Key: {Found: true, Compliance: policyv1.Compliant}, b.Key: {Found: true, Compliance: policyv1.NonCompliant},
		}},
		{name: "not found", deps: []depgraph.Dependency{a}, want: "Dependencies were not satisfied: 1 is still pending (Policy a); Policy a: not found"},
		{name: "mismatch and no compliance", deps: []depgraph.Dependency{a, b}, observed: map[depgraph.Key]Observation{
			a.Key: {Found: true, Compliance: policyv1.NonCompliant}, b.Key: {Found: true},
		}, want: "Dependencies were not satisfied: 2 are still pending (ConfigurationPolicy b, Policy a); " +
			"ConfigurationPolicy b: no status.compliant; Policy a: want Compliant got NonCompliant"},
		{name: "no API mapping", deps: []depgraph.Dependency{w, noVersion}, observed: map[depgraph.Key]Observation{w.Key: {Unmapped: true}},
			want: "Dependencies were not satisfied: 2 are still pending (Thing t, Widget w); " +
				"Thing t: no API mapping for the kind; Widget w: no API mapping for the kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			unmet := Evaluate(tc.deps, tc.observed)
			if tc.want == "" {
				g.Expect(unmet).To(BeEmpty())
				return
			}
			g.Expect(PendingMessage(unmet, false)).To(Equal(tc.want))
		})
	}
	g := NewWithT(t)
	g.Expect(PendingMessage(Evaluate([]depgraph.Dependency{a}, nil), true)).To(Equal(
		"Dependencies were not satisfied: 1 is still pending (Policy a) but ignorePending is true; Policy a: not found"))
}

func cp(name string) depgraph.Node { return depgraph.Node{Kind: "ConfigurationPolicy", Name: name} }
