package faults

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

const (
	outageCluster = "cluster1"
	rootNamespace = "faults"
	targetNS      = "faults-target"
)

// TestHubOutage stops the hub's API server while compliance changes on the
// managed cluster: the agent keeps enforcing (an enforced object deleted
// during the outage comes back), survives a SIGKILL in the middle of the
// outage, and once the hub is back the replica's
// history holds exactly the transitions caused, in order, none lost and
// none repeated, and the root policy's status shows the last one.
func TestHubOutage(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{outageCluster}})
	mc := env.Cluster(outageCluster)
	hub, hubHealth, _ := newHub(t, env)
	agent, agentHealth := newAgent(t, mc)
	for _, c := range []client.Client{env.Hub.Client, mc.Client} {
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rootNamespace}})).To(Succeed())
	}
	g.Expect(mc.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: targetNS}})).To(Succeed())
	flag := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: targetNS, Name: "flag"}, Data: map[string]string{"state": "on"}}
	g.Expect(mc.Client.Create(ctx, flag)).To(Succeed())
	createRootPolicy(t, env)
	hub.start()
	agent.start()
	hub.waitReady(hubHealth)
	agent.waitReady(agentHealth)

	replicaKey := client.ObjectKey{Namespace: outageCluster, Name: rootNamespace + ".outage"}
	want := []string{"Compliant"} // the history of "watched", newest first
	g.Eventually(policyStatus(ctx, env.Hub.Client, replicaKey)).Should(WithTransform(historyOf("watched"), Equal(want)))
	enforced := &corev1.ConfigMap{}
	g.Expect(mc.Client.Get(ctx, client.ObjectKey{Namespace: targetNS, Name: "enforced"}, enforced)).To(Succeed())

	g.Expect(env.Hub.Pause()).To(Succeed())
	for i, state := range []string{"off", "on", "off", "on", "off"} {
		setFlag(t, mc.Client, state)
		want = append([]string{map[string]string{"on": "Compliant", "off": "NonCompliant"}[state]}, want...)
		g.Eventually(policyStatus(ctx, mc.Client, replicaKey)).Should(WithTransform(historyOf("watched"), Equal(want)),
			"transition %d on the managed cluster during the outage", i)
		switch i {
		case 0:
			expectReEnforced(t, mc.Client, enforced)
		case 2: // the transitions so far live only on the managed cluster: they must survive the agent
			agent.kill()
			agent.start()
			agent.waitReady(agentHealth)
		}
	}
	g.Expect(env.Hub.Resume(ctx)).To(Succeed())

	local := policyStatus(ctx, mc.Client, replicaKey)(g)
	g.Eventually(policyStatus(ctx, env.Hub.Client, replicaKey)).Should(SatisfyAll(
		WithTransform(historyOf("watched"), Equal(want)),
		HaveField("ComplianceState", policyv1.NonCompliant),
		HaveField("Details", Equal(local.Details)),
	), "the hub replica's status after the outage")
	g.Expect(local.Details).To(HaveEach(HaveField("History", uniqueEvents())), "no event twice in a history")
	g.Eventually(policyStatus(ctx, env.Hub.Client, client.ObjectKey{Namespace: rootNamespace, Name: "outage"})).Should(SatisfyAll(
		HaveField("ComplianceState", policyv1.NonCompliant),
		HaveField("Status", ConsistOf(HaveField("ComplianceState", policyv1.NonCompliant))),
	), "the root policy's status after the outage")
	t.Logf("history of watched on the hub after the outage: %q", want)
	g.Expect(agent.exited()).To(Succeed())
	g.Expect(hub.exited()).To(Succeed())
}

// createRootPolicy creates the root policy "outage" on the hub, bound to a
// placement that selects outageCluster: template "enforced" enforces a
// ConfigMap, template "watched" reports whether the ConfigMap "flag" says on.
func createRootPolicy(t *testing.T, env *testenv.Env) {
	g := NewWithT(t)
	ctx := t.Context()
	g.Expect(env.SetPlacementDecisions(ctx, rootNamespace, "pl", outageCluster)).To(Succeed())
	g.Expect(env.Hub.Client.Create(ctx, &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: rootNamespace, Name: "outage"},
		Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{
			configurationPolicy("enforced", "enforce", configMap(targetNS, "enforced", map[string]any{"a": "1"})),
			configurationPolicy("watched", "inform", configMap(targetNS, "flag", map[string]any{"state": "on"})),
		}},
	})).To(Succeed())
	g.Expect(env.Hub.Client.Create(ctx, &policyv1.PlacementBinding{
		ObjectMeta:   metav1.ObjectMeta{Namespace: rootNamespace, Name: "outage"},
		PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: "pl"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: policyv1.PolicyKind, Name: "outage"}},
	})).To(Succeed())
}

// setFlag writes state into the ConfigMap "flag".
func setFlag(t *testing.T, c client.Client, state string) {
	NewWithT(t).Eventually(func() error {
		cm := &corev1.ConfigMap{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: targetNS, Name: "flag"}, cm); err != nil {
			return err
		}
		cm.Data["state"] = state
		return c.Update(t.Context(), cm)
	}).Should(Succeed())
}

// expectReEnforced deletes the enforced ConfigMap and expects the agent to
// create it again.
func expectReEnforced(t *testing.T, c client.Client, enforced *corev1.ConfigMap) {
	g := NewWithT(t)
	g.Expect(c.Delete(t.Context(), enforced)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{}
		g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(enforced), cm)).To(Succeed())
		g.Expect(cm.UID).NotTo(Equal(enforced.UID))
		g.Expect(cm.Data).To(Equal(map[string]string{"a": "1"}))
	}).Should(Succeed(), "the agent must enforce while the hub is down")
}

// policyStatus returns a function reading the status of the policy key.
func policyStatus(ctx context.Context, c client.Client, key client.ObjectKey) func(g Gomega) policyv1.PolicyStatus {
	return func(g Gomega) policyv1.PolicyStatus {
		p := &policyv1.Policy{}
		g.Expect(c.Get(ctx, key, p)).To(Succeed())
		return p.Status
	}
}

// historyOf returns the compliance states of a template's history, newest
// first.
func historyOf(template string) func(policyv1.PolicyStatus) []string {
	return func(s policyv1.PolicyStatus) []string {
		var out []string
		for _, d := range s.Details {
			if d.TemplateMeta.Name != template {
				continue
			}
			for _, h := range d.History {
				state, _, _ := strings.Cut(h.Message, ";")
				out = append(out, state)
			}
		}
		return out
	}
}

// uniqueEvents matches a history in which no event appears twice.
func uniqueEvents() OmegaMatcher {
	return WithTransform(func(h []policyv1.ComplianceHistory) []string {
		seen := map[string]bool{}
		var dups []string
		for _, e := range h {
			if seen[e.EventName] {
				dups = append(dups, e.EventName)
			}
			seen[e.EventName] = true
		}
		return dups
	}, BeEmpty())
}
