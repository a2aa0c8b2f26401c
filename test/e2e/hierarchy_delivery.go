package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// HierarchyDeliverySpecInput is the input of HierarchyDeliverySpec.
type HierarchyDeliverySpecInput struct {
	// Env is the hub and the managed clusters.
	Env *testenv.Env
	// Clusters are the managed clusters the policy is placed on.
	Clusters []string
	// Example is the path of examples/hierarchy/policy.yaml: a Policy
	// delivering the HierarchyPolicy "shipping-tree".
	Example string
}

// HierarchyDeliverySpec delivers a HierarchyPolicy from the hub inside a
// Policy, like any policy template: on each cluster the syncer materialises
// the declared namespaces with the inherited RoleBinding, and the hub's root
// policy shows every cluster Compliant.
func HierarchyDeliverySpec(inputGetter func() HierarchyDeliverySpecInput) {
	var (
		input HierarchyDeliverySpecInput
		ns    string
	)
	BeforeEach(func(ctx SpecContext) {
		input = inputGetter()
		ns = CreateNamespace(ctx, input.Env.Hub.Client, "hierarchy")
		startHub(input.Env.Hub.Config)
		for _, name := range input.Clusters {
			startAgent(input.Env.Cluster(name))
		}
	})

	It("materialises the tree on every cluster and reports Compliant on the hub", func(ctx SpecContext) {
		objs, err := controlplane.ReadObjects(input.Example)
		Expect(err).NotTo(HaveOccurred())
		for _, obj := range objs {
			obj.SetNamespace(ns)
		}
		Expect(controlplane.Apply(ctx, input.Env.Hub.Client, objs...)).To(Succeed())
		Expect(input.Env.Hub.Client.Create(ctx, &policyv1.PlacementBinding{
			ObjectMeta:   metav1.ObjectMeta{Namespace: ns, Name: "shipping-tree"},
			PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "shipping-tree"},
			Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: "shipping-tree"}},
		})).To(Succeed())
		Expect(input.Env.SetPlacementDecisions(ctx, ns, "shipping-tree", input.Clusters...)).To(Succeed())

		root := client.ObjectKey{Namespace: ns, Name: "shipping-tree"}
		Eventually(func(g Gomega) map[string]policyv1.ComplianceState {
			p := &policyv1.Policy{}
			g.Expect(input.Env.Hub.Client.Get(ctx, root, p)).To(Succeed())
			return perCluster(p)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).
			Should(Equal(allOf(input.Clusters, policyv1.Compliant)))

		for _, name := range input.Clusters {
			c := input.Env.Cluster(name).Client
			for _, leaf := range []string{"shipping-prod", "shipping-dev"} {
				Expect(c.Get(ctx, client.ObjectKey{Name: leaf}, &corev1.Namespace{})).To(Succeed(), "%s: namespace %s", name, leaf)
				rb := &rbacv1.RoleBinding{}
				Expect(c.Get(ctx, client.ObjectKey{Namespace: leaf, Name: "pod-creators"}, rb)).To(Succeed(), "%s: %s inherits pod-creators", name, leaf)
				Expect(rb.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "canopy"))
			}
		}
	})
}
