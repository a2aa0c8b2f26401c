package propagator_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/test/capture"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
)

// createOperatorSet creates the PolicySet "operators" of op-a and op-b
// (op-b's templates depend on op-a's, on the managed cluster), rolled out
// ProgressivePerGroup with the canary group mandatory, over the Placement
// "groups": cluster-a canary, cluster-b and cluster-c production.
func createOperatorSet(t *testing.T, ns, deadline string) {
	t.Helper()
	canaryFirst(t, ns, "groups")
	set := newPolicySet(ns, "operators", "op-a", "op-b")
	set.Spec.RolloutStrategy = perGroup(deadline)
	opB := newPolicy(ns, "op-b")
	opB.Spec.Dependencies = []policyv1.PolicyDependency{{Name: "op-a", Compliance: policyv1.Compliant}}
	opB.Spec.Dependencies[0].Kind, opB.Spec.Dependencies[0].APIVersion = policyv1.PolicyKind, policyv1.GroupVersion.String()
	create(t, set, newPolicy(ns, "op-a"), opB, newBinding(ns, "b", "groups", setSubject("operators")))
}

// TestRolloutPolicySetAsUnit: through a PolicySet's strategy the set rolls
// out as a unit: production gets none of its members until the canary has
// every member Compliant, although op-a alone is Compliant there first.
func TestRolloutPolicySetAsUnit(t *testing.T) {
	ns := newNamespace(t)
	createOperatorSet(t, ns, "")
	expectReplicasOn(t, ns, "op-a", "cluster-a")
	expectReplicasOn(t, ns, "op-b", "cluster-a")

	report(t, "cluster-a", ns, "op-a", policyv1.Compliant)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(states(rolloutOf(g, t, ns, "op-a"))).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterSucceeded))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(replicaClusters(t.Context(), ns, "op-a")).To(Equal([]string{"cluster-a"}))
		g.Expect(replicaClusters(t.Context(), ns, "op-b")).To(Equal([]string{"cluster-a"}))
		g.Expect(rolloutOf(g, t, ns, "op-a").Phase).To(Equal(policyv1.RolloutProgressing))
	}, "2s").Should(Succeed())

	report(t, "cluster-a", ns, "op-b", policyv1.Compliant)
	expectReplicasOn(t, ns, "op-a", clusters...)
	expectReplicasOn(t, ns, "op-b", clusters...)
	captureObject(t, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "op-a"}}, policyv1.GroupVersion.WithKind(policyv1.PolicyKind), "progressing")
	for _, c := range []string{"cluster-b", "cluster-c"} {
		report(t, c, ns, "op-a", policyv1.Compliant)
		report(t, c, ns, "op-b", policyv1.Compliant)
	}
	expectSetCondition(t, ns, "operators", metav1.ConditionTrue, propagator.ReasonRolloutSucceeded, "Every policy of the set")
}

// expectSetCondition waits until the PolicySet ns/name has the condition
// RolledOut with status, reason and a message containing message.
func expectSetCondition(t *testing.T, ns, name string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		set := &policyv1beta1.PolicySet{}
		g.Expect(env.Hub.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, set)).To(Succeed())
		c := meta.FindStatusCondition(set.Status.Conditions, propagator.ConditionRolledOut)
		g.Expect(c).NotTo(BeNil())
		g.Expect([]any{c.Status, c.Reason}).To(Equal([]any{status, reason}), c.Message)
		g.Expect(c.Message).To(ContainSubstring(message))
	}).Should(Succeed())
}

// TestRolloutPolicySetStopsOnMemberFailure: a member NonCompliant on the
// canary stops the rollout of every member of the set, and each member's
// status.rollout names the policy that failed.
func TestRolloutPolicySetStopsOnMemberFailure(t *testing.T) {
	ns := newNamespace(t)
	createOperatorSet(t, ns, "2s")
	expectReplicasOn(t, ns, "op-b", "cluster-a")
	report(t, "cluster-a", ns, "op-a", policyv1.Compliant)
	report(t, "cluster-a", ns, "op-b", policyv1.NonCompliant)

	g := NewWithT(t)
	for _, name := range []string{"op-a", "op-b"} {
		g.Eventually(func(g Gomega) {
			r := rolloutOf(g, t, ns, name)
			g.Expect(r.Phase).To(Equal(policyv1.RolloutStopped))
			g.Expect(r.Reason).To(Equal(propagator.ReasonMaxFailuresReached))
			g.Expect(r.Message).To(ContainSubstring("Cluster cluster-a of Placement groups was not Compliant for every policy of " +
				"PolicySet operators (not Compliant: op-b on cluster-a): NonCompliant on the current spec, or not Compliant within " +
				"the progressDeadline (2s)"))
			g.Expect(r.Message).To(ContainSubstring("the rollout of PolicySet operators stopped for each of its policies"))
		}).Should(Succeed(), name)
	}
	g.Expect(states(rolloutOf(g, t, ns, "op-a"))).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterSucceeded))
	g.Expect(states(rolloutOf(g, t, ns, "op-b"))).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterFailed))
	g.Consistently(func(g Gomega) {
		g.Expect(replicaClusters(t.Context(), ns, "op-a")).To(Equal([]string{"cluster-a"}))
		g.Expect(replicaClusters(t.Context(), ns, "op-b")).To(Equal([]string{"cluster-a"}))
	}, "1s").Should(Succeed())
	expectSetCondition(t, ns, "operators", metav1.ConditionFalse, propagator.ReasonMaxFailuresReached,
		"The rollout of the set stopped (policies stopped: op-a, op-b): Cluster cluster-a of Placement groups")
	captureObject(t, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "op-b"}}, policyv1.GroupVersion.WithKind(policyv1.PolicyKind), "stopped")
	captureObject(t, &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operators"}}, policyv1beta1.GroupVersion.WithKind(policyv1beta1.PolicySetKind), "set")

	report(t, "cluster-a", ns, "op-b", policyv1.Compliant)
	expectReplicasOn(t, ns, "op-a", clusters...)
	expectReplicasOn(t, ns, "op-b", clusters...)
}

// captureObject captures obj as kubectl get -o yaml prints it, as
// rollout-name.yaml (make captures).
func captureObject(t *testing.T, obj client.Object, gvk schema.GroupVersionKind, name string) {
	t.Helper()
	if !capture.Enabled() {
		return
	}
	g := NewWithT(t)
	g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	obj.SetManagedFields(nil)
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	out, err := yaml.Marshal(obj)
	g.Expect(err).NotTo(HaveOccurred())
	capture.Write(t, "rollout-"+name+".yaml", out)
}
