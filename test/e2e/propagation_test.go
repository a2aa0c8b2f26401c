package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/hub"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/test/inproc"
)

var _ = Describe("Authoring a policy with a placement on the hub", func() {
	PropagationSpec(func() PropagationSpecInput {
		agents := map[string]client.Client{}
		for _, name := range managedClusterNames {
			agents[name] = env.Cluster(name).HubClient
		}
		return PropagationSpecInput{
			HubClient:             env.Hub.Client,
			ClusterNames:          managedClusterNames,
			Agents:                agents,
			SetPlacementDecisions: env.SetPlacementDecisions,
			StartHub:              propHubControllers(env.Hub.Config),
		}
	})
})

// PropagationSpecInput is the input of PropagationSpec.
type PropagationSpecInput struct {
	// HubClient is an administrator's client of the hub: the policy author.
	HubClient client.Client
	// ClusterNames are the managed clusters, at least two.
	ClusterNames []string
	// Agents are the hub clients of the clusters' agents, by cluster name:
	// the spec writes replica status with them, as the agents do.
	Agents map[string]client.Client
	// SetPlacementDecisions stands in for OCM's placement controller.
	SetPlacementDecisions func(ctx context.Context, namespace, placement string, clusters ...string) error
	// StartHub runs the hub controllers until the returned function is
	// called; nil when the suite already runs them (canopy-hub).
	StartHub func(ctx context.Context) (stop func(), err error)
}

// PropagationSpec runs the user story of the hub: a policy author binds
// policies to placements → replicas appear in the namespaces of the
// selected clusters only → the agents report compliance on the replicas →
// the root policies and the policy set show per-cluster compliance.
func PropagationSpec(inputGetter func() PropagationSpecInput) {
	var (
		input PropagationSpecInput
		ns    string
	)

	BeforeEach(func(ctx SpecContext) {
		input = inputGetter()
		Expect(input.HubClient).NotTo(BeNil(), "PropagationSpec needs a HubClient")
		Expect(input.ClusterNames).To(HaveLen(len(input.Agents)), "PropagationSpec needs an agent per cluster")
		Expect(len(input.ClusterNames)).To(BeNumerically(">=", 2), "PropagationSpec needs two clusters")
		Expect(input.SetPlacementDecisions).NotTo(BeNil(), "PropagationSpec needs SetPlacementDecisions")
		if input.StartHub != nil {
			stop, err := input.StartHub(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(stop)
		}
		ns = CreateNamespace(ctx, input.HubClient, "e2e-propagation")
	})

	It("replicates a policy to the selected clusters only and reports their compliance", func(ctx SpecContext) {
		selected, other := input.ClusterNames[0], input.ClusterNames[1]
		propPlacement(ctx, input, ns, "first-cluster", selected)
		propCreate(ctx, input.HubClient, propPolicy(ns, "require-prod-namespace"),
			propBinding(ns, "first-cluster", "first-cluster", policyv1.PolicyKind, "require-prod-namespace"))

		By("waiting for the policy to be propagated")
		propEventually(propRoot(ctx, input.HubClient, ns, "require-prod-namespace")).
			Should(HaveField("Status.Conditions", ContainElement(And(
				HaveField("Type", propagator.ConditionPropagated), HaveField("Reason", propagator.ReasonPropagated)))))
		replica := propReplica(ctx, input.Agents[selected], selected, ns, "require-prod-namespace")
		Expect(replica.Labels).To(HaveKeyWithValue(policyv1.RootPolicyLabel, ns+".require-prod-namespace"))
		err := input.HubClient.Get(ctx, client.ObjectKey{Namespace: other, Name: replica.Name}, &policyv1.Policy{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a replica in the namespace of %s, which is not selected: %v", other, err)

		By("reporting compliance as the agent of " + selected)
		propReport(ctx, input.Agents[selected], replica, policyv1.NonCompliant)
		propEventually(propRoot(ctx, input.HubClient, ns, "require-prod-namespace")).Should(And(
			HaveField("Status.Status", Equal([]policyv1.CompliancePerClusterStatus{
				{ClusterName: selected, ClusterNamespace: selected, ComplianceState: policyv1.NonCompliant}})),
			HaveField("Status.ComplianceState", policyv1.NonCompliant)))
	})

	It("shows per-cluster compliance on the policies of a set and on the set", func(ctx SpecContext) {
		clusters := input.ClusterNames[:2]
		propPlacement(ctx, input, ns, "all", clusters...)
		set := &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: "baseline", Namespace: ns},
			Spec: policyv1beta1.PolicySetSpec{Policies: []policyv1.NonEmptyString{"namespaces", "quotas"}}}
		propCreate(ctx, input.HubClient, propPolicy(ns, "namespaces"), propPolicy(ns, "quotas"), set,
			propBinding(ns, "baseline", "all", policyv1beta1.PolicySetKind, "baseline"))

		By("reporting compliance as the agents of " + fmt.Sprint(clusters))
		states := map[string][]policyv1.ComplianceState{ // by policy, in the order of clusters
			"namespaces": {policyv1.Compliant, policyv1.Compliant},
			"quotas":     {policyv1.Compliant, policyv1.Pending},
		}
		for policy, byCluster := range states {
			for i, c := range clusters {
				replica := propReplica(ctx, input.Agents[c], c, ns, policy)
				propReport(ctx, input.Agents[c], replica, byCluster[i])
			}
		}

		By("reading the compliance on the hub")
		propEventually(propRoot(ctx, input.HubClient, ns, "quotas")).Should(And(
			HaveField("Status.Status", Equal([]policyv1.CompliancePerClusterStatus{
				{ClusterName: clusters[0], ClusterNamespace: clusters[0], ComplianceState: policyv1.Compliant},
				{ClusterName: clusters[1], ClusterNamespace: clusters[1], ComplianceState: policyv1.Pending}})),
			HaveField("Status.ComplianceState", policyv1.Pending)))
		propEventually(propRoot(ctx, input.HubClient, ns, "namespaces")).Should(HaveField("Status.ComplianceState", policyv1.Compliant))
		propEventually(func(g Gomega) policyv1beta1.PolicySetStatus {
			g.Expect(input.HubClient.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
			return set.Status
		}).Should(Equal(policyv1beta1.PolicySetStatus{
			ComplianceState: policyv1.Pending,
			Placement:       []policyv1beta1.PolicySetStatusPlacement{{PlacementBinding: "baseline", Placement: "all"}},
			StatusMessage:   "Policies awaiting pending dependencies: quotas",
		}))
	})
}

// propHubControllers returns a StartHub that runs the hub controllers in the
// test process, assembled as cmd/hub assembles them (pkg/hub).
func propHubControllers(cfg *rest.Config) func(ctx context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		running, err := inproc.RunHub(context.WithoutCancel(ctx), cfg, hub.Options{})
		if err != nil {
			return nil, err
		}
		return func() { Expect(running.Stop()).To(Succeed()) }, nil
	}
}

// propPolicy is a policy whose ConfigurationPolicy requires a namespace.
func propPolicy(ns, name string) *policyv1.Policy {
	template := fmt.Sprintf(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",`+
		`"metadata":{"name":%q},"spec":{"remediationAction":"inform","severity":"low","object-templates":[`+
		`{"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"prod"}}}]}}`, name)
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: policyv1.PolicySpec{
			RemediationAction: policyv1.Inform,
			PolicyTemplates:   []policyv1.PolicyTemplate{{ObjectDefinition: runtime.RawExtension{Raw: []byte(template)}}},
		},
	}
}

func propBinding(ns, name, placement, kind, subject string) *policyv1.PlacementBinding {
	return &policyv1.PlacementBinding{
		ObjectMeta:   metav1.ObjectMeta{Name: name, Namespace: ns},
		PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: placement},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: kind, Name: subject}},
	}
}

// propPlacement creates a Placement and makes it select clusters.
func propPlacement(ctx context.Context, input PropagationSpecInput, ns, name string, clusters ...string) {
	GinkgoHelper()
	pl := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"default"}}}
	Expect(input.HubClient.Create(ctx, pl)).To(Succeed())
	Expect(input.SetPlacementDecisions(ctx, ns, name, clusters...)).To(Succeed())
}

// propCreate creates objects in the spec's namespace, removed with it.
func propCreate(ctx context.Context, c client.Client, objs ...client.Object) {
	GinkgoHelper()
	for _, obj := range objs {
		Expect(c.Create(ctx, obj)).To(Succeed(), "creating %s", obj.GetName())
		DeferCleanup(func(ctx SpecContext) { // envtest runs no namespace controller
			Expect(client.IgnoreNotFound(c.Delete(ctx, obj))).To(Succeed())
		})
	}
}

func propRoot(ctx context.Context, c client.Client, ns, name string) func(g Gomega) *policyv1.Policy {
	return func(g Gomega) *policyv1.Policy {
		p := &policyv1.Policy{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)).To(Succeed())
		return p
	}
}

// propReplica waits until the agent of cluster sees the replica of ns/name.
func propReplica(ctx context.Context, agent client.Client, cluster, ns, name string) *policyv1.Policy {
	GinkgoHelper()
	replica := &policyv1.Policy{}
	propEventually(func() error {
		return agent.Get(ctx, client.ObjectKey{Namespace: cluster, Name: ns + "." + name}, replica)
	}).Should(Succeed())
	return replica
}

// propReport writes a replica's status as an agent's statussync does.
func propReport(ctx context.Context, agent client.Client, replica *policyv1.Policy, state policyv1.ComplianceState) {
	GinkgoHelper()
	propEventually(func(g Gomega) {
		got := &policyv1.Policy{}
		g.Expect(agent.Get(ctx, client.ObjectKeyFromObject(replica), got)).To(Succeed())
		got.Status.ComplianceState = state
		got.Status.Details = []policyv1.DetailsPerTemplate{{
			TemplateMeta:    metav1.ObjectMeta{Name: "template"},
			ComplianceState: state,
			History: []policyv1.ComplianceHistory{{
				LastTimestamp: metav1.Now(), Message: string(state) + "; reported by the e2e suite",
			}},
		}}
		g.Expect(agent.Status().Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
}

// propTimeout bounds each wait of PropagationSpec: several control planes
// share small machines.
const propTimeout = time.Minute

func propEventually(actual any) AsyncAssertion {
	return Eventually(actual).WithTimeout(propTimeout).WithPolling(100 * time.Millisecond)
}
