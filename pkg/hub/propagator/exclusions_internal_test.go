package propagator

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

func TestExcludeFromRollouts(t *testing.T) {
	g := NewWithT(t)
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: "pl-1"}}
	pd.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "c1"}, {ClusterName: "c2"}}
	set := excluding(policySet("set", "pol", "other", "third"), "other", "c1")
	gated := []RolloutPlacement{{Name: "pl", PolicySet: "set", Decisions: []*clusterv1beta1.PlacementDecision{pd},
		Members: map[string]map[string]policyv1.RolloutClusterStatus{
			"other": {"c2": {Name: "c2", State: policyv1.RolloutClusterFailed}},
			"third": {"c1": {Name: "c1", State: policyv1.RolloutClusterFailed}},
		}}}

	out := ExcludeFromRollouts(gated, []Cluster{{Name: "c1"}}, map[string]*policyv1beta1.PolicySet{"set": set})
	g.Expect(out[0].Decisions[0].Status.Decisions).To(Equal([]clusterv1beta1.ClusterDecision{{ClusterName: "c1"}}), "c2 is not selected")
	g.Expect(pd.Status.Decisions).To(HaveLen(2), "the decisions given are not changed")
	g.Expect(out[0].Members).To(Equal(map[string]map[string]policyv1.RolloutClusterStatus{
		"other": {"c1": {Name: "c1", State: policyv1.RolloutClusterSucceeded}, "c2": {Name: "c2", State: policyv1.RolloutClusterFailed}},
		"third": {"c1": {Name: "c1", State: policyv1.RolloutClusterFailed}},
	}), "other, excluded from c1, holds nothing back there")
	g.Expect(gated[0].Members["other"]).NotTo(HaveKey("c1"), "the members given are not changed")

	same := ExcludeFromRollouts(gated, []Cluster{{Name: "c1"}, {Name: "c2"}}, nil)
	g.Expect(same[0].Decisions[0]).To(BeIdenticalTo(pd), "nothing to drop: no copy")
}
