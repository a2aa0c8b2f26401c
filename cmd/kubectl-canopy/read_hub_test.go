package main

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/depgraph"
	"github.com/canopy-policy/canopy/pkg/spoke/statussync"
	"github.com/canopy-policy/canopy/pkg/spoke/templatesync"
)

// applyFixture applies testdata/hub.yaml, places everything on every
// cluster, and waits for the replicas.
func applyFixture(t *testing.T, env *testenv.Env) {
	t.Helper()
	g := NewWithT(t)
	objs, err := controlplane.ReadObjects("testdata/hub.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controlplane.Apply(t.Context(), env.Hub.Client, objs...)).To(Succeed())
	for _, ns := range []string{"ops", "policies"} {
		g.Expect(env.SetPlacementDecisions(t.Context(), ns, "everywhere", readClusters...)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		list := &policyv1.PolicyList{}
		g.Expect(env.Hub.Client.List(t.Context(), list, client.HasLabels{policyv1.RootPolicyLabel})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(5 * len(readClusters)))
	}).WithTimeout(time.Minute).Should(Succeed())
}

// reportCompliance plays the agent of cluster: for each replica in its
// namespace it decides each template's compliance as templatesync would
// (cycle, then dependencies, then the evaluator's verdicts in
// evaluations), builds the compliance events, and writes the replica
// status that statussync computes from them.
func reportCompliance(t *testing.T, agent client.Client, cluster string) {
	t.Helper()
	g := NewWithT(t)
	replicas := &policyv1.PolicyList{}
	g.Expect(agent.List(t.Context(), replicas, client.InNamespace(cluster))).To(Succeed())
	kinds := map[schema.GroupKind]bool{{Group: policyv1.GroupName, Kind: policyv1.ConfigurationPolicyKind}: true}
	graph := depgraph.GraphFor(cluster, kinds, replicas.Items)
	observed := observations(cluster)
	for i := range replicas.Items {
		replica := &replicas.Items[i]
		var events []corev1.Event
		var templates []string
		for _, pt := range replica.Spec.PolicyTemplates {
			kind, name := pt.KindAndName()
			templates = append(templates, name)
			for _, c := range verdicts(graph, replica, pt, depgraph.Node{Kind: kind, Name: name}, observed, cluster) {
				c.Template.Namespace, c.Template.Name = cluster, name
				at := t0.Add(time.Duration(len(events)) * time.Minute)
				ev := compliance.NewEvent(compliance.ParentFromPolicy(replica), c, compliance.EventSource{Component: "canopy-agent"}, nil, false, at)
				events = append(events, *ev)
			}
		}
		replica.Status.Details = statussync.Details(templates, statussync.Entries(string(replica.UID), events), nil)
		replica.Status.ComplianceState = statussync.PolicyCompliance(replica.Status.Details)
		g.Expect(agent.Status().Update(t.Context(), replica)).To(Succeed())
	}
}

// observations are what the agent of cluster finds of the dependencies: the
// operator's compliance there, the quota policy Compliant, and no
// Namespace prod.
func observations(cluster string) map[depgraph.Key]templatesync.Observation {
	policy := func(name string) depgraph.Key {
		return depgraph.Key{Group: policyv1.GroupName, Version: "v1", Kind: policyv1.PolicyKind, Namespace: cluster, Name: name}
	}
	operator := evaluations[cluster]["operator-subscription"]
	return map[depgraph.Key]templatesync.Observation{
		policy("ops.operator"):    {Found: true, Compliance: operator[len(operator)-1].State},
		policy("policies.quota"):  {Found: true, Compliance: policyv1.Compliant},
		policy("policies.loop-a"): {Found: true, Compliance: policyv1.NonCompliant},
		policy("policies.loop-b"): {Found: true, Compliance: policyv1.NonCompliant},
	}
}

// verdicts are the compliance events of one template, oldest first.
func verdicts(graph depgraph.Graph, replica *policyv1.Policy, pt policyv1.PolicyTemplate, node depgraph.Node,
	observed map[depgraph.Key]templatesync.Observation, cluster string,
) []compliance.Compliance {
	if cycle := graph.CycleMessage(replica.Name, node); cycle != "" {
		return []compliance.Compliance{{State: policyv1.NonCompliant, Message: cycle}}
	}
	deps, err := depgraph.Resolve(cluster, nil, replica.Spec.Dependencies, pt.ExtraDependencies)
	if err != nil {
		return []compliance.Compliance{{State: policyv1.NonCompliant, Message: err.Error()}}
	}
	if unmet := templatesync.Evaluate(deps, observed); len(unmet) > 0 {
		return []compliance.Compliance{{State: policyv1.Pending, Message: templatesync.PendingMessage(unmet, pt.IgnorePending)}}
	}
	return evaluations[cluster][node.Name]
}

// waitForRootStatus waits until rootstatus has computed every root's and
// the PolicySet's status from the replicas, every cluster's included.
func waitForRootStatus(t *testing.T, hub client.Client) {
	t.Helper()
	want := map[string]policyv1.ComplianceState{
		"ops/operator": policyv1.NonCompliant, "policies/app": policyv1.Pending, "policies/quota": policyv1.Compliant,
		"policies/loop-a": policyv1.NonCompliant, "policies/loop-b": policyv1.NonCompliant,
	}
	NewWithT(t).Eventually(func(g Gomega) {
		for key, state := range want {
			ns, name, _ := strings.Cut(key, "/")
			p := &policyv1.Policy{}
			g.Expect(hub.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, p)).To(Succeed())
			g.Expect(p.Status.ComplianceState).To(Equal(state), key)
			g.Expect(p.Status.Status).To(HaveLen(len(readClusters)), key)
			// Note: a NonCompliant root can show before its last cluster does.
			g.Expect(p.Status.Status).To(HaveEach(HaveField("ComplianceState", Not(BeEmpty()))), key)
		}
		set := &policyv1beta1.PolicySet{}
		g.Expect(hub.Get(t.Context(), client.ObjectKey{Namespace: "policies", Name: "baseline"}, set)).To(Succeed())
		g.Expect(set.Status.ComplianceState).To(Equal(policyv1.Compliant))
	}).WithTimeout(time.Minute).Should(Succeed())
}
