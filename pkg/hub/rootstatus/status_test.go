package rootstatus

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

const (
	compliant    = policyv1.Compliant
	nonCompliant = policyv1.NonCompliant
	pending      = policyv1.Pending
	unknown      = policyv1.ComplianceState("")
)

func placement(binding, set string, clusters ...string) policyv1.Placement {
	p := policyv1.Placement{PlacementBinding: binding, Placement: "pl-" + binding, PolicySet: set}
	for _, c := range clusters {
		p.Decisions = append(p.Decisions, policyv1.PlacementDecision{ClusterName: c, ClusterNamespace: c})
	}
	return p
}

func TestClusterStatuses(t *testing.T) {
	g := NewWithT(t)
	clusters := SelectedClusters([]policyv1.Placement{placement("b", "", "c2", "c1"), placement("r", "", "c2"), placement("e", "")})
	g.Expect(clusters).To(Equal([]string{"c1", "c2"}))
	statuses := ClusterStatuses(clusters, map[string]policyv1.ComplianceState{"c2": nonCompliant, "gone": compliant}, nil)
	g.Expect(statuses).To(Equal([]policyv1.CompliancePerClusterStatus{
		{ClusterName: "c1", ClusterNamespace: "c1"},
		{ClusterName: "c2", ClusterNamespace: "c2", ComplianceState: nonCompliant},
	}))
	g.Expect(RootCompliance(statuses)).To(Equal(nonCompliant))
	g.Expect(ClusterStatuses(nil, nil, nil)).To(BeNil())
	g.Expect(RootCompliance(nil)).To(Equal(unknown))
}

// excluded is a status.placement entry of binding through set that
// excludes clusters, placing the policy on decisions.
func excluded(binding, set string, exclusions []string, decisions ...string) policyv1.Placement {
	p := placement(binding, set, decisions...)
	for _, c := range exclusions {
		p.Exclusions = append(p.Exclusions, policyv1.PolicyExclusion{ClusterName: c})
	}
	return p
}

func TestRemainingBindings(t *testing.T) {
	for _, tc := range []struct {
		name       string
		placements []policyv1.Placement
		want       map[string][]policyv1.RemainingBinding
	}{{
		name:       "no exclusion",
		placements: []policyv1.Placement{placement("b", "set", "c1")},
		want:       map[string][]policyv1.RemainingBinding{},
	}, {
		name:       "an excluded cluster no other binding places the policy on",
		placements: []policyv1.Placement{excluded("b", "set", []string{"c2"}, "c1"), placement("d", "", "c1")},
		want:       map[string][]policyv1.RemainingBinding{},
	}, {
		name: "other bindings still place the policy on an excluded cluster",
		placements: []policyv1.Placement{
			excluded("s", "set", []string{"c2"}, "c1"), placement("z", "", "c2"), placement("d", "other", "c1", "c2"),
		},
		want: map[string][]policyv1.RemainingBinding{"c2": {{PlacementBinding: "d"}, {PlacementBinding: "z"}}},
	}, {
		name:       "a binding that excludes the cluster is no remaining binding, even naming the policy directly (as OCM)",
		placements: []policyv1.Placement{placement("s", "", "c2"), excluded("s", "set", []string{"c2"}), placement("d", "", "c2")},
		want:       map[string][]policyv1.RemainingBinding{"c2": {{PlacementBinding: "d"}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(RemainingBindings(tc.placements)).To(Equal(tc.want))
		})
	}
	g := NewWithT(t)
	remaining := map[string][]policyv1.RemainingBinding{"c2": {{PlacementBinding: "d"}}}
	g.Expect(ClusterStatuses([]string{"c1", "c2"}, nil, remaining)).To(Equal([]policyv1.CompliancePerClusterStatus{
		{ClusterName: "c1", ClusterNamespace: "c1"},
		{ClusterName: "c2", ClusterNamespace: "c2", RemainingBindings: []policyv1.RemainingBinding{{PlacementBinding: "d"}}},
	}))
}

func exclusion(policy string, clusters ...string) policyv1beta1.PolicySetExclusion {
	e := policyv1beta1.PolicySetExclusion{PolicyName: policyv1.NonEmptyString(policy), Reason: "why"}
	for _, c := range clusters {
		e.ClusterNames = append(e.ClusterNames, policyv1.NonEmptyString(c))
	}
	return e
}

func member(name string, disabled bool, placements []policyv1.Placement, states map[string]policyv1.ComplianceState) *policyv1.Policy {
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	p.Spec.Disabled = disabled
	p.Status.Placement = placements
	for _, c := range SelectedClusters(placements) {
		p.Status.Status = append(p.Status.Status, policyv1.CompliancePerClusterStatus{ClusterName: c, ClusterNamespace: c, ComplianceState: states[c]})
	}
	return p
}

func TestPolicySetStatus(t *testing.T) {
	set := &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: "set", Namespace: "ns"}}
	viaSet := []policyv1.Placement{placement("b", "set", "c1", "c2")}
	both := []policyv1.Placement{placement("a", "", "c3"), placement("b", "set", "c1", "c2")}
	for _, tc := range []struct {
		name       string
		members    map[string]*policyv1.Policy
		order      []string
		exclusions []policyv1beta1.PolicySetExclusion
		want       SetStatus
	}{{
		name:  "all compliant",
		order: []string{"p1", "p2"},
		members: map[string]*policyv1.Policy{
			"p1": member("p1", false, viaSet, map[string]policyv1.ComplianceState{"c1": compliant, "c2": compliant}),
			"p2": member("p2", false, both, map[string]policyv1.ComplianceState{"c1": compliant, "c2": compliant, "c3": nonCompliant}),
		},
		want: SetStatus{
			Compliant:     compliant, // c3 is selected for p2, but not through the set
			StatusMessage: AllReporting,
			Placement:     []policyv1beta1.PolicySetStatusPlacement{{PlacementBinding: "b", Placement: "pl-b"}},
		},
	}, {
		name:       "exclusions, as OCM reports them",
		order:      []string{"p1", "p2"},
		exclusions: []policyv1beta1.PolicySetExclusion{exclusion("p2", "c9", "c2", "c9"), exclusion("p1", "c1")},
		members: map[string]*policyv1.Policy{
			"p1": member("p1", false, []policyv1.Placement{excluded("b", "set", []string{"c1"}, "c2")}, map[string]policyv1.ComplianceState{"c2": compliant}),
			"p2": member("p2", false, []policyv1.Placement{excluded("b", "set", []string{"c2"}, "c1")}, map[string]policyv1.ComplianceState{"c1": compliant}),
		},
		want: SetStatus{
			Compliant:     compliant,
			StatusMessage: "All policies are reporting status; One or more policies were excluded. For details, see status.exclusions.",
			Placement:     []policyv1beta1.PolicySetStatusPlacement{{PlacementBinding: "b", Placement: "pl-b"}},
			Exclusions: []policyv1beta1.PolicySetStatusExclusion{
				{PolicyName: "p1", Clusters: []policyv1.NonEmptyString{"c1"}},
				{PolicyName: "p2", Clusters: []policyv1.NonEmptyString{"c2", "c9"}},
			},
		},
	}, {
		name:       "exclusions beside trouble",
		order:      []string{"gone"},
		exclusions: []policyv1beta1.PolicySetExclusion{exclusion("gone", "c1")},
		members:    map[string]*policyv1.Policy{},
		want: SetStatus{
			StatusMessage: "Missing policies (not found in the namespace of the set): gone; One or more policies were excluded. For details, see status.exclusions.",
			Exclusions:    []policyv1beta1.PolicySetStatusExclusion{{PolicyName: "gone", Clusters: []policyv1.NonEmptyString{"c1"}}},
		},
	}, {
		name:  "every kind of trouble",
		order: []string{"pend", "off", "new", "gone", "bad"},
		members: map[string]*policyv1.Policy{
			"pend": member("pend", false, viaSet, map[string]policyv1.ComplianceState{"c1": pending, "c2": compliant}),
			"off":  member("off", true, nil, nil),
			"new":  member("new", false, viaSet, map[string]policyv1.ComplianceState{"c1": compliant}),
			"bad":  member("bad", false, viaSet, map[string]policyv1.ComplianceState{"c1": nonCompliant}),
		},
		want: SetStatus{
			Compliant: nonCompliant,
			StatusMessage: "Policies awaiting pending dependencies: pend; Disabled policies: off; " +
				"No status provided while awaiting policy status: new; " +
				"Missing policies (not found in the namespace of the set): gone",
			Placement: []policyv1beta1.PolicySetStatusPlacement{{PlacementBinding: "b", Placement: "pl-b"}},
		},
	}, {
		name:    "only missing members",
		order:   []string{"gone"},
		members: map[string]*policyv1.Policy{},
		want:    SetStatus{StatusMessage: "Missing policies (not found in the namespace of the set): gone"},
	}, {
		name:    "a member not placed through the set",
		order:   []string{"p"},
		members: map[string]*policyv1.Policy{"p": member("p", false, []policyv1.Placement{placement("a", "", "c1")}, map[string]policyv1.ComplianceState{"c1": compliant})},
		want:    SetStatus{StatusMessage: "No status provided while awaiting policy status: p"},
	}, {
		name:  "no members",
		order: nil,
		want:  SetStatus{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := set.DeepCopy()
			s.Spec.Exclusions = tc.exclusions
			for _, name := range tc.order {
				s.Spec.Policies = append(s.Spec.Policies, policyv1.NonEmptyString(name))
			}
			NewWithT(t).Expect(PolicySetStatus(s, tc.members)).To(Equal(tc.want))
		})
	}
}
