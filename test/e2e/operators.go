package e2e

import (
	"context"
	"os"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/olmsim"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
)

// The fleet of the operators spec: one canary cluster, two production ones.
var (
	canaryCluster      = "canary"
	productionClusters = []string{"prod-1", "prod-2"}
	operatorPolicies   = []string{"install-op-a", "install-op-b"}
)

// OperatorsSpecInput is the input of OperatorsSpec.
type OperatorsSpecInput struct {
	// Example is the path of examples/operators/operators.yaml.
	Example string
}

// OperatorsSpec is the user story "order operator installs across
// clusters", across clusters this time: examples/operators, a PolicySet of
// two OperatorPolicies (op-b waits for op-a) rolled out ProgressivePerGroup,
// on a hub and three managed clusters of its own, with OLM simulated on each
// (OLM cannot run here: internal/test/olmsim moves OLM's objects through
// their phases). The test writes the Placement's decisions as OCM's
// placement controller would: the canary cluster in group canary, the
// others in group production.
func OperatorsSpec(inputGetter func() OperatorsSpecInput) {
	var (
		input OperatorsSpecInput
		env   *testenv.Env
		sims  map[string]*olmsim.Simulator
	)
	BeforeEach(func(ctx SpecContext) {
		input = inputGetter()
		env, sims = startOperatorsFleet(ctx)
	}, NodeTimeout(4*time.Minute))

	It("installs op-a, then op-b, on the canary first and on production only after", func(ctx SpecContext) {
		applyOperators(ctx, env, input.Example, "10m")
		w := watchOperators(ctx, env)
		Eventually(w.allCompliant).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(BeTrue())
		canaryDone := w.compliantAt(canaryCluster, "install-op-b")
		Expect(w.compliantAt(canaryCluster, "install-op-a")).To(BeTemporally("<=", canaryDone),
			"op-b, which depends on op-a, is Compliant after it on the canary")
		for _, cluster := range productionClusters {
			for _, policy := range operatorPolicies {
				Expect(w.replicaAt(cluster, policy)).To(BeTemporally(">=", canaryDone.Truncate(time.Second)),
					"%s reached %s only once the canary had every policy of the set Compliant", policy, cluster)
			}
		}
		set := rolledOut(ctx, env)
		Expect(set.Reason).To(Equal(propagator.ReasonRolloutSucceeded), set.Message)

		By("changing op-a's severity, which leaves every cluster's compliance as it was")
		changeSeverity(ctx, env, "install-op-a", "critical")
		expectRolledOut(ctx, env, "install-op-a", `"severity":"critical"`)
	}, NodeTimeout(8*time.Minute))

	It("stops the rollout when an operator's CSV fails on the canary", func(ctx SpecContext) {
		sims[canaryCluster].Fail("op-b.v1.0.0", "install strategy failed: deployment op-b-controller is not available")
		applyOperators(ctx, env, input.Example, "15s")
		Eventually(func(g Gomega) *policyv1.RolloutStatus {
			p := &policyv1.Policy{}
			g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "policies", Name: "install-op-b"}, p)).To(Succeed())
			return p.Status.Rollout
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(And(
			HaveField("Phase", policyv1.RolloutStopped), HaveField("Reason", propagator.ReasonMaxFailuresReached)))
		set := rolledOut(ctx, env)
		Expect(set.Reason).To(Equal(propagator.ReasonMaxFailuresReached))
		GinkgoWriter.Printf("PolicySet operators, condition RolledOut: %s: %s\n", set.Reason, set.Message)
		for _, cluster := range productionClusters {
			replicas := &policyv1.PolicyList{}
			Expect(env.Hub.Client.List(ctx, replicas, client.InNamespace(cluster))).To(Succeed())
			Expect(replicas.Items).To(BeEmpty(), "production got nothing of the set: the canary failed")
		}
	}, NodeTimeout(5*time.Minute))
}

// startOperatorsFleet starts the spec's hub and managed clusters, with OLM
// simulated on each, the hub controller and an agent per cluster; all stop
// when the spec ends.
func startOperatorsFleet(ctx SpecContext) (*testenv.Env, map[string]*olmsim.Simulator) {
	env, err := testenv.Start(ctx, testenv.Options{ManagedClusters: append([]string{canaryCluster}, productionClusters...)})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	sims := map[string]*olmsim.Simulator{}
	for _, mc := range env.Managed {
		sims[mc.Name] = startOLM(ctx, mc)
	}
	Expect(env.Hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "policies"}})).To(Succeed())
	startHub(env.Hub.Config)
	for _, mc := range env.Managed {
		startAgent(mc)
	}
	return env, sims
}

// startOLM installs OLM's CRDs on mc and runs the OLM simulator there until
// the spec ends, with the example's catalog: op-a and op-b, channel stable.
func startOLM(ctx context.Context, mc *testenv.ManagedCluster) *olmsim.Simulator {
	GinkgoHelper()
	Expect(olmsim.Install(ctx, mc.Config, mc.Client)).To(Succeed())
	Expect(mc.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "olm"}})).To(Succeed())
	sim := &olmsim.Simulator{Client: mc.Client}
	for _, pkg := range []string{"op-a", "op-b"} {
		Expect(sim.AddPackage(ctx, olmsim.Package{Name: pkg, Catalog: "platform-catalog", CatalogNamespace: "olm",
			DefaultChannel: "stable", Channels: map[string][]string{"stable": {pkg + ".v1.0.0"}},
			SuggestedNamespace: "operators"})).To(Succeed())
	}
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { sim.Run(runCtx) })
	DeferCleanup(func() { cancel(); wg.Wait() })
	return sim
}

// applyOperators creates the example's objects with progressDeadline
// deadline, and the Placement's decisions: canary first, then production.
func applyOperators(ctx context.Context, env *testenv.Env, path, deadline string) {
	GinkgoHelper()
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	text := strings.Replace(string(raw), "progressDeadline: 10m", "progressDeadline: "+deadline, 1)
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		Expect(env.Hub.Client.Create(ctx, u)).To(Succeed(), "creating %s %s", u.GetKind(), u.GetName())
	}
	Expect(env.SetDecisionGroups(ctx, "policies", "operators",
		testenv.DecisionGroup{Name: "canary", Clusters: []string{canaryCluster}},
		testenv.DecisionGroup{Name: "production", Clusters: productionClusters})).To(Succeed())
}

// operatorsWatch records, from the hub, when each replica of the example's
// policies first existed and when it was first reported Compliant.
type operatorsWatch struct {
	mu        sync.Mutex
	replica   map[[2]string]time.Time
	compliant map[[2]string]time.Time
}

// watchOperators polls the hub every 100 ms until the spec ends.
func watchOperators(ctx context.Context, env *testenv.Env) *operatorsWatch {
	w := &operatorsWatch{replica: map[[2]string]time.Time{}, compliant: map[[2]string]time.Time{}}
	pollCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for pollCtx.Err() == nil {
			w.observe(pollCtx, env)
			time.Sleep(100 * time.Millisecond)
		}
	})
	DeferCleanup(func() { cancel(); wg.Wait() })
	return w
}

func (w *operatorsWatch) observe(ctx context.Context, env *testenv.Env) {
	list := &policyv1.PolicyList{}
	if env.Hub.Client.List(ctx, list) != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range list.Items {
		root, ok := p.Labels[policyv1.RootPolicyLabel]
		if !ok {
			continue
		}
		key := [2]string{p.Namespace, strings.TrimPrefix(root, "policies.")}
		if _, seen := w.replica[key]; !seen {
			w.replica[key] = p.CreationTimestamp.Time
		}
		// Note: the time of the agent's Compliant report, not of this poll:
		// the rollout reads the replica as soon as the report is there, and
		// a poll a moment later can fall in the next second.
		if _, seen := w.compliant[key]; !seen && p.Status.ComplianceState == policyv1.Compliant {
			if at := newestReport(&p); at != nil {
				w.compliant[key] = at.Time
			}
		}
	}
}

func (w *operatorsWatch) allCompliant() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.compliant) == (1+len(productionClusters))*len(operatorPolicies)
}

func (w *operatorsWatch) compliantAt(cluster, policy string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.compliant[[2]string{cluster, policy}]
}

func (w *operatorsWatch) replicaAt(cluster, policy string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.replica[[2]string{cluster, policy}]
}

// changeSeverity sets the severity of the first template of the hub policy
// name.
func changeSeverity(ctx context.Context, env *testenv.Env, name, severity string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		p := &policyv1.Policy{}
		g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "policies", Name: name}, p)).To(Succeed())
		raw := p.Spec.PolicyTemplates[0].ObjectDefinition.Raw
		p.Spec.PolicyTemplates[0].ObjectDefinition.Raw = []byte(strings.Replace(string(raw), `"severity":"high"`, `"severity":"`+severity+`"`, 1))
		g.Expect(env.Hub.Client.Update(ctx, p)).To(Succeed())
	}).WithContext(ctx).Should(Succeed())
}

// expectRolledOut waits until the rollout of the hub policy name has
// succeeded with every cluster's replica holding want in its first
// template: the agents report on a changed template even when its
// compliance is unchanged, so the rollout goes on well before the
// example's 10 minute progressDeadline.
func expectRolledOut(ctx context.Context, env *testenv.Env, name, want string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		root := &policyv1.Policy{}
		g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "policies", Name: name}, root)).To(Succeed())
		g.Expect(root.Status.Rollout).NotTo(BeNil())
		g.Expect(root.Status.Rollout.Phase).To(Equal(policyv1.RolloutSucceeded), root.Status.Rollout.Message)
		for _, cluster := range append([]string{canaryCluster}, productionClusters...) {
			g.Expect(replicaTemplate(ctx, g, env, cluster, name)).To(ContainSubstring(want))
		}
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// replicaTemplate is the first template of the replica of name on cluster,
// as JSON.
func replicaTemplate(ctx context.Context, g Gomega, env *testenv.Env, cluster, name string) string {
	p := &policyv1.Policy{}
	g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "policies." + name}, p)).To(Succeed())
	return string(p.Spec.PolicyTemplates[0].ObjectDefinition.Raw)
}

// rolledOut returns the PolicySet's RolledOut condition, once it is there.
func rolledOut(ctx context.Context, env *testenv.Env) metav1.Condition {
	GinkgoHelper()
	var cond metav1.Condition
	Eventually(func(g Gomega) {
		set := &unstructured.Unstructured{}
		set.SetAPIVersion("policy.open-cluster-management.io/v1beta1")
		set.SetKind("PolicySet")
		g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "policies", Name: "operators"}, set)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(set.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == propagator.ConditionRolledOut {
				cond = metav1.Condition{Type: propagator.ConditionRolledOut, Reason: m["reason"].(string), Message: m["message"].(string)}
			}
		}
		g.Expect(cond.Type).NotTo(BeEmpty(), "the set has a RolledOut condition")
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	return cond
}

// newestReport is the time of the newest entry of a replica's compliance
// history, over all its templates; nil when it has none. It times the
// agent's report for the test's measurements; the rollout reads no time.
func newestReport(p *policyv1.Policy) *metav1.Time {
	var newest *metav1.Time
	for _, d := range p.Status.Details {
		for i := range d.History {
			if t := &d.History[i].LastTimestamp; !t.IsZero() && (newest == nil || newest.Before(t)) {
				newest = t.DeepCopy()
			}
		}
	}
	return newest
}
