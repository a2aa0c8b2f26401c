package propagator

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

func binding(name, placement string, subjects ...policyv1.Subject) policyv1.PlacementBinding {
	return policyv1.PlacementBinding{
		ObjectMeta:   metav1.ObjectMeta{Name: name, Namespace: "ns"},
		PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: placement},
		Subjects:     subjects,
	}
}

func restricted(pb policyv1.PlacementBinding) policyv1.PlacementBinding {
	pb.SubFilter = policyv1.Restricted
	return pb
}

func enforcing(pb policyv1.PlacementBinding) policyv1.PlacementBinding {
	pb.BindingOverrides.RemediationAction = "enforce"
	return pb
}

func policySubject(name string) policyv1.Subject {
	return policyv1.Subject{APIGroup: policyv1.GroupName, Kind: "Policy", Name: name}
}

func setSubject(name string) policyv1.Subject {
	return policyv1.Subject{APIGroup: policyv1.GroupName, Kind: "PolicySet", Name: name}
}

func policySet(name string, members ...string) *policyv1beta1.PolicySet {
	s := &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	for _, m := range members {
		s.Spec.Policies = append(s.Spec.Policies, policyv1.NonEmptyString(m))
	}
	return s
}

func entry(binding, placement, set string, clusters ...string) policyv1.Placement {
	p := policyv1.Placement{PlacementBinding: binding, Placement: placement, PolicySet: set}
	for _, c := range clusters {
		p.Decisions = append(p.Decisions, policyv1.PlacementDecision{ClusterName: c, ClusterNamespace: c})
	}
	return p
}

// excluding adds to a policy set the exclusion of policy from clusters.
func excluding(set *policyv1beta1.PolicySet, policy string, clusters ...string) *policyv1beta1.PolicySet {
	e := policyv1beta1.PolicySetExclusion{PolicyName: policyv1.NonEmptyString(policy), Reason: "test"}
	for _, c := range clusters {
		e.ClusterNames = append(e.ClusterNames, policyv1.NonEmptyString(c))
	}
	set.Spec.Exclusions = append(set.Spec.Exclusions, e)
	return set
}

// withExclusions sets the exclusions of a status.placement entry.
func withExclusions(p policyv1.Placement, clusters ...string) policyv1.Placement {
	for _, c := range clusters {
		p.Exclusions = append(p.Exclusions, policyv1.PolicyExclusion{ClusterName: c})
	}
	return p
}

func TestResolvePlacement(t *testing.T) {
	decisions := map[string][]string{"p1": {"c1", "c2"}, "p2": {"c2", "c3"}, "empty": nil}
	placements := sets.New("p1", "p2", "empty")
	for _, tc := range []struct {
		name         string
		disabled     bool
		bindings     []policyv1.PlacementBinding
		sets         map[string]*policyv1beta1.PolicySet
		wantClusters []Cluster
		wantEntries  []policyv1.Placement
		wantProblems []string // substrings, in order
		wantUnbound  bool
	}{{
		name:         "no binding",
		wantUnbound:  true,
		wantProblems: nil,
	}, {
		name:         "a binding of another policy",
		bindings:     []policyv1.PlacementBinding{binding("b", "p1", policySubject("other"))},
		wantUnbound:  true,
		wantProblems: nil,
	}, {
		name:         "a binding naming the policy",
		bindings:     []policyv1.PlacementBinding{binding("b", "p1", policySubject("pol"))},
		wantClusters: []Cluster{{Name: "c1"}, {Name: "c2"}},
		wantEntries:  []policyv1.Placement{entry("b", "p1", "", "c1", "c2")},
	}, {
		name: "the union of two bindings",
		bindings: []policyv1.PlacementBinding{
			binding("b2", "p2", policySubject("pol")),
			binding("b1", "p1", policySubject("pol")),
		},
		wantClusters: []Cluster{{Name: "c1"}, {Name: "c2"}, {Name: "c3"}},
		wantEntries:  []policyv1.Placement{entry("b1", "p1", "", "c1", "c2"), entry("b2", "p2", "", "c2", "c3")},
	}, {
		name: "a restricted binding only overrides selected clusters",
		bindings: []policyv1.PlacementBinding{
			binding("b1", "p1", policySubject("pol")),
			enforcing(restricted(binding("b2", "p2", policySubject("pol")))),
		},
		wantClusters: []Cluster{{Name: "c1"}, {Name: "c2", Enforce: true}},
		wantEntries:  []policyv1.Placement{entry("b1", "p1", "", "c1", "c2"), entry("b2", "p2", "", "c2")},
	}, {
		name:         "a restricted binding alone selects nothing, and says why",
		bindings:     []policyv1.PlacementBinding{enforcing(restricted(binding("b", "p1", policySubject("pol"))))},
		wantEntries:  nil,
		wantProblems: []string{"PlacementBinding b is restricted (subFilter: restricted): it only overrides the settings of clusters that other bindings select"},
	}, {
		name:         "a non-restricted binding's override",
		bindings:     []policyv1.PlacementBinding{enforcing(binding("b", "p1", policySubject("pol")))},
		wantClusters: []Cluster{{Name: "c1", Enforce: true}, {Name: "c2", Enforce: true}},
		wantEntries:  []policyv1.Placement{entry("b", "p1", "", "c1", "c2")},
	}, {
		name:         "through a policy set",
		bindings:     []policyv1.PlacementBinding{binding("b", "p1", setSubject("set"))},
		sets:         map[string]*policyv1beta1.PolicySet{"set": policySet("set", "x", "pol")},
		wantClusters: []Cluster{{Name: "c1"}, {Name: "c2"}},
		wantEntries:  []policyv1.Placement{entry("b", "p1", "set", "c1", "c2")},
	}, {
		name:         "through a policy set excluding the policy from a cluster",
		bindings:     []policyv1.PlacementBinding{binding("b", "p1", setSubject("set"))},
		sets:         map[string]*policyv1beta1.PolicySet{"set": excluding(policySet("set", "x", "pol"), "pol", "c2", "c9")},
		wantClusters: []Cluster{{Name: "c1"}},
		wantEntries:  []policyv1.Placement{withExclusions(entry("b", "p1", "set", "c1"), "c2", "c9")},
	}, {
		name:         "an exclusion of another member leaves the policy placed",
		bindings:     []policyv1.PlacementBinding{binding("b", "p1", setSubject("set"))},
		sets:         map[string]*policyv1beta1.PolicySet{"set": excluding(policySet("set", "x", "pol"), "x", "c2")},
		wantClusters: []Cluster{{Name: "c1"}, {Name: "c2"}},
		wantEntries:  []policyv1.Placement{entry("b", "p1", "set", "c1", "c2")},
	}, {
		name: "an exclusion does not reach a binding naming the policy itself",
		bindings: []policyv1.PlacementBinding{
			binding("b", "p1", setSubject("set"), policySubject("pol")),
			binding("d", "p2", policySubject("pol")),
		},
		sets:         map[string]*policyv1beta1.PolicySet{"set": excluding(policySet("set", "pol"), "pol", "c1", "c2")},
		wantClusters: []Cluster{{Name: "c1"}, {Name: "c2"}, {Name: "c3"}},
		wantEntries: []policyv1.Placement{
			entry("b", "p1", "", "c1", "c2"), withExclusions(entry("b", "p1", "set"), "c1", "c2"), entry("d", "p2", "", "c2", "c3"),
		},
	}, {
		name: "an excluded cluster gets no override through the set",
		bindings: []policyv1.PlacementBinding{
			binding("d", "p1", policySubject("pol")),
			enforcing(restricted(binding("r", "p1", setSubject("set")))),
		},
		sets:         map[string]*policyv1beta1.PolicySet{"set": excluding(policySet("set", "pol"), "pol", "c2")},
		wantClusters: []Cluster{{Name: "c1", Enforce: true}, {Name: "c2"}},
		wantEntries:  []policyv1.Placement{entry("d", "p1", "", "c1", "c2"), withExclusions(entry("r", "p1", "set", "c1"), "c2")},
	}, {
		name:        "through a policy set that does not list the policy",
		bindings:    []policyv1.PlacementBinding{binding("b", "p1", setSubject("set"))},
		sets:        map[string]*policyv1beta1.PolicySet{"set": policySet("set", "x")},
		wantUnbound: true,
	}, {
		name:        "through a missing policy set",
		bindings:    []policyv1.PlacementBinding{binding("b", "p1", setSubject("set"))},
		wantUnbound: true,
	}, {
		name:         "directly and through a set: one entry each",
		bindings:     []policyv1.PlacementBinding{binding("b", "p1", setSubject("set"), policySubject("pol"), policySubject("pol"))},
		sets:         map[string]*policyv1beta1.PolicySet{"set": policySet("set", "pol")},
		wantClusters: []Cluster{{Name: "c1"}, {Name: "c2"}},
		wantEntries:  []policyv1.Placement{entry("b", "p1", "", "c1", "c2"), entry("b", "p1", "set", "c1", "c2")},
	}, {
		name:        "disabled selects nothing and reports no placement problem",
		disabled:    true,
		bindings:    []policyv1.PlacementBinding{binding("b", "p1", policySubject("pol")), binding("e", "empty", policySubject("pol"))},
		wantEntries: []policyv1.Placement{entry("b", "p1", ""), entry("e", "empty", "")},
	}, {
		name:         "a restricted binding to a placement without decisions is no problem",
		bindings:     []policyv1.PlacementBinding{binding("b", "p1", policySubject("pol")), restricted(binding("r", "empty", policySubject("pol")))},
		wantClusters: []Cluster{{Name: "c1"}, {Name: "c2"}},
		wantEntries:  []policyv1.Placement{entry("b", "p1", "", "c1", "c2")},
	}, {
		name:         "a placement without decisions",
		bindings:     []policyv1.PlacementBinding{binding("b", "empty", policySubject("pol"))},
		wantEntries:  []policyv1.Placement{entry("b", "empty", "")},
		wantProblems: []string{"Placement empty of PlacementBinding b has no decisions"},
	}, {
		name:         "a missing placement",
		bindings:     []policyv1.PlacementBinding{binding("b", "gone", policySubject("pol"))},
		wantEntries:  []policyv1.Placement{entry("b", "gone", "")},
		wantProblems: []string{"Placement gone of PlacementBinding b does not exist: create it in namespace ns"},
	}, {
		name: "a placement rule",
		bindings: []policyv1.PlacementBinding{func() policyv1.PlacementBinding {
			pb := binding("b", "p1", policySubject("pol"))
			pb.PlacementRef = policyv1.PlacementSubject{APIGroup: "apps.open-cluster-management.io", Kind: "PlacementRule", Name: "rule"}
			return pb
		}()},
		wantEntries:  []policyv1.Placement{{PlacementBinding: "b", PlacementRule: "rule"}},
		wantProblems: []string{"PlacementBinding b refers to PlacementRule rule, which Canopy does not support"},
	}, {
		name: "a subject of an unknown kind",
		bindings: []policyv1.PlacementBinding{binding("b", "p1",
			policyv1.Subject{APIGroup: policyv1.GroupName, Kind: "Polcy", Name: "pol"},
			policyv1.Subject{APIGroup: "example.com", Kind: "Policy", Name: "pol"},
			policyv1.Subject{APIGroup: "example.com", Kind: "Policy", Name: "other"})},
		wantUnbound: true,
		wantProblems: []string{
			`PlacementBinding b names pol with kind "Polcy" of API group "policy.open-cluster-management.io", which is ignored`,
			`PlacementBinding b names pol with kind "Policy" of API group "example.com", which is ignored`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			res := ResolvePlacement(PlacementInputs{
				PolicyName: "pol", Namespace: "ns", Disabled: tc.disabled,
				Bindings: tc.bindings, PolicySets: tc.sets, Decisions: decisions, Placements: placements,
			})
			g.Expect(res.Clusters).To(Equal(tc.wantClusters))
			g.Expect(res.Placements).To(Equal(tc.wantEntries))
			g.Expect(res.Bound).To(Equal(!tc.wantUnbound))
			g.Expect(res.Problems).To(HaveLen(len(tc.wantProblems)), "%q", res.Problems)
			for i, p := range tc.wantProblems {
				g.Expect(res.Problems[i]).To(ContainSubstring(p))
			}
		})
	}
}

// FuzzResolvePlacement checks the invariants of placement resolution on
// random bindings: the selected clusters are sorted and unique, come only
// from non-restricted bindings on paths that do not exclude them, and are exactly the union of the
// decisions of the status.placement entries.
func FuzzResolvePlacement(f *testing.F) {
	f.Add([]byte{0x01, 0x12, 0x23, 0x34}, false)
	f.Add([]byte{0xff, 0x00, 0x7f}, true)
	f.Fuzz(func(t *testing.T, data []byte, disabled bool) {
		in := fuzzInputs(data, disabled)
		res := ResolvePlacement(in)
		fromEntries := sets.New[string]()
		for _, p := range res.Placements {
			for _, d := range p.Decisions {
				fromEntries.Insert(d.ClusterName)
			}
		}
		names := make([]string, 0, len(res.Clusters))
		for _, c := range res.Clusters {
			names = append(names, c.Name)
		}
		if !sets.New(names...).Equal(fromEntries) || len(names) != fromEntries.Len() {
			t.Fatalf("clusters %v, entries select %v", names, sets.List(fromEntries))
		}
		for i := 1; i < len(names); i++ {
			if names[i-1] >= names[i] {
				t.Fatalf("clusters not sorted and unique: %v", names)
			}
		}
		if disabled && len(names) > 0 {
			t.Fatalf("a disabled policy selected %v", names)
		}
		nonRestricted := sets.New[string]()
		for _, pb := range in.Bindings {
			via, _ := SubjectsNaming(&pb, in.PolicyName, in.PolicySets)
			for _, set := range via {
				if pb.SubFilter != policyv1.Restricted {
					excluded := ExcludedClusters(in.PolicySets[set], in.PolicyName)
					nonRestricted.Insert(filter(in.Decisions[pb.PlacementRef.Name], func(c string) bool { return !excluded.Has(c) })...)
				}
			}
		}
		if !nonRestricted.IsSuperset(sets.New(names...)) {
			t.Fatalf("selected %v beyond the non-restricted bindings' %v, less the exclusions", names, sets.List(nonRestricted))
		}
	})
}

// fuzzInputs turns bytes into bindings: each byte is one binding, its bits
// choosing the placement, the subject, restriction and override.
func fuzzInputs(data []byte, disabled bool) PlacementInputs {
	clusters := []string{"a", "b", "c", "d"}
	in := PlacementInputs{
		PolicyName: "pol", Namespace: "ns", Disabled: disabled,
		PolicySets: map[string]*policyv1beta1.PolicySet{"set": excluding(policySet("set", "pol"), "pol", "b"), "other": policySet("other", "x")},
		Decisions:  map[string][]string{}, Placements: sets.New[string](),
	}
	for i, b := range data {
		placement := string(rune('p' + b%4))
		in.Placements.Insert(placement)
		in.Decisions[placement] = clusters[:b%4]
		subject := []policyv1.Subject{policySubject("pol"), setSubject("set"), setSubject("other"), policySubject("x")}[(b>>2)%4]
		pb := binding(string(rune('a'+i%26))+string(rune('a'+i/26%26)), placement, subject)
		if b&0x10 != 0 {
			pb = restricted(pb)
		}
		if b&0x20 != 0 {
			pb = enforcing(pb)
		}
		in.Bindings = append(in.Bindings, pb)
	}
	return in
}
