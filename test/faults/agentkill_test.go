package faults

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

const (
	killCluster = "cluster1"
	gateNS      = "faults-gate"
	chainNS     = "faults-chain"
	bystanderNS = "faults-bystander"
	chainSteps  = 4
)

// killFixture is the state TestAgentKilled sets up and checks.
type killFixture struct {
	t       *testing.T
	env     *testenv.Env
	mc      *testenv.ManagedCluster
	tree    *tree
	agent   *process
	health  string
	history *history
	r       *rand.Rand
	gate    bool // whether the gate is open
	// intruders are ConfigMaps created by hand in the tree's namespaces,
	// which the HierarchyPolicy must delete (managedKinds).
	intruders []client.ObjectKey
}

// TestAgentKilled SIGKILLs the agent 20 times (more with CANOPY_SOAK=1) at
// random points while it converges a large HierarchyPolicy tree and syncs a
// chain of templates, each depending on the one before and all on a gate
// policy that the test opens and closes meanwhile. Then the cluster
// converges to the declared state, the API server's audit log shows that
// the agent deleted nothing outside the guarantee tables, and the recorded
// history shows that no template appeared while a dependency was unmet.
func TestAgentKilled(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{killCluster}, AuditLog: true})
	f := &killFixture{t: t, env: env, mc: env.Cluster(killCluster), r: newRand(t), gate: true,
		tree: newTree(scale(3, 4), scale(3, 4))}
	f.agent, f.health = newAgent(t, f.mc)
	f.setUp()
	kills := scale(20, 100)
	for i := range kills {
		f.killOnce(i)
	}
	f.setGate(true)
	f.agent.start()
	f.agent.waitReady(f.health)
	f.expectConverged()
	f.agent.stop()
	f.expectDeletionsGuaranteed()
	f.expectNoTemplateEarly()
}

// setUp creates the namespaces, the bystanders that must survive, the gate,
// and the replicas on the hub: the tree, the gate policy and the chain.
func (f *killFixture) setUp() {
	g := NewWithT(f.t)
	ctx := f.t.Context()
	c := f.mc.Client
	ww, err := client.NewWithWatch(f.mc.Config, client.Options{Scheme: c.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	// The first namespace of the tree exists before the policy: it holds a bystander.
	for _, ns := range []string{killCluster, gateNS, chainNS, bystanderNS, f.tree.namespaces()[0]} {
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	f.history = recordHistory(f.t, ww, killCluster)
	g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: gateNS, Name: "gate"},
		Data: map[string]string{"open": "yes"}})).To(Succeed())
	for _, obj := range f.bystanders() {
		g.Expect(c.Create(ctx, obj)).To(Succeed())
	}
	chain := replica(killCluster, "chain")
	chain.Spec.Dependencies = []policyv1.PolicyDependency{dependency(policyv1.PolicyKind, "gate")}
	for i := 1; i <= chainSteps; i++ {
		var deps []policyv1.PolicyDependency
		if i > 1 {
			deps = append(deps, dependency("ConfigurationPolicy", step(i-1)))
		}
		chain.Spec.PolicyTemplates = append(chain.Spec.PolicyTemplates, configurationPolicy(step(i), "enforce",
			configMap(chainNS, step(i), map[string]any{"step": strconv.Itoa(i)}), deps...))
	}
	for _, p := range []*policyv1.Policy{
		replica(killCluster, "tree", f.tree.template("tree")),
		replica(killCluster, "gate", configurationPolicy("gate-check", "inform", configMap(gateNS, "gate", map[string]any{"open": "yes"}))),
		chain,
	} {
		g.Expect(f.env.Hub.Client.Create(ctx, p)).To(Succeed())
	}
}

func step(i int) string { return fmt.Sprintf("step-%d", i) }

// bystanders are objects the agent must never delete: a ConfigMap outside
// the tree, a kind the tree does not manage inside it, and a cluster-scoped
// object the tree never declared.
func (f *killFixture) bystanders() []client.Object {
	return []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: bystanderNS, Name: "bystander"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.tree.namespaces()[0], Name: "bystander"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "faults-bystander"}},
	}
}

// killOnce starts the agent, changes the declared or observed state at a
// random point, and SIGKILLs the agent after a random delay.
func (f *killFixture) killOnce(i int) {
	delay := randomDelay(f.r, 200*time.Millisecond, 4*time.Second)
	whileDown := f.r.IntN(2) == 0
	if whileDown {
		f.disturb(i)
	}
	f.agent.start()
	time.Sleep(delay / 2) // Note: a fault injection point, not a wait for a result
	if !whileDown {
		f.disturb(i)
	}
	time.Sleep(delay - delay/2)
	f.agent.kill()
	f.t.Logf("kill %d: SIGKILL %v after start (change made while %s)", i+1, delay.Round(time.Millisecond),
		map[bool]string{true: "down", false: "running"}[whileDown])
}

// disturb adds a hand-made ConfigMap to a namespace of the tree (when it
// exists yet) or opens or closes the gate.
func (f *killFixture) disturb(i int) {
	if f.r.IntN(3) == 0 {
		f.setGate(!f.gate)
		return
	}
	namespaces := f.tree.namespaces()
	key := client.ObjectKey{Namespace: namespaces[f.r.IntN(len(namespaces))], Name: fmt.Sprintf("intruder-%d", i)}
	err := f.mc.Client.Create(f.t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	if apierrors.IsNotFound(err) {
		return // the namespace is not there yet
	}
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	f.intruders = append(f.intruders, key)
}

// setGate opens or closes the gate the chain depends on.
func (f *killFixture) setGate(open bool) {
	g := NewWithT(f.t)
	g.Eventually(func() error {
		cm := &corev1.ConfigMap{}
		if err := f.mc.Client.Get(f.t.Context(), client.ObjectKey{Namespace: gateNS, Name: "gate"}, cm); err != nil {
			return err
		}
		cm.Data["open"] = map[bool]string{true: "yes", false: "no"}[open]
		return f.mc.Client.Update(f.t.Context(), cm)
	}).Should(Succeed())
	f.gate = open
}
