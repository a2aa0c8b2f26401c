package rootstatus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// createRoot creates a root policy and writes its status.placement as the
// propagator would: binding pb selects clusters (through set, if not "").
func createRoot(t *testing.T, ns, name, set string, clusters ...string) *policyv1.Policy {
	t.Helper()
	g := NewWithT(t)
	root := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}},
	}
	g.Expect(env.Hub.Client.Create(t.Context(), root)).To(Succeed())
	setPlacement(t, root, set, clusters...)
	return root
}

func setPlacement(t *testing.T, root *policyv1.Policy, set string, clusters ...string) {
	t.Helper()
	p := policyv1.Placement{PlacementBinding: "pb", Placement: "pl", PolicySet: set}
	for _, c := range clusters {
		p.Decisions = append(p.Decisions, policyv1.PlacementDecision{ClusterName: c, ClusterNamespace: c})
	}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKeyFromObject(root), root)).To(Succeed())
		root.Status.Placement = []policyv1.Placement{p}
		g.Expect(env.Hub.Client.Status().Update(t.Context(), root)).To(Succeed())
	}).Should(Succeed())
}

// createReplica creates the replica of root on cluster as the propagator would.
func createReplica(t *testing.T, root *policyv1.Policy, cluster string) *policyv1.Policy {
	t.Helper()
	replica := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Name: root.Namespace + "." + root.Name, Namespace: cluster, Labels: map[string]string{
			policyv1.RootPolicyLabel: root.Namespace + "." + root.Name, policyv1.ClusterNameLabel: cluster, policyv1.ClusterNamespaceLabel: cluster,
		}},
		Spec: *root.Spec.DeepCopy(),
	}
	NewWithT(t).Expect(env.Hub.Client.Create(t.Context(), replica)).To(Succeed())
	return replica
}

// report writes a replica's compliance with c, as an agent does.
func report(t *testing.T, c client.Client, replica *policyv1.Policy, state policyv1.ComplianceState) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		got := &policyv1.Policy{}
		g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(replica), got)).To(Succeed())
		got.Status.ComplianceState = state
		g.Expect(c.Status().Update(t.Context(), got)).To(Succeed())
	}).Should(Succeed())
}

func rootStatus(t *testing.T, root *policyv1.Policy) func(g Gomega) policyv1.PolicyStatus {
	return func(g Gomega) policyv1.PolicyStatus {
		got := &policyv1.Policy{}
		g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKeyFromObject(root), got)).To(Succeed())
		return got.Status
	}
}

func entry(cluster string, state policyv1.ComplianceState) policyv1.CompliancePerClusterStatus {
	return policyv1.CompliancePerClusterStatus{ClusterName: cluster, ClusterNamespace: cluster, ComplianceState: state}
}

func TestRootStatusFollowsReplicas(t *testing.T) {
	ns := newNamespace(t)
	root := createRoot(t, ns, "pol", "", "cluster-a", "cluster-b")
	g := NewWithT(t)
	g.Eventually(rootStatus(t, root)).Should(And(
		HaveField("Status", []policyv1.CompliancePerClusterStatus{entry("cluster-a", ""), entry("cluster-b", "")}),
		HaveField("ComplianceState", policyv1.ComplianceState(""))))

	a, b := createReplica(t, root, "cluster-a"), createReplica(t, root, "cluster-b")
	report(t, agents["cluster-a"], a, policyv1.Compliant)
	report(t, agents["cluster-b"], b, policyv1.Compliant)
	g.Eventually(rootStatus(t, root)).Should(HaveField("ComplianceState", policyv1.Compliant))

	report(t, agents["cluster-b"], b, policyv1.Pending)
	g.Eventually(rootStatus(t, root)).Should(And(
		HaveField("Status", []policyv1.CompliancePerClusterStatus{entry("cluster-a", policyv1.Compliant), entry("cluster-b", policyv1.Pending)}),
		HaveField("ComplianceState", policyv1.Pending)))

	report(t, agents["cluster-a"], a, policyv1.NonCompliant)
	g.Eventually(rootStatus(t, root)).Should(HaveField("ComplianceState", policyv1.NonCompliant))

	setPlacement(t, root, "", "cluster-b") // the propagator deselected cluster-a
	g.Eventually(rootStatus(t, root)).Should(And(
		HaveField("Status", []policyv1.CompliancePerClusterStatus{entry("cluster-b", policyv1.Pending)}),
		HaveField("ComplianceState", policyv1.Pending)))

	g.Expect(env.Hub.Client.Delete(t.Context(), b)).To(Succeed())
	g.Eventually(rootStatus(t, root)).Should(And(
		HaveField("Status", []policyv1.CompliancePerClusterStatus{entry("cluster-b", "")}),
		HaveField("ComplianceState", policyv1.ComplianceState(""))))

	setPlacement(t, root, "")
	g.Eventually(rootStatus(t, root)).Should(HaveField("Status", BeEmpty()))
}

// TestSquatterIgnored checks that a Policy holding a replica's name without
// being that root's replica (here, it names another root) never lends the
// root its status.
func TestSquatterIgnored(t *testing.T) {
	ns := newNamespace(t)
	root := createRoot(t, ns, "pol", "", "cluster-a", "cluster-b")
	squatter := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Name: ns + ".pol", Namespace: "cluster-a",
			Labels: map[string]string{policyv1.RootPolicyLabel: ns + ".other"}},
		Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}},
	}
	g := NewWithT(t)
	g.Expect(env.Hub.Client.Create(t.Context(), squatter)).To(Succeed())
	t.Cleanup(func() { _ = env.Hub.Client.Delete(context.Background(), squatter) })
	report(t, env.Hub.Client, squatter, policyv1.NonCompliant)
	report(t, agents["cluster-b"], createReplica(t, root, "cluster-b"), policyv1.Compliant)
	g.Eventually(rootStatus(t, root)).Should(And( // cluster-a has no replica yet: unknown
		HaveField("Status", []policyv1.CompliancePerClusterStatus{entry("cluster-a", ""), entry("cluster-b", policyv1.Compliant)}),
		HaveField("ComplianceState", policyv1.ComplianceState(""))))
}

// TestReplicaBurstCoalesced checks that a burst of replica status updates
// is written to the root in one update.
func TestReplicaBurstCoalesced(t *testing.T) {
	ns := newNamespace(t)
	var burst []string
	for i := range 10 {
		name := fmt.Sprintf("burst-%d", i)
		err := env.Hub.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if !apierrors.IsAlreadyExists(err) {
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
		}
		burst = append(burst, name)
	}
	root := createRoot(t, ns, "pol", "", burst...)
	var replicas []*policyv1.Policy
	for _, c := range burst {
		replicas = append(replicas, createReplica(t, root, c))
	}
	g := NewWithT(t)
	g.Eventually(rootStatus(t, root)).Should(HaveField("Status", HaveLen(len(burst))))

	mark := writes.Mark()
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Go(func() { report(t, env.Hub.Client, r, policyv1.Compliant) })
	}
	wg.Wait()
	g.Eventually(rootStatus(t, root)).Should(HaveField("ComplianceState", policyv1.Compliant))
	g.Expect(writes.Matching(mark, "/namespaces/"+ns+"/policies/pol/status")).To(HaveLen(1),
		"%d replica updates lead to one root update", len(replicas))
}

func TestPolicySetStatus(t *testing.T) {
	ns := newNamespace(t)
	set := &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: "set", Namespace: ns}}
	set.Spec.Policies = []policyv1.NonEmptyString{"ok", "waiting", "off", "absent"}
	g := NewWithT(t)
	g.Expect(env.Hub.Client.Create(t.Context(), set)).To(Succeed())
	ok, waiting := createRoot(t, ns, "ok", "set", "cluster-a"), createRoot(t, ns, "waiting", "set", "cluster-a", "cluster-b")
	off := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "off", Namespace: ns},
		Spec: policyv1.PolicySpec{Disabled: true, PolicyTemplates: []policyv1.PolicyTemplate{}}}
	g.Expect(env.Hub.Client.Create(t.Context(), off)).To(Succeed())
	report(t, agents["cluster-a"], createReplica(t, ok, "cluster-a"), policyv1.Compliant)
	report(t, agents["cluster-a"], createReplica(t, waiting, "cluster-a"), policyv1.Pending)

	setStatus := func(g Gomega) policyv1beta1.PolicySetStatus {
		got := &policyv1beta1.PolicySet{}
		g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKeyFromObject(set), got)).To(Succeed())
		return got.Status
	}
	g.Eventually(setStatus).Should(Equal(policyv1beta1.PolicySetStatus{
		ComplianceState: policyv1.Pending, // cluster-b of "waiting" is unknown, but Pending outranks unknown
		Placement:       []policyv1beta1.PolicySetStatusPlacement{{PlacementBinding: "pb", Placement: "pl"}},
		StatusMessage: "Policies awaiting pending dependencies: waiting; Disabled policies: off; " +
			"Missing policies (not found in the namespace of the set): absent",
	}))

	update := func(change func(*policyv1beta1.PolicySet)) {
		g.Eventually(func(g Gomega) {
			g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKeyFromObject(set), set)).To(Succeed())
			change(set)
			g.Expect(env.Hub.Client.Update(t.Context(), set)).To(Succeed())
		}).Should(Succeed())
	}
	update(func(s *policyv1beta1.PolicySet) { s.Spec.Policies = []policyv1.NonEmptyString{"ok"} })
	g.Eventually(setStatus).Should(And(
		HaveField("ComplianceState", policyv1.Compliant),
		HaveField("StatusMessage", "All policies are reporting status")))

	update(func(s *policyv1beta1.PolicySet) { s.Spec.Policies = []policyv1.NonEmptyString{"ok", "off"} })
	g.Eventually(setStatus).Should(HaveField("StatusMessage", "Disabled policies: off"))
}
