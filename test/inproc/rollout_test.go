package inproc_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/test/inproc"
)

// namespaceExists is a ConfigurationPolicy, name, that is Compliant when
// the namespace default exists.
func namespaceExists(name string) policyv1.PolicyTemplate {
	return policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: fmt.Appendf(nil, `{"apiVersion":"policy.open-cluster-management.io/v1",`+
		`"kind":"ConfigurationPolicy","metadata":{"name":%q},"spec":{"remediationAction":"inform","object-templates":[`+
		`{"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}}]}}`, name)}}
}

// TestRolloutChangeReachingNoTemplate (#28 item 5): a change of a root
// that reaches no template object (only ignorePending, then a template
// removed) is evaluated again by the canary's agent, which reports the
// replica's new generation (status.evaluatedGeneration), so the rollout
// reaches production at once, without a progressDeadline.
func TestRolloutChangeReachingNoTemplate(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{"canary", "prod"}})
	inproc.StartHub(t, env.Hub.Config)
	for _, mc := range env.Managed {
		inproc.StartAgent(t, mc.Name, mc.Config, mc.HubConfig)
	}
	g := NewWithT(t)
	ctx := t.Context()
	ns := controlplane.Namespace(t, env.Hub.Client)
	root := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: policyv1.PolicySpec{
		RemediationAction: policyv1.Inform, PolicyTemplates: []policyv1.PolicyTemplate{namespaceExists("first"), namespaceExists("second")},
		RolloutStrategy: &clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup, ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{}},
	}}
	placement := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "groups"}}
	placement.Spec.ClusterSets = []string{"default"}
	binding := &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"},
		PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: "groups"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: policyv1.PolicyKind, Name: "p"}}}
	for _, obj := range []client.Object{root, placement, binding} {
		g.Expect(env.Hub.Client.Create(ctx, obj)).To(Succeed())
	}
	g.Expect(env.SetDecisionGroups(ctx, ns, "groups", testenv.DecisionGroup{Name: "canary", Clusters: []string{"canary"}},
		testenv.DecisionGroup{Name: "production", Clusters: []string{"prod"}})).To(Succeed())

	succeededWith := func(templates int, ignorePending bool) func(Gomega) {
		return func(g Gomega) {
			p := &policyv1.Policy{}
			g.Expect(env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(root), p)).To(Succeed())
			g.Expect(p.Status.Rollout).NotTo(BeNil())
			g.Expect(p.Status.Rollout.Phase).To(Equal(policyv1.RolloutSucceeded), p.Status.Rollout.Message)
			prod := &policyv1.Policy{}
			g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "prod", Name: ns + ".p"}, prod)).To(Succeed())
			g.Expect(prod.Spec.PolicyTemplates).To(HaveLen(templates))
			g.Expect(prod.Spec.PolicyTemplates[0].IgnorePending).To(Equal(ignorePending))
			g.Expect(prod.Status.EvaluatedGeneration).To(Equal(prod.Generation))
		}
	}
	g.Eventually(succeededWith(2, false)).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())

	update := func(change func(*policyv1.Policy)) {
		g.Eventually(func() error {
			p := &policyv1.Policy{}
			if err := env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(root), p); err != nil {
				return err
			}
			change(p)
			return env.Hub.Client.Update(ctx, p)
		}).Should(Succeed())
	}
	update(func(p *policyv1.Policy) { p.Spec.PolicyTemplates[0].IgnorePending = true })
	g.Eventually(succeededWith(2, true)).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	update(func(p *policyv1.Policy) { p.Spec.PolicyTemplates = p.Spec.PolicyTemplates[:1] })
	g.Eventually(succeededWith(1, true)).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
}
