package propagator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/hub"
)

// These tests hold the rule a rollout moves on by: a cluster has succeeded
// when its replica is Compliant and its agent reported, on the replica's
// status, having evaluated the replica's current generation
// (status.evaluatedGeneration), both read from one object. No report time
// decides anything.

// reportAt records, as an agent whose clock reads at does, a compliance
// report on the replica: status.compliant and a new newest history entry
// made at at. evaluated says whether the agent evaluated the replica's
// current spec (status.evaluatedGeneration is then its generation); an
// agent that has not yet evaluated it leaves evaluatedGeneration as it was.
func reportAt(t *testing.T, cluster, ns, name string, state policyv1.ComplianceState, evaluated bool, at time.Time) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		p := getReplica(g, t.Context(), cluster, ns, name)
		p.Status.ComplianceState = state
		if evaluated {
			p.Status.EvaluatedGeneration = p.Generation
		}
		if len(p.Status.Details) == 0 {
			p.Status.Details = []policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: name + "-template"}}}
		}
		d := &p.Status.Details[0]
		d.ComplianceState = state
		entry := policyv1.ComplianceHistory{LastTimestamp: metav1.NewTime(at), EventName: fmt.Sprintf("%s.%d", name, time.Now().UnixNano()),
			Message: fmt.Sprintf("%s; notification - reported at %s", state, at.Format(time.RFC3339Nano))}
		d.History = append([]policyv1.ComplianceHistory{entry}, d.History...)
		g.Expect(env.Hub.Client.Status().Update(t.Context(), p)).To(Succeed())
	}).Should(Succeed())
}

// toV2 changes the template of p, so that every replica gets a new
// generation, and waits until cluster-a, the canary, has it.
func toV2(t *testing.T, ns string, p *policyv1.Policy) {
	t.Helper()
	update(t, p, func(p *policyv1.Policy) {
		p.Spec.PolicyTemplates[0].ObjectDefinition.Raw = fmt.Appendf(nil, configurationPolicy, "p-template-v2")
	})
	NewWithT(t).Eventually(func(g Gomega) string { return templateName(g, t, "cluster-a", ns, "p") }).Should(Equal("p-template-v2"))
}

// expectTemplatesStay expects, for a while, the named template on each of clusters.
func expectTemplatesStay(t *testing.T, ns, template string, clusters ...string) {
	t.Helper()
	NewWithT(t).Consistently(func(g Gomega) {
		for _, c := range clusters {
			g.Expect(templateName(g, t, c, ns, "p")).To(Equal(template), c)
		}
	}, "3s").Should(Succeed())
}

// expectTemplatesOn waits until each of clusters has the named template.
func expectTemplatesOn(t *testing.T, ns, template string, clusters ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		for _, c := range clusters {
			g.Expect(templateName(g, t, c, ns, "p")).To(Equal(template), c)
		}
	}).Should(Succeed())
}

// TestRolloutMetadataChangeCountsNoOldReport (#28 item 1): a root label
// change rewrites every replica, but the canary, Compliant only on the
// previous spec, does not succeed by it: production keeps the previous
// spec until the canary reports the current generation.
func TestRolloutMetadataChangeCountsNoOldReport(t *testing.T) {
	ns, p := rolledOutToAll(t)
	toV2(t, ns, p)
	update(t, p, func(p *policyv1.Policy) {
		p.Labels = map[string]string{"policy.open-cluster-management.io/team": "blue"}
	})
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(getReplica(g, t.Context(), "cluster-a", ns, "p").Labels).To(HaveKeyWithValue("policy.open-cluster-management.io/team", "blue"))
	}).Should(Succeed())
	expectTemplatesStay(t, ns, "p-template", "cluster-b", "cluster-c")
	g.Expect(states(rolloutOf(g, t, ns, "p"))).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterProgressing))

	report(t, "cluster-a", ns, "p", policyv1.Compliant)
	expectTemplatesOn(t, ns, "p-template-v2", "cluster-b", "cluster-c")
}

// threeGroups places name on cluster-a (canary), cluster-b (production)
// and cluster-c (rest), one decision group each.
func threeGroups(t *testing.T, ns, name string) {
	t.Helper()
	placeInGroups(t, ns, name, decisionGroup{"canary", []string{"cluster-a"}}, decisionGroup{"production", []string{"cluster-b"}},
		decisionGroup{"rest", []string{"cluster-c"}})
}

// refuseStatusWrites makes the API server refuse every write of the status
// of root ns/name, as a status patch that fails would; the returned func
// lifts it.
func refuseStatusWrites(t *testing.T, ns, name string) func() {
	t.Helper()
	g := NewWithT(t)
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "refuse-status-" + ns}}
	vap.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	vap.Spec.MatchConstraints = &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{policyv1.GroupName}, APIVersions: []string{"*"},
				Resources: []string{"policies/status"}},
		},
	}}}
	vap.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "root",
		Expression: fmt.Sprintf("object.metadata.namespace == %q && object.metadata.name == %q", ns, name)}}
	vap.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "false", Message: "test: status writes of this root are refused"}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: vap.Name}}
	binding.Spec.PolicyName = vap.Name
	binding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
	create(t, vap, binding)
	lift := func() {
		g.Expect(client.IgnoreNotFound(env.Hub.Client.Delete(context.Background(), binding))).To(Succeed())
		g.Expect(client.IgnoreNotFound(env.Hub.Client.Delete(context.Background(), vap))).To(Succeed())
	}
	t.Cleanup(lift)
	g.Eventually(func() error { // Note: the API server takes a moment to enforce a new policy
		p := &policyv1.Policy{}
		if err := env.Hub.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		p.Status.Conditions = append(p.Status.Conditions, metav1.Condition{Type: "Probe", Status: metav1.ConditionTrue, Reason: "Probe",
			LastTransitionTime: metav1.Now()})
		return env.Hub.Client.Status().Update(t.Context(), p, client.DryRunAll)
	}).Should(MatchError(ContainSubstring("status writes of this root are refused")))
	return lift
}

// TestRolloutUnrecordedGroupDoesNotCount (#28 item 2): while the root's
// status.rollout cannot be written, no group counts as succeeded on
// reports about the previous spec: production and the rest keep it. Once
// the status can be written, each group waits for the one before it to
// report the current generation.
func TestRolloutUnrecordedGroupDoesNotCount(t *testing.T) {
	ns := newNamespace(t)
	threeGroups(t, ns, "groups")
	p := newPolicy(ns, "p")
	p.Spec.RolloutStrategy = &clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup,
		ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{}}
	create(t, p, newBinding(ns, "b", "groups", policySubject("p")))
	for _, c := range clusters {
		expectReplicasOn(t, ns, "p", clusters[:slicesIndex(clusters, c)+1]...)
		report(t, c, ns, "p", policyv1.Compliant)
	}
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(rolloutOf(g, t, ns, "p").Phase).To(Equal(policyv1.RolloutSucceeded))
	}).Should(Succeed())

	lift := refuseStatusWrites(t, ns, "p")
	update(t, p, func(p *policyv1.Policy) {
		p.Spec.PolicyTemplates[0].ObjectDefinition.Raw = fmt.Appendf(nil, configurationPolicy, "p-template-v2")
	})
	expectTemplatesStay(t, ns, "p-template", "cluster-b", "cluster-c")

	lift()
	expectTemplatesOn(t, ns, "p-template-v2", "cluster-a")
	expectTemplatesStay(t, ns, "p-template", "cluster-b", "cluster-c")
	report(t, "cluster-a", ns, "p", policyv1.Compliant)
	expectTemplatesOn(t, ns, "p-template-v2", "cluster-b")
	expectTemplatesStay(t, ns, "p-template", "cluster-c")
	report(t, "cluster-b", ns, "p", policyv1.Compliant)
	expectTemplatesOn(t, ns, "p-template-v2", "cluster-c")
}

// slicesIndex is the index of s in list.
func slicesIndex(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// laggingClient is the hub's client whose cache still shows an older
// status of one replica: Compliant, on its current generation.
type laggingClient struct {
	client.Client
	replica types.NamespacedName
}

// Get reads obj, with the stale status when it is the lagging replica.
func (c laggingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	c.lag(obj)
	return nil
}

// List lists, with the stale status of the lagging replica.
func (c laggingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if l, ok := list.(*policyv1.PolicyList); ok {
		for i := range l.Items {
			c.lag(&l.Items[i])
		}
	}
	return nil
}

func (c laggingClient) lag(obj client.Object) {
	if p, ok := obj.(*policyv1.Policy); ok && client.ObjectKeyFromObject(p) == c.replica {
		p.Status.ComplianceState, p.Status.EvaluatedGeneration = policyv1.Compliant, p.Generation
	}
}

// runLaggingHub runs the hub's controllers with a cache that lags for
// replica, instead of the suite's hub, until the test ends.
func runLaggingHub(t *testing.T, replica types.NamespacedName) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(runningHub.Stop()).To(Succeed())
	t.Cleanup(func() { g.Expect(runningHub.Start()).To(Succeed()) })
	opts := hub.Options{}
	mo := hub.ManagerOptions(opts)
	mo.NewClient = func(cfg *rest.Config, o client.Options) (client.Client, error) {
		c, err := client.New(cfg, o)
		return laggingClient{Client: c, replica: replica}, err
	}
	stop, err := controlplane.StartManager(env.Hub.Config, mo, func(mgr ctrl.Manager) error {
		return hub.Setup(context.Background(), mgr, opts)
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(stop()).To(Succeed()) })
}

// TestRolloutReadsComplianceAndReportFromOneObject (#28 item 3): a cache
// that still shows the canary Compliant does not count against the API
// server's fresh NonCompliant report on the current spec.
func TestRolloutReadsComplianceAndReportFromOneObject(t *testing.T) {
	ns, p := rolledOutToAll(t)
	toV2(t, ns, p)
	report(t, "cluster-a", ns, "p", policyv1.NonCompliant)
	runLaggingHub(t, types.NamespacedName{Namespace: "cluster-a", Name: ns + ".p"})
	update(t, p, func(p *policyv1.Policy) { p.Annotations = map[string]string{"test": "reconcile"} })
	expectTemplatesStay(t, ns, "p-template", "cluster-b", "cluster-c")
}

// TestRolloutAgentClockAhead (#28 item 4): a report an agent whose clock
// is an hour ahead makes on the previous spec (before it evaluated the
// current one) does not count.
func TestRolloutAgentClockAhead(t *testing.T) {
	ns, p := rolledOutToAll(t)
	toV2(t, ns, p)
	reportAt(t, "cluster-a", ns, "p", policyv1.Compliant, false, time.Now().Add(time.Hour))
	expectTemplatesStay(t, ns, "p-template", "cluster-b", "cluster-c")
	reportAt(t, "cluster-a", ns, "p", policyv1.Compliant, true, time.Now().Add(time.Hour))
	expectTemplatesOn(t, ns, "p-template-v2", "cluster-b", "cluster-c")
}

// TestRolloutAgentClockBehind (#28 item 4): a report on the current spec by
// an agent whose clock is an hour behind counts: the canary succeeds
// before the progressDeadline and the rollout goes on.
func TestRolloutAgentClockBehind(t *testing.T) {
	ns := newNamespace(t)
	canaryFirst(t, ns, "groups")
	p := newPolicy(ns, "p")
	p.Spec.RolloutStrategy = perGroup("20s")
	create(t, p, newBinding(ns, "b", "groups", policySubject("p")))
	expectReplicasOn(t, ns, "p", "cluster-a")
	reportAt(t, "cluster-a", ns, "p", policyv1.Compliant, true, time.Now().Add(-time.Hour))
	expectReplicasOn(t, ns, "p", clusters...)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(states(rolloutOf(g, t, ns, "p"))).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterSucceeded))
	}).Should(Succeed())
}

// TestRolloutMaxFailuresWithoutDeadline (#28 item 5): without a
// progressDeadline, a cluster NonCompliant on the current spec is a
// failure (OCM's Failed), so maxFailures lets the rollout past it; with
// maxFailures 0 the rollout stops at once.
func TestRolloutMaxFailuresWithoutDeadline(t *testing.T) {
	ns := newNamespace(t)
	threeGroups(t, ns, "groups")
	tolerant := newPolicy(ns, "tolerant")
	tolerant.Spec.RolloutStrategy = &clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup,
		ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{RolloutConfig: clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(1)}}}
	strict := newPolicy(ns, "strict")
	strict.Spec.RolloutStrategy = &clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup,
		ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{}}
	create(t, tolerant, strict, newBinding(ns, "b", "groups", policySubject("tolerant"), policySubject("strict")))
	expectReplicasOn(t, ns, "tolerant", "cluster-a")
	expectReplicasOn(t, ns, "strict", "cluster-a")
	report(t, "cluster-a", ns, "tolerant", policyv1.NonCompliant)
	report(t, "cluster-a", ns, "strict", policyv1.NonCompliant)

	expectReplicasOn(t, ns, "tolerant", "cluster-a", "cluster-b")
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		r := rolloutOf(g, t, ns, "strict")
		g.Expect(r.Phase).To(Equal(policyv1.RolloutStopped))
		g.Expect(r.Reason).To(Equal("MaxFailuresReached"))
		g.Expect(states(r)).To(HaveKeyWithValue("cluster-a", policyv1.RolloutClusterFailed))
	}).Should(Succeed())
	g.Consistently(func() ([]string, error) { return replicaClusters(t.Context(), ns, "strict") }, "1s").Should(Equal([]string{"cluster-a"}))
}
