package e2e

import (
	"context"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
	"github.com/canopy-policy/canopy/pkg/hubrbac"
)

// joiner is the managed cluster the registration spec joins to a hub of its
// own, so that its detachment leaves the suite's clusters alone.
const joiner = "joiner"

// The user story "register a managed cluster, then detach it", on a hub of
// its own that runs what a real OCM hub runs for it: kube-controller-manager
// (certificate signing, garbage collection), OCM's registration and
// placement controllers, and Canopy's hub with its addon manager. Every hub
// credential the cluster's agents use is one OCM issued.
var _ = Describe("Registering a managed cluster", Ordered, func() {
	var fleet *testenv.Env

	BeforeAll(func(ctx SpecContext) {
		if os.Getenv(EnvHubKubeconfig) != "" {
			Skip("existing clusters join with their own klusterlet (clusteradm join); this spec starts a hub of its own")
		}
		var err error
		fleet, err = testenv.Start(ctx, testenv.Options{ManagedClusters: []string{joiner}, Unregistered: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(fleet.Stop()).To(Succeed()) })
		DeferCleanup(func(ctx SpecContext) { reportOnFailure(ctx, fleet) })
		Expect(ocmagents.StartControllerManager(ctx, fleet)).To(Succeed())
		Expect(ocmagents.StartRegistrationController(ctx, fleet, ocmagents.RegistrationOptions{})).To(Succeed())
		Expect(ocmagents.StartPlacementController(ctx, fleet)).To(Succeed())
		Expect(ocmagents.StartAddonWebhook(ctx, fleet)).To(Succeed())
		runHub(fleet.Hub.Config, true)
	}, NodeTimeout(3*time.Minute))

	It("joins from a bootstrap kubeconfig, gets the agent through the addon, and reports a policy Compliant on the hub",
		func(ctx SpecContext) {
			mc := fleet.Cluster(joiner)
			start := time.Now()
			_, err := ocmagents.Join(ctx, fleet, mc, true)
			Expect(err).NotTo(HaveOccurred())
			GinkgoWriter.Printf("%s joined in %v\n", joiner, time.Since(start).Round(time.Millisecond))

			Expect(fleet.EnableAddon(ctx, joiner, addon.Name)).To(Succeed())
			Expect(ocmagents.AddonCredential(ctx, fleet, mc, addon.Name, addon.DefaultInstallNamespace)).To(Succeed())
			GinkgoWriter.Printf("the addon's hub credential arrived %v after the start\n", time.Since(start).Round(time.Millisecond))
			Expect(whoAmI(ctx, mc)).To(Equal(hubrbac.User(joiner)), "the agent's identity is the one OCM issued for the addon")

			startAgent(mc)
			ns := CreateNamespace(ctx, fleet.Hub.Client, "registration")
			authorPlacedPolicy(ctx, fleet.Hub.Client, ns)
			Eventually(func(g Gomega) map[string]policyv1.ComplianceState {
				p := &policyv1.Policy{}
				g.Expect(fleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-namespace"}, p)).To(Succeed())
				return perCluster(p)
			}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Equal(allOf([]string{joiner}, policyv1.Compliant)))
			GinkgoWriter.Printf("the policy was Compliant on the hub %v after the start\n", time.Since(start).Round(time.Millisecond))
		}, SpecTimeout(5*time.Minute))

	It("detaching the cluster removes its replicas and refuses its credential", func(ctx SpecContext) {
		mc := fleet.Cluster(joiner)
		Expect(mc.HubClient).NotTo(BeNil(), "the previous spec joined the cluster")
		Expect(fleet.Hub.Client.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: joiner}})).To(Succeed())

		Eventually(func(g Gomega) []policyv1.Policy {
			list := &policyv1.PolicyList{}
			g.Expect(fleet.Hub.Client.List(ctx, list, client.InNamespace(joiner))).To(Succeed())
			return list.Items
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeEmpty(), "the replicas in the cluster namespace")
		Eventually(func() error {
			return mc.HubClient.List(ctx, &policyv1.PolicyList{}, client.InNamespace(joiner))
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeForbidden(), "the addon's hub credential")
	}, SpecTimeout(5*time.Minute))
})

// reportOnFailure writes, when a spec of the container failed, the end of
// every OCM log of env and the addon's status, so that a failure says what
// OCM saw.
func reportOnFailure(ctx context.Context, env *testenv.Env) {
	if !CurrentSpecReport().Failed() {
		return
	}
	GinkgoWriter.Print(ocmagents.LogTails(env))
	mcas := &addonv1beta1.ManagedClusterAddOnList{}
	if err := env.Hub.Client.List(ctx, mcas); err == nil {
		for _, mca := range mcas.Items {
			GinkgoWriter.Printf("ManagedClusterAddOn %s/%s status: %+v\n", mca.Namespace, mca.Name, mca.Status)
		}
	}
}

// whoAmI returns the hub user of mc's agent credential.
func whoAmI(ctx context.Context, mc *testenv.ManagedCluster) (string, error) {
	review, err := kubernetes.NewForConfigOrDie(mc.HubConfig).AuthenticationV1().SelfSubjectReviews().
		Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}

// authorPlacedPolicy authors, in namespace ns, what a policy author writes
// on an OCM hub: a binding of the default ManagedClusterSet, a Placement of
// its clusters, and a policy bound to it (namespacePolicy) that OCM's
// placement controller places.
func authorPlacedPolicy(ctx context.Context, hub client.Client, ns string) {
	GinkgoHelper()
	for _, obj := range []client.Object{
		&clusterv1beta2.ManagedClusterSetBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ocmagents.DefaultClusterSet},
			Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: ocmagents.DefaultClusterSet},
		},
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-namespace"}},
		namespacePolicy(ns, "team-namespace", ns+"-created-by-policy"),
		&policyv1.PlacementBinding{
			ObjectMeta:   metav1.ObjectMeta{Namespace: ns, Name: "team-namespace"},
			PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: "team-namespace"},
			Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: "team-namespace"}},
		},
	} {
		Expect(hub.Create(ctx, obj)).To(Succeed())
	}
}
