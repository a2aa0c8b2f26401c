package e2e

import (
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// ExclusionsSpecInput is the input of ExclusionsSpec.
type ExclusionsSpecInput struct {
	// Env is the hub and the managed clusters.
	Env *testenv.Env
	// Clusters are the managed clusters the set is placed on, at least two;
	// the example's exclusion names the second.
	Clusters []string
	// Example is the path of examples/exclusions/policyset.yaml.
	Example string
}

// ExclusionsSpec is the user story "keep one policy of a set off a
// cluster": the example's PolicySet, placed on Clusters, excludes its
// member legacy-tls-settings from the second cluster. That member reaches
// and is evaluated on the other clusters only, the other member on all of
// them, and the set and the root say what is excluded, while every placed
// cluster turns Compliant.
//
// It runs the hub's controllers and one agent per cluster in this process.
func ExclusionsSpec(inputGetter func() ExclusionsSpecInput) {
	var (
		input ExclusionsSpecInput
		ns    string
	)
	BeforeEach(func(ctx SpecContext) {
		input = inputGetter()
		Expect(len(input.Clusters)).To(BeNumerically(">=", 2), "ExclusionsSpec needs two clusters")
		ns = CreateNamespace(ctx, input.Env.Hub.Client, "exclusions")
		startHub(input.Env.Hub.Config)
		for _, name := range input.Clusters {
			startAgent(input.Env.Cluster(name))
		}
	})

	It("propagates the excluded member to the other clusters only and says why", func(ctx SpecContext) {
		excluded := input.Clusters[1]
		hub := input.Env.Hub.Client
		for _, obj := range exclusionsObjects(input.Example, ns, excluded) {
			Expect(hub.Create(ctx, obj)).To(Succeed(), "creating %s %s", obj.GetKind(), obj.GetName())
		}
		Expect(input.Env.SetPlacementDecisions(ctx, ns, "platform", input.Clusters...)).To(Succeed())
		placed := append([]string{input.Clusters[0]}, input.Clusters[2:]...)

		By("waiting for both members to be Compliant where they are placed")
		Eventually(func(g Gomega) {
			for policy, clusters := range map[string][]string{"audit-namespace": input.Clusters, "legacy-tls-settings": placed} {
				p := &policyv1.Policy{}
				g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: policy}, p)).To(Succeed())
				g.Expect(perCluster(p)).To(Equal(allOf(clusters, policyv1.Compliant)), policy)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())

		By("checking that " + excluded + " never got the excluded member")
		err := hub.Get(ctx, client.ObjectKey{Namespace: excluded, Name: ns + ".legacy-tls-settings"}, &policyv1.Policy{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a replica of the excluded member on %s: %v", excluded, err)
		root := &policyv1.Policy{}
		Expect(hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy-tls-settings"}, root)).To(Succeed())
		Expect(root.Status.Placement).To(ConsistOf(And(
			HaveField("PolicySet", "platform-baseline"),
			HaveField("Exclusions", Equal([]policyv1.PolicyExclusion{{ClusterName: excluded}})))))

		By("reading the set's status")
		Eventually(func(g Gomega) policyv1beta1.PolicySetStatus {
			set := &policyv1beta1.PolicySet{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: "platform-baseline"}, set)).To(Succeed())
			return set.Status
		}).WithContext(ctx).WithTimeout(time.Minute).Should(And(
			HaveField("ComplianceState", policyv1.Compliant),
			HaveField("Exclusions", Equal([]policyv1beta1.PolicySetStatusExclusion{
				{PolicyName: "legacy-tls-settings", Clusters: []policyv1.NonEmptyString{policyv1.NonEmptyString(excluded)}}})),
			HaveField("StatusMessage", "All policies are reporting status; One or more policies were excluded. For details, see status.exclusions.")))
	})
}

// exclusionsObjects reads the example's objects into namespace ns, its
// exclusion naming the cluster excluded instead of cluster2.
func exclusionsObjects(path, ns, excluded string) []*unstructured.Unstructured {
	GinkgoHelper()
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(string(raw)).To(ContainSubstring("    - cluster2\n"))
	text := strings.ReplaceAll(string(raw), "    - cluster2\n", "    - "+excluded+"\n")
	objs := decodeInto(text, ns)
	Expect(objs).To(HaveLen(5))
	return objs
}
