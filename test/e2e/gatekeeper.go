package e2e

import (
	"context"
	"fmt"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	gkenv "github.com/canopy-policy/canopy/internal/test/gatekeeper"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// GatekeeperSpecInput is the input of GatekeeperSpec.
type GatekeeperSpecInput struct {
	// Env is the hub and the managed clusters.
	Env *testenv.Env
	// Clusters are the managed clusters the policy is placed on; each runs
	// Gatekeeper for the spec.
	Clusters []string
	// Example is the path of examples/gatekeeper/policy.yaml.
	Example string
}

// GatekeeperSpec delivers the Gatekeeper example to Clusters, each running
// real Gatekeeper audit-only (internal/test/gatekeeper), and checks the
// root policy's status: NonCompliant on each cluster while a team
// namespace lacks its owner label, Compliant once it has one.
//
// It runs the hub's controllers and one agent per cluster in this process.
func GatekeeperSpec(inputGetter func() GatekeeperSpecInput) {
	var (
		input GatekeeperSpecInput
		ns    string
	)
	BeforeEach(func(ctx SpecContext) {
		input = inputGetter()
		ns = CreateNamespace(ctx, input.Env.Hub.Client, "gatekeeper")
		startHub(input.Env.Hub.Config)
		for _, name := range input.Clusters {
			startAgent(input.Env.Cluster(name))
			startGatekeeper(ctx, input.Env.Cluster(name))
		}
	})

	It("reports each cluster's Gatekeeper audit as the constraint's compliance", func(ctx SpecContext) {
		teams := createTeamNamespaces(ctx, input, ns+"-team")
		for _, obj := range gatekeeperExample(input.Example, ns) {
			Expect(input.Env.Hub.Client.Create(ctx, obj)).To(Succeed())
		}
		Expect(input.Env.SetPlacementDecisions(ctx, ns, "require-owner-label", input.Clusters...)).To(Succeed())
		root := client.ObjectKey{Namespace: ns, Name: "require-owner-label"}
		rootStatus := func(g Gomega) map[string]policyv1.ComplianceState {
			p := &policyv1.Policy{}
			g.Expect(input.Env.Hub.Client.Get(ctx, root, p)).To(Succeed())
			return perCluster(p)
		}
		// Note: until Gatekeeper has made the ConstraintTemplate's CRD, the
		// constraint reads NonCompliant ("check if the required
		// ConstraintTemplate has been deployed"), as in OCM: wait for the
		// audit's answer itself.
		for _, name := range input.Clusters {
			Eventually(func(g Gomega) []string {
				replica := &policyv1.Policy{}
				g.Expect(input.Env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: ns + ".require-owner-label"}, replica)).To(Succeed())
				return []string{newest(replica, "k8srequiredlabels"), newest(replica, "team-namespaces-have-owner")}
			}).WithContext(ctx).WithTimeout(4*time.Minute).WithPolling(200*time.Millisecond).Should(Equal([]string{
				"Compliant; ConstraintTemplate k8srequiredlabels was created successfully",
				fmt.Sprintf(`NonCompliant; warn - you must provide labels: {"owner"} (on Namespace %s)`, teams[name].Name),
			}), name)
		}
		Eventually(rootStatus).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).
			Should(Equal(allOf(input.Clusters, policyv1.NonCompliant)))

		for _, name := range input.Clusters {
			teams[name].Labels["owner"] = "team-a"
			Expect(input.Env.Cluster(name).Client.Update(ctx, teams[name])).To(Succeed())
		}
		Eventually(rootStatus).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).
			Should(Equal(allOf(input.Clusters, policyv1.Compliant)))
	})
}

// startGatekeeper runs real Gatekeeper audit-only against mc until the
// spec ends.
func startGatekeeper(ctx context.Context, mc *testenv.ManagedCluster) {
	dir, err := os.MkdirTemp("", "gatekeeper-"+mc.Name+"-")
	Expect(err).NotTo(HaveOccurred())
	gk, err := gkenv.Run(ctx, mc.ControlPlane, dir, gkenv.Options{AuditInterval: 2 * time.Second})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		Expect(gk.Stop()).To(Succeed())
		Expect(os.RemoveAll(dir)).To(Succeed())
	})
}

// createTeamNamespaces creates, on each cluster of input, the namespace
// name that the example's constraint selects (without the owner label it
// requires), deleted when the spec ends; it returns them by cluster.
func createTeamNamespaces(ctx context.Context, input GatekeeperSpecInput, name string) map[string]*corev1.Namespace {
	teams := map[string]*corev1.Namespace{}
	for _, cluster := range input.Clusters {
		c := input.Env.Cluster(cluster).Client
		team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"example.canopy.io/team": "true"}}}
		Expect(c.Create(ctx, team)).To(Succeed())
		teams[cluster] = team
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(c.Delete(ctx, team))).To(Succeed())
		})
	}
	return teams
}

// newest is the newest history message of template in p, "" when none.
func newest(p *policyv1.Policy, template string) string {
	if h := historyOf(p, template); len(h) > 0 {
		return h[0].Message
	}
	return ""
}

// gatekeeperExample reads the example's objects into namespace ns.
func gatekeeperExample(path, ns string) []client.Object {
	GinkgoHelper()
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	objs := asObjects(decodeInto(string(raw), ns))
	Expect(objs).To(HaveLen(3))
	return objs
}
