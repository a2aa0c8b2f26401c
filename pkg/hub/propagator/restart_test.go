package propagator_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// TestZeroWritesAcrossRestart proves that a steady hub makes no writes
// when its controllers restart: it counts the requests other than GET that
// the controllers send once every root and set has been reconciled again.
func TestZeroWritesAcrossRestart(t *testing.T) {
	ns := newNamespace(t)
	buildSteadyHub(t, ns)
	buildSteadyTemplates(t, ns)
	buildSteadyRollout(t, ns)

	var mark int
	var before controllerMetrics
	restart(t, func() {
		mark = runningHub.writes.Mark()
		before = readControllerMetrics()
	})
	waitUntilIdle(t, before)

	var writes []string
	for _, w := range runningHub.writes.Matching(mark, ns) {
		// Note: a token for the ServiceAccount of hubTemplateOptions is asked
		// for once per start; the API server stores nothing.
		if !strings.HasSuffix(w, "/serviceaccounts/reader/token") {
			writes = append(writes, w)
		}
	}
	NewWithT(t).Expect(writes).To(BeEmpty(), "writes after the restart")
	if others, _ := runningHub.writes.Since(mark); len(others) > 0 {
		t.Logf("writes to objects of other tests after the restart: %q", others)
	}
}

// buildSteadyHub uses every feature of the hub in ns — policies bound
// directly and through a set, a restricted override, a disabled member, a
// dependency on the set, a placement without decisions, a missing member,
// reported compliance — and waits until all of it is reflected in status.
func buildSteadyHub(t *testing.T, ns string) {
	placeOn(t, ns, "all", clusters...)
	placeOn(t, ns, "some", "cluster-b")
	placeOn(t, ns, "none")
	disabled := newPolicy(ns, "disabled")
	disabled.Spec.Disabled = true
	dependant := newPolicy(ns, "dependant")
	dependant.Labels = map[string]string{"team": "a"}
	dependant.Spec.Dependencies = []policyv1.PolicyDependency{{
		TypeMeta: metav1.TypeMeta{APIVersion: policyv1beta1.GroupVersion.String(), Kind: policyv1beta1.PolicySetKind},
		Name:     "set", Compliance: policyv1.Compliant,
	}}
	override := newBinding(ns, "enforce-some", "some", policySubject("p1"), setSubject("set"))
	override.SubFilter = policyv1.Restricted
	override.BindingOverrides.RemediationAction = "Enforce"
	create(t, newPolicy(ns, "p1"), newPolicy(ns, "p2"), disabled, dependant,
		newPolicySet(ns, "set", "p2", "disabled", "absent"), override,
		newBinding(ns, "all", "all", policySubject("p1"), setSubject("set"), policySubject("dependant")),
		newBinding(ns, "none", "none", policySubject("p1")))
	for _, name := range []string{"p1", "p2", "dependant"} {
		expectReplicasOn(t, ns, name, clusters...)
		for i, c := range clusters {
			setReplicaCompliance(t, c, ns, name, []policyv1.ComplianceState{policyv1.Compliant, policyv1.NonCompliant, policyv1.Pending}[i])
		}
	}
	expectCondition(t, ns, "disabled", propagator.ReasonDisabled)
	expectCondition(t, ns, "p1", propagator.ReasonPropagated, "Placement none of PlacementBinding none has no decisions")
	NewWithT(t).Eventually(func(g Gomega) {
		for _, name := range []string{"p1", "p2", "dependant"} {
			p := getPolicy(g, t.Context(), ns, name)
			g.Expect(p.Status.ComplianceState).To(Equal(policyv1.NonCompliant), name)
			g.Expect(p.Status.Status).To(HaveLen(len(clusters)), name)
			g.Expect(p.Status.Status[2]).To(Equal(clusterStatus("cluster-c", policyv1.Pending)), name)
		}
		set := &policyv1beta1.PolicySet{}
		g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "set"}, set)).To(Succeed())
		g.Expect(set.Status.StatusMessage).To(Equal("Disabled policies: disabled; Missing policies (not found in the namespace of the set): absent"))
		g.Expect(set.Status.ComplianceState).To(Equal(policyv1.NonCompliant))
		g.Expect(getReplica(g, t.Context(), "cluster-b", ns, "p2").Spec.RemediationAction).To(Equal(policyv1.RemediationAction("enforce")))
		g.Expect(getReplica(g, t.Context(), "cluster-a", ns, "dependant").Spec.Dependencies).To(HaveLen(3))
	}).Should(Succeed())
}

// buildSteadyTemplates adds to ns policies with hub templates — reading
// ConfigMaps, the ManagedCluster and a Secret, encrypting, through a
// ServiceAccount, and one whose template fails — and waits until they are
// resolved on every cluster.
func buildSteadyTemplates(t *testing.T, ns string) {
	create(t, configMap(ns, "values", map[string]string{"region": "eu"}),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Data: map[string][]byte{"password": []byte("p")}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}})
	grantRead(t, ns, ns, "reader")
	lent := templatePolicy(ns, "lent", map[string]string{"region": `{{hub fromConfigMap "` + ns + `" "values" "region" hub}}`})
	lent.Spec.HubTemplateOptions = &policyv1.HubTemplateOptions{ServiceAccountName: "reader"}
	create(t,
		templatePolicy(ns, "templated", map[string]string{
			"region":   `{{hub fromConfigMap "" "values" "region" hub}}`,
			"set":      `{{hub index .ManagedClusterLabels "cluster.open-cluster-management.io/clusterset" hub}}`,
			"password": `{{hub fromSecret "" "creds" "password" hub}}`,
		}),
		templatePolicy(ns, "failing", map[string]string{"k": `{{hub fromConfigMap "default" "values" "k" hub}}`}),
		lent,
		newBinding(ns, "templates", "all", policySubject("templated"), policySubject("failing"), policySubject("lent")))
	expectCondition(t, ns, "failing", propagator.ReasonHubTemplateError, "restricted")
	NewWithT(t).Eventually(func(g Gomega) {
		for _, c := range clusters {
			g.Expect(replicaTemplate(g, c, ns, "templated").data).To(And(
				HaveKeyWithValue("region", "eu"), HaveKeyWithValue("set", "default"),
				HaveKeyWithValue("password", HavePrefix("$ocm_encrypted:"))))
			g.Expect(replicaTemplate(g, c, ns, "lent").data).To(HaveKeyWithValue("region", "eu"))
		}
	}).Should(Succeed())
	expectCondition(t, ns, "templated", propagator.ReasonPropagated)
	expectCondition(t, ns, "lent", propagator.ReasonPropagated)
}

// controllerNames are the hub's controllers.
var controllerNames = []string{propagator.ControllerName, rootstatus.ControllerName, rootstatus.PolicySetControllerName}

// controllerMetrics are, by controller, the number of reconciles and the
// depth of the queue.
type controllerMetrics struct {
	reconciles, depth map[string]float64
}

func readControllerMetrics() controllerMetrics {
	m := controllerMetrics{reconciles: map[string]float64{}, depth: map[string]float64{}}
	for _, c := range controllerNames {
		m.reconciles[c] = metricValue("controller_runtime_reconcile_total", map[string]string{"controller": c})
		m.depth[c] = metricValue("workqueue_depth", map[string]string{"name": c})
	}
	return m
}

// waitUntilIdle waits until every controller has reconciled, since before,
// at least as many requests as there are objects of its kind on the hub,
// and has nothing queued or in progress. The controllers enqueue every
// object of their kind when their cache syncs, before their workers start,
// so then each object has been reconciled since.
//
// Note: the queue metrics are per controller name, and a stopped queue
// leaves its depth behind; before holds that residue.
func waitUntilIdle(t *testing.T, before controllerMetrics) {
	t.Helper()
	g := NewWithT(t)
	policies := &policyv1.PolicyList{}
	g.Expect(env.Hub.Client.List(t.Context(), policies)).To(Succeed())
	roots := 0
	for i := range policies.Items {
		if !replica.IsReplica(&policies.Items[i]) {
			roots++
		}
	}
	sets := &policyv1beta1.PolicySetList{}
	g.Expect(env.Hub.Client.List(t.Context(), sets)).To(Succeed())
	want := map[string]int{propagator.ControllerName: roots, rootstatus.ControllerName: roots, rootstatus.PolicySetControllerName: len(sets.Items)}
	g.Eventually(func(g Gomega) {
		now := readControllerMetrics()
		for _, c := range controllerNames {
			g.Expect(now.reconciles[c]-before.reconciles[c]).To(BeNumerically(">=", want[c]), "reconciles of %s", c)
			g.Expect(now.depth[c]).To(Equal(before.depth[c]), "queue of %s", c)
			g.Expect(metricValue("controller_runtime_active_workers", map[string]string{"controller": c})).To(BeZero(), "workers of %s", c)
		}
	}).Should(Succeed())
}
