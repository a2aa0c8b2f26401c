package depgraph

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
