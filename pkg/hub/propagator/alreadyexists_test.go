package propagator

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// TestReplicaTheCacheHasNotSeen checks that a replica the cache does not
// list yet (existing == nil) but the API server has is updated as this
// root's replica, not reported as someone else's Policy; and that a Policy
// of the same name that is not a replica of the root is left alone, with
// an error that says so.
func TestReplicaTheCacheHasNotSeen(t *testing.T) {
	g := NewWithT(t)
	ctx, c := t.Context(), clusterA(t)
	r := &Reconciler{Client: c, APIReader: c}
	replica := replicaOnClusterA

	g.Expect(c.Create(ctx, replica("ns.pol", "ns.pol", policyv1.Inform))).To(Succeed())
	g.Expect(r.applyReplica(ctx, replica("ns.pol", "ns.pol", policyv1.Enforce), nil)).To(Succeed())
	got := &policyv1.Policy{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "cluster-a", Name: "ns.pol"}, got)).To(Succeed())
	g.Expect(got.Spec.RemediationAction).To(Equal(policyv1.Enforce), "this root's replica is updated")

	g.Expect(c.Create(ctx, replica("ns.other", "", policyv1.Inform))).To(Succeed())
	err := r.applyReplica(ctx, replica("ns.other", "ns.other", policyv1.Enforce), nil)
	g.Expect(err).To(MatchError(ContainSubstring("a Policy that is not a replica of this policy already has its name")))
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "cluster-a", Name: "ns.other"}, got)).To(Succeed())
	g.Expect(got.Spec.RemediationAction).To(Equal(policyv1.Inform), "someone else's Policy is left alone")
}

// clusterA starts a hub API server for t with the namespace cluster-a, and
// returns its client.
func clusterA(t *testing.T) client.Client {
	t.Helper()
	cp := controlplane.ForTest(t, "hub")
	if err := cp.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cluster-a"}}); err != nil {
		t.Fatal(err)
	}
	return cp.Client
}

// replicaOnClusterA is a replica named name of root in cluster-a, with
// remediation action and no templates.
func replicaOnClusterA(name, root string, action policyv1.RemediationAction) *policyv1.Policy {
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "cluster-a", Name: name, Labels: map[string]string{policyv1.RootPolicyLabel: root}},
		Spec:       policyv1.PolicySpec{RemediationAction: action, PolicyTemplates: []policyv1.PolicyTemplate{}},
	}
}
