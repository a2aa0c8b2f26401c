package e2e

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// AgentRBACSpecInput is the input of AgentRBACSpec.
type AgentRBACSpecInput struct {
	// HubClient is an administrator's client of the hub.
	HubClient client.Client
	// AgentClient is the hub client of the agent of ClusterName.
	AgentClient client.Client
	// ClusterName is the agent's cluster; its namespace on the hub has the
	// same name.
	ClusterName string
	// OtherClusterName is another registered cluster.
	OtherClusterName string
}

// AgentRBACSpec checks that an agent's hub identity can do in its cluster
// namespace what the agent needs (read and update replicas, write their
// status, record events, hold a lease) and nothing else: not create or
// delete replicas, not touch another cluster's namespace, root policies,
// Secrets or cluster-scoped objects.
func AgentRBACSpec(inputGetter func() AgentRBACSpecInput) {
	var (
		input   AgentRBACSpecInput
		replica *policyv1.Policy // in the agent's cluster namespace
		other   *policyv1.Policy // in the other cluster's namespace
		root    *policyv1.Policy // in a namespace of its own
	)

	BeforeEach(func(ctx SpecContext) {
		input = inputGetter()
		Expect(input.HubClient).NotTo(BeNil(), "AgentRBACSpec needs a HubClient")
		Expect(input.AgentClient).NotTo(BeNil(), "AgentRBACSpec needs an AgentClient")
		Expect(input.ClusterName).NotTo(BeEmpty(), "AgentRBACSpec needs a ClusterName")
		Expect(input.OtherClusterName).NotTo(Or(BeEmpty(), Equal(input.ClusterName)), "AgentRBACSpec needs another cluster")

		rootNS := CreateNamespace(ctx, input.HubClient, "e2e-rbac")
		root = createPolicy(ctx, input.HubClient, rootNS, "root", nil)
		replicaLabels := map[string]string{policyv1.RootPolicyLabel: rootNS + ".root"}
		replica = createPolicy(ctx, input.HubClient, input.ClusterName, rootNS+".root", replicaLabels)
		other = createPolicy(ctx, input.HubClient, input.OtherClusterName, rootNS+".root", replicaLabels)
	})

	It("reads and updates the replicas in its cluster namespace", func(ctx SpecContext) {
		got := &policyv1.Policy{}
		Expect(input.AgentClient.Get(ctx, client.ObjectKeyFromObject(replica), got)).To(Succeed())
		Expect(input.AgentClient.List(ctx, &policyv1.PolicyList{}, client.InNamespace(input.ClusterName))).To(Succeed())

		patch := client.MergeFrom(got.DeepCopy())
		got.Annotations = map[string]string{"e2e.canopy.io/touched": "true"}
		Expect(input.AgentClient.Patch(ctx, got, patch)).To(Succeed())
		Expect(input.AgentClient.Update(ctx, got)).To(Succeed())
	})

	It("writes the status of the replicas in its cluster namespace", func(ctx SpecContext) {
		got := &policyv1.Policy{}
		Expect(input.AgentClient.Get(ctx, client.ObjectKeyFromObject(replica), got)).To(Succeed())
		got.Status.ComplianceState = policyv1.Compliant
		Expect(input.AgentClient.Status().Update(ctx, got)).To(Succeed())

		Expect(input.HubClient.Get(ctx, client.ObjectKeyFromObject(replica), got)).To(Succeed())
		Expect(got.Status.ComplianceState).To(Equal(policyv1.Compliant))
	})

	It("records events and holds a lease in its cluster namespace", func(ctx SpecContext) {
		Expect(input.AgentClient.Create(ctx, event(replica))).To(Succeed())
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-", Namespace: input.ClusterName},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("e2e"), LeaseDurationSeconds: ptr.To[int32](60)},
		}
		Expect(input.AgentClient.Create(ctx, lease)).To(Succeed())
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](30)
		Expect(input.AgentClient.Update(ctx, lease)).To(Succeed())
	})

	It("can neither create nor delete replicas", func(ctx SpecContext) {
		p := newPolicy(input.ClusterName, "e2e.created-by-agent", nil)
		Expect(input.AgentClient.Create(ctx, p)).To(BeForbidden())
		Expect(input.AgentClient.Delete(ctx, replica.DeepCopy())).To(BeForbidden())
	})

	It("is refused in another cluster's namespace", func(ctx SpecContext) {
		got := &policyv1.Policy{}
		Expect(input.AgentClient.Get(ctx, client.ObjectKeyFromObject(other), got)).To(BeForbidden())
		Expect(input.AgentClient.List(ctx, &policyv1.PolicyList{}, client.InNamespace(input.OtherClusterName))).To(BeForbidden())
		Expect(input.AgentClient.Update(ctx, other.DeepCopy())).To(BeForbidden())
		Expect(input.AgentClient.Status().Update(ctx, other.DeepCopy())).To(BeForbidden())
		Expect(input.AgentClient.Create(ctx, event(other))).To(BeForbidden())
	})

	It("is refused on root policies", func(ctx SpecContext) {
		Expect(input.AgentClient.Get(ctx, client.ObjectKeyFromObject(root), &policyv1.Policy{})).To(BeForbidden())
		Expect(input.AgentClient.List(ctx, &policyv1.PolicyList{}, client.InNamespace(root.Namespace))).To(BeForbidden())
		Expect(input.AgentClient.List(ctx, &policyv1.PolicyList{})).To(BeForbidden(), "all namespaces")
		Expect(input.AgentClient.Update(ctx, root.DeepCopy())).To(BeForbidden())
	})

	It("is refused Secrets, even in its cluster namespace", func(ctx SpecContext) {
		Expect(input.AgentClient.List(ctx, &corev1.SecretList{}, client.InNamespace(input.ClusterName))).To(BeForbidden())
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "e2e", Namespace: input.ClusterName}}
		Expect(input.AgentClient.Create(ctx, secret)).To(BeForbidden())
	})

	It("is refused cluster-scoped ManagedClusters, even its own", func(ctx SpecContext) {
		Expect(input.AgentClient.Get(ctx, client.ObjectKey{Name: input.ClusterName}, &clusterv1.ManagedCluster{})).To(BeForbidden())
		Expect(input.AgentClient.List(ctx, &clusterv1.ManagedClusterList{})).To(BeForbidden())
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "e2e-by-agent"}}
		Expect(input.AgentClient.Create(ctx, mc)).To(BeForbidden())
	})
}

func newPolicy(namespace, name string, labels map[string]string) *policyv1.Policy {
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: policyv1.PolicySpec{
			RemediationAction: policyv1.Inform,
			PolicyTemplates:   []policyv1.PolicyTemplate{},
		},
	}
}

// createPolicy creates a policy as the hub's administrator, deleted when the
// current spec ends.
func createPolicy(ctx SpecContext, c client.Client, namespace, name string, labels map[string]string) *policyv1.Policy {
	GinkgoHelper()
	p := newPolicy(namespace, name, labels)
	Expect(c.Create(ctx, p)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(c.Delete(ctx, p))).To(Succeed())
	})
	return p
}

// event is a compliance event on p, as an agent records it.
func event(p *policyv1.Policy) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: policyv1.GroupVersion.String(), Kind: policyv1.PolicyKind,
			Namespace: p.Namespace, Name: p.Name, UID: p.UID,
		},
		Reason:  fmt.Sprintf("policy: %s/e2e", p.Namespace),
		Message: "Compliant; e2e",
		Type:    corev1.EventTypeNormal,
		Source:  corev1.EventSource{Component: "canopy-e2e"},
	}
}
