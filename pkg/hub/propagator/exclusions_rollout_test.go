package propagator_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
)

// TestRolloutPolicySetWithExclusion: a member a set's exclusion keeps off
// the canary cluster does not hold the set's rollout there: production gets
// both members once the canary has every member placed there Compliant.
func TestRolloutPolicySetWithExclusion(t *testing.T) {
	ns := newNamespace(t)
	canaryFirst(t, ns, "groups")
	set := newPolicySet(ns, "operators", "op-a", "op-b")
	set.Spec.RolloutStrategy = perGroup("")
	exclude(set, "op-b", "the canary runs no op-b", "cluster-a")
	create(t, set, newPolicy(ns, "op-a"), newPolicy(ns, "op-b"), newBinding(ns, "b", "groups", setSubject("operators")))
	expectReplicasOn(t, ns, "op-a", "cluster-a")

	report(t, "cluster-a", ns, "op-a", policyv1.Compliant)
	expectReplicasOn(t, ns, "op-a", clusters...)
	expectReplicasOn(t, ns, "op-b", "cluster-b", "cluster-c")
	for _, c := range []string{"cluster-b", "cluster-c"} {
		report(t, c, ns, "op-a", policyv1.Compliant)
		report(t, c, ns, "op-b", policyv1.Compliant)
	}
	expectSetCondition(t, ns, "operators", metav1.ConditionTrue, propagator.ReasonRolloutSucceeded, "Every policy of the set")
}
