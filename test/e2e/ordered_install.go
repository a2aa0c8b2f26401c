package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/test/inproc"
)

// OrderedInstallSpecInput is the input of OrderedInstallSpec.
type OrderedInstallSpecInput struct {
	// Env is the hub and the managed clusters.
	Env *testenv.Env
	// Clusters are the managed clusters the policy is placed on.
	Clusters []string
	// Example is the path of examples/ordered-install/policy.yaml.
	Example string
}

// orderedTemplates are the example's templates, in dependency order.
var orderedTemplates = []string{"widget-crd", "widget-instance", "widget-check"}

// OrderedInstallSpec is the user story "order operator installs across
// clusters": the example policy, placed on Clusters, installs a CRD, then a
// resource of it, then checks it, on each cluster in that order; the root
// policy's status shows each cluster Pending first, then Compliant.
//
// It runs the hub's propagator and root status controllers and one agent
// per cluster (with the ConfigurationPolicy evaluator) in this process.
func OrderedInstallSpec(inputGetter func() OrderedInstallSpecInput) {
	var (
		input  OrderedInstallSpecInput
		ns     string
		suffix string
	)
	BeforeEach(func(ctx SpecContext) {
		input = inputGetter()
		ns = CreateNamespace(ctx, input.Env.Hub.Client, "ordered-install")
		suffix = rand.String(5)
		startHub(input.Env.Hub.Config)
		for _, name := range input.Clusters {
			startAgent(input.Env.Cluster(name))
		}
	})

	It("installs in dependency order and reports Pending, then Compliant, per cluster", func(ctx SpecContext) {
		for _, obj := range exampleObjects(input.Example, ns, suffix) {
			Expect(input.Env.Hub.Client.Create(ctx, obj)).To(Succeed())
		}
		Expect(input.Env.SetPlacementDecisions(ctx, ns, "ordered-install", input.Clusters...)).To(Succeed())
		root := client.ObjectKey{Namespace: ns, Name: "ordered-install"}

		seen := map[string][]policyv1.ComplianceState{} // each cluster's root status, as observed
		Eventually(func(g Gomega) map[string]policyv1.ComplianceState {
			p := &policyv1.Policy{}
			g.Expect(input.Env.Hub.Client.Get(ctx, root, p)).To(Succeed())
			states := perCluster(p)
			for cluster, state := range states {
				if n := len(seen[cluster]); n == 0 || seen[cluster][n-1] != state {
					seen[cluster] = append(seen[cluster], state)
				}
			}
			return states
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(50 * time.Millisecond).
			Should(Equal(allOf(input.Clusters, policyv1.Compliant)))
		GinkgoWriter.Printf("Root status per cluster, as observed: %v\n", seen)
		for cluster, states := range seen { // Compliant is where it ends, never a step on the way
			Expect(states[:len(states)-1]).NotTo(ContainElement(policyv1.Compliant), cluster)
		}

		for _, cluster := range input.Clusters {
			replica := &policyv1.Policy{}
			Expect(input.Env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: ns + ".ordered-install"}, replica)).To(Succeed())
			expectOrdered(replica, suffix, cluster)
		}
	})
}

// expectOrdered checks one cluster's replica: each dependant template was
// Pending before it was Compliant, and each template turned Compliant after
// the one it depends on.
func expectOrdered(replica *policyv1.Policy, suffix, cluster string) {
	GinkgoHelper()
	var firstCompliant []string // event names sort by time
	for i, base := range orderedTemplates {
		history := historyOf(replica, base+"-"+suffix)
		Expect(history).NotTo(BeEmpty(), "%s: %s has no history", cluster, base)
		Expect(history[0].Message).To(HavePrefix("Compliant;"), "%s: %s", cluster, base)
		oldestCompliant := ""
		for _, h := range history {
			if strings.HasPrefix(h.Message, "Compliant;") {
				oldestCompliant = h.EventName
			}
		}
		if i > 0 {
			oldest := history[len(history)-1]
			Expect(oldest.Message).To(HavePrefix("Pending; Dependencies were not satisfied"), "%s: %s", cluster, base)
		}
		firstCompliant = append(firstCompliant, oldestCompliant)
	}
	Expect(slices.IsSorted(firstCompliant)).To(BeTrue(), "%s: templates turned Compliant out of order: %v", cluster, firstCompliant)
	GinkgoWriter.Printf("%s: templates first Compliant in order %v\n", cluster, firstCompliant)
}

func historyOf(p *policyv1.Policy, template string) []policyv1.ComplianceHistory {
	for _, d := range p.Status.Details {
		if d.TemplateMeta.Name == template {
			return d.History
		}
	}
	return nil
}

func perCluster(p *policyv1.Policy) map[string]policyv1.ComplianceState {
	out := map[string]policyv1.ComplianceState{}
	for _, s := range p.Status.Status {
		out[s.ClusterName] = s.ComplianceState
	}
	return out
}

func allOf(clusters []string, state policyv1.ComplianceState) map[string]policyv1.ComplianceState {
	out := map[string]policyv1.ComplianceState{}
	for _, c := range clusters {
		out[c] = state
	}
	return out
}

// exampleObjects reads the example's objects into namespace ns, with the
// template names made unique by suffix (template names are unique per
// cluster, and several specs may share a cluster).
func exampleObjects(path, ns, suffix string) []client.Object {
	GinkgoHelper()
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	text := string(raw)
	for _, name := range orderedTemplates {
		text = strings.ReplaceAll(text, "name: "+name+"\n", "name: "+name+"-"+suffix+"\n")
	}
	objs := asObjects(decodeInto(text, ns))
	Expect(objs).To(HaveLen(3))
	return objs
}

// ExamplePath returns the path of an example file in this repository.
func ExamplePath(elem ...string) string {
	root, err := controlplane.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	return filepath.Join(append([]string{root, "examples"}, elem...)...)
}

// startHub runs the hub's controllers until the spec ends.
func startHub(cfg *rest.Config) {
	GinkgoHelper()
	stop, err := inproc.StartHubControllers(cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(stop()).To(Succeed()) })
}

// startAgent runs the agent of mc, with its evaluators (ConfigurationPolicy
// and the hierarchical syncer), until the spec ends.
func startAgent(mc *testenv.ManagedCluster) {
	GinkgoHelper()
	agent, err := inproc.RunAgent(context.Background(), mc.Config, inproc.AgentOptions(mc.Name, mc.HubConfig))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(agent.Stop()).To(Succeed()) })
}
