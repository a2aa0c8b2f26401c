package templatesync

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func pdep(apiVersion, kind, ns, name string, c policyv1.ComplianceState) policyv1.PolicyDependency {
	d := policyv1.PolicyDependency{Name: name, Namespace: ns, Compliance: c}
	d.APIVersion, d.Kind = apiVersion, kind
	return d
}

func TestResolve(t *testing.T) {
	hier := map[schema.GroupKind]bool{{Group: "hierarchy.canopy.io", Kind: "HierarchyPolicy"}: true}
	for _, tc := range []struct {
		name          string
		policy, extra []policyv1.PolicyDependency
		want          []Dependency
		wantErr       string
	}{
		{name: "none"},
		{
			name:   "policy kinds default their version and live in the cluster namespace",
			policy: []policyv1.PolicyDependency{pdep("", "Policy", "elsewhere", "a", policyv1.Compliant)},
			extra:  []policyv1.PolicyDependency{pdep("", "ConfigurationPolicy", "", "b", policyv1.NonCompliant)},
			want: []Dependency{
				{Key: Key{Group: policyv1.GroupName, Version: "v1", Kind: "Policy", Namespace: "c1", Name: "a"}, Compliance: policyv1.Compliant},
				{Key: Key{Group: policyv1.GroupName, Version: "v1", Kind: "ConfigurationPolicy", Namespace: "c1", Name: "b"}, Compliance: policyv1.NonCompliant},
			},
		},
		{
			name:  "template kinds of other groups live in the cluster namespace too; other kinds keep theirs",
			extra: []policyv1.PolicyDependency{pdep("hierarchy.canopy.io/v1alpha1", "HierarchyPolicy", "", "h", policyv1.Compliant), pdep("example.com/v1", "Widget", "ns", "w", policyv1.Compliant), pdep("example.com/v1", "Gadget", "", "g", policyv1.Compliant)},
			want: []Dependency{
				{Key: Key{Group: "hierarchy.canopy.io", Version: "v1alpha1", Kind: "HierarchyPolicy", Namespace: "c1", Name: "h"}, Compliance: policyv1.Compliant},
				{Key: Key{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "ns", Name: "w"}, Compliance: policyv1.Compliant},
				{Key: Key{Group: "example.com", Version: "v1", Kind: "Gadget", Name: "g"}, Compliance: policyv1.Compliant},
			},
		},
		{
			name:   "the union has no repeats",
			policy: []policyv1.PolicyDependency{pdep("", "Policy", "", "a", policyv1.Compliant)},
			extra:  []policyv1.PolicyDependency{pdep(policyv1.GroupVersion.String(), "Policy", "", "a", policyv1.Compliant)},
			want:   []Dependency{{Key: Key{Group: policyv1.GroupName, Version: "v1", Kind: "Policy", Namespace: "c1", Name: "a"}, Compliance: policyv1.Compliant}},
		},
		{
			name:    "one object required with two compliances is an error",
			policy:  []policyv1.PolicyDependency{pdep("", "Policy", "", "a", policyv1.Compliant)},
			extra:   []policyv1.PolicyDependency{pdep("", "Policy", "", "a", policyv1.NonCompliant)},
			wantErr: "conflicting dependencies: Policy a is required both Compliant and NonCompliant",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Resolve("c1", hier, tc.policy, tc.extra)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(tc.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestEvaluateAndPendingMessage(t *testing.T) {
	a := Dependency{Key: Key{Group: policyv1.GroupName, Version: "v1", Kind: "Policy", Namespace: "c1", Name: "a"}, Compliance: policyv1.Compliant}
	b := Dependency{Key: Key{Group: policyv1.GroupName, Version: "v1", Kind: "ConfigurationPolicy", Namespace: "c1", Name: "b"}, Compliance: policyv1.NonCompliant}
	w := Dependency{Key: Key{Group: "example.com", Version: "v1", Kind: "Widget", Name: "w"}, Compliance: policyv1.Compliant}
	noVersion := Dependency{Key: Key{Kind: "Thing", Name: "t"}, Compliance: policyv1.Compliant}
	for _, tc := range []struct {
		name     string
		deps     []Dependency
		observed map[Key]Observation
		want     string // PendingMessage, "" = all met
	}{
		{name: "no dependencies"},
		{name: "met", deps: []Dependency{a, b}, observed: map[Key]Observation{
			a.Key: {Found: true, Compliance: policyv1.Compliant}, b.Key: {Found: true, Compliance: policyv1.NonCompliant},
		}},
		{name: "not found", deps: []Dependency{a}, want: "Dependencies were not satisfied: 1 are still pending (Policy a); Policy a: not found"},
		{name: "mismatch and no compliance", deps: []Dependency{a, b}, observed: map[Key]Observation{
			a.Key: {Found: true, Compliance: policyv1.NonCompliant}, b.Key: {Found: true},
		}, want: "Dependencies were not satisfied: 2 are still pending (Policy a, ConfigurationPolicy b); " +
			"Policy a: want Compliant got NonCompliant; ConfigurationPolicy b: no status.compliant"},
		{name: "no API mapping", deps: []Dependency{w, noVersion}, observed: map[Key]Observation{w.Key: {Unmapped: true}},
			want: "Dependencies were not satisfied: 2 are still pending (Widget w, Thing t); " +
				"Widget w: no API mapping for the kind; Thing t: no API mapping for the kind"},
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
	g.Expect(PendingMessage(Evaluate([]Dependency{a}, nil), true)).To(Equal(
		"Dependencies were not satisfied: 1 are still pending (Policy a) but ignorePending is true; Policy a: not found"))
}
