package faults

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/test/olmsim"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

const (
	rolloutNS   = "faults-rollout"
	rolloutRoot = "operators"
	// rolloutDeadline is the rollout's progressDeadline: far longer than
	// the whole test may take, so that a rollout that ends in the test's
	// time did not wait for it.
	rolloutDeadline = "30m"
)

// rolloutGroups are the decision groups of the rollout, in order: the
// canary group is mandatory.
var rolloutGroups = []testenv.DecisionGroup{
	{Name: "canary", Clusters: []string{"canary"}},
	{Name: "early", Clusters: []string{"early"}},
	{Name: "late", Clusters: []string{"late-1", "late-2"}},
}

// rolloutClockOffsets are the agents' clock offsets (--test-clock-offset):
// one agent ahead of the hub, one behind.
var rolloutClockOffsets = map[string]time.Duration{"canary": 5 * time.Minute, "early": -5 * time.Minute}

// rolloutFixture is the state TestRolloutUnderFaults sets up and checks.
type rolloutFixture struct {
	t      *testing.T
	env    *testenv.Env
	hub    *process
	health string
	r      *rand.Rand
	audit  *auditTail
	// generations are, per phase of the test (the root's creation, then
	// each change of the root), the generation of each cluster's replica
	// once the phase's rollout succeeded.
	generations []map[string]int64
	// replicas records every version of the replicas; phases are where
	// each rollout began (the root's revision) and ended.
	replicas *replicaWatch
	phases   []rolloutPhase
	kills    int
	// stops holds every distinct status.rollout seen stopped (Stopped, or
	// with a cluster Failed) while the test polled the root: an operator
	// NonCompliant while it installs may be a passing Failed.
	mu    sync.Mutex
	stops []string
}

// TestRolloutUnderFaults rolls an OperatorPolicy pair (op-b's template
// depends on op-a's) out ProgressivePerGroup over four clusters in three
// decision groups (the canary group mandatory, progressDeadline 30m), with
// OLM simulated on each cluster, one agent's clock 5 minutes ahead and one
// 5 minutes behind, and the hub SIGKILLed and restarted at random points
// of each rollout (12 kills; 40 with CANOPY_SOAK=1). After the first
// rollout, the root is changed twice in ways that reach no template: a
// label, then ignorePending. Each of the three rollouts must end
// RolloutSucceeded well before the progressDeadline, with no cluster
// failed; and the hub API server's audit log must show that no replica of
// a later group was written before every cluster of the earlier groups
// had reported on its replica after the write that gave it its current
// generation.
func TestRolloutUnderFaults(t *testing.T) {
	var clusters []string
	for _, g := range rolloutGroups {
		clusters = append(clusters, g.Clusters...)
	}
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: clusters, AuditLog: true})
	f := &rolloutFixture{t: t, env: env, r: newRand(t), audit: &auditTail{path: env.Hub.AuditLogPath}}
	f.hub, f.health, _ = newHub(t, env)
	f.startClusters()
	f.setUp()
	ww, err := client.NewWithWatch(env.Hub.Config, client.Options{Scheme: env.Hub.Client.Scheme()})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	f.replicas = watchReplicas(t, ww)

	kills := scale(12, 40)
	changes := []struct {
		name   string
		change func(*policyv1.Policy)
	}{
		{"a label", func(p *policyv1.Policy) { p.Labels["wave"] = "2" }},
		{"ignorePending", func(p *policyv1.Policy) { p.Spec.PolicyTemplates[1].IgnorePending = true }},
	}
	f.rollOut("the root's creation", kills/2, f.createRoot)
	for i, c := range changes {
		n := kills / 4
		if i == len(changes)-1 {
			n = kills - kills/2 - kills/4
		}
		f.rollOut("a change of "+c.name, n, func() *policyv1.Policy { return f.changeRoot(c.change) })
	}
	g := f.soft()
	g.Expect(f.kills).To(BeNumerically(">=", 10), "SIGKILLs of the hub")
	f.mu.Lock()
	t.Logf("rollouts seen stopped, or with a cluster failed, on the way: %d %q", len(f.stops), f.stops)
	f.mu.Unlock()
	f.expectNoEarlyWrite()
	f.expectNoStaleSuccess()
	f.expectReplicasCurrent()
}

// soft returns a Gomega whose failures mark the test failed and let it go
// on, so that one run shows every check that fails.
func (f *rolloutFixture) soft() Gomega {
	return NewGomega(func(message string, _ ...int) { f.t.Helper(); f.t.Error(message) })
}

// startClusters installs OLM's CRDs and runs the OLM simulator on every
// managed cluster, with the catalog op-a and op-b come from, and prepares
// and starts the agents, two with their clock offset.
func (f *rolloutFixture) startClusters() {
	g := NewWithT(f.t)
	ctx := f.t.Context()
	simCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f.t.Cleanup(func() { cancel(); wg.Wait() })
	for _, mc := range f.env.Managed {
		g.Expect(olmsim.Install(ctx, mc.Config, mc.Client)).To(Succeed())
		for _, ns := range []string{mc.Name, "olm", "operators"} {
			g.Expect(client.IgnoreAlreadyExists(mc.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		}
		sim := &olmsim.Simulator{Client: mc.Client}
		for _, pkg := range []string{"op-a", "op-b"} {
			g.Expect(sim.AddPackage(ctx, olmsim.Package{Name: pkg, Catalog: "platform-catalog", CatalogNamespace: "olm",
				DefaultChannel: "stable", Channels: map[string][]string{"stable": {pkg + ".v1.0.0"}},
				SuggestedNamespace: "operators"})).To(Succeed())
		}
		wg.Go(func() { sim.Run(simCtx) })
		agent, health := newAgent(f.t, mc)
		if offset := rolloutClockOffsets[mc.Name]; offset != 0 {
			agent.args = append(agent.args, "--test-clock-offset", offset.String())
		}
		agent.start()
		agent.waitReady(health)
	}
}

// setUp creates the root's namespace, the Placement with its decision
// groups (and their decisions, as OCM's placement controller would write
// them) and the PlacementBinding; the root comes later (createRoot).
func (f *rolloutFixture) setUp() {
	g := NewWithT(f.t)
	ctx := f.t.Context()
	c := f.env.Hub.Client
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rolloutNS}})).To(Succeed())
	placement := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: rolloutNS, Name: "fleet"}}
	for _, group := range rolloutGroups {
		placement.Spec.DecisionStrategy.GroupStrategy.DecisionGroups = append(placement.Spec.DecisionStrategy.GroupStrategy.DecisionGroups,
			clusterv1beta1.DecisionGroup{GroupName: group.Name, ClusterSelector: clusterv1beta1.GroupClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"rollout": group.Name}},
			}})
	}
	g.Expect(c.Create(ctx, placement)).To(Succeed())
	g.Expect(f.env.SetDecisionGroups(ctx, rolloutNS, "fleet", rolloutGroups...)).To(Succeed())
	g.Expect(c.Create(ctx, &policyv1.PlacementBinding{
		ObjectMeta:   metav1.ObjectMeta{Namespace: rolloutNS, Name: "fleet"},
		PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: "fleet"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: policyv1.PolicyKind, Name: rolloutRoot}},
	})).To(Succeed())
}

// createRoot creates the root: op-a and op-b installed by OperatorPolicies,
// op-b's waiting until op-a's is Compliant, rolled out ProgressivePerGroup
// with the canary group mandatory and no failure allowed.
func (f *rolloutFixture) createRoot() *policyv1.Policy {
	opB := operatorPolicy("op-b")
	dep := policyv1.PolicyDependency{Name: "op-a", Compliance: policyv1.Compliant}
	dep.APIVersion, dep.Kind = policyv1beta1.GroupVersion.String(), "OperatorPolicy"
	opB.ExtraDependencies = []policyv1.PolicyDependency{dep}
	root := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: rolloutNS, Name: rolloutRoot, Labels: map[string]string{"wave": "1"}},
		Spec: policyv1.PolicySpec{
			RemediationAction: policyv1.Enforce,
			PolicyTemplates:   []policyv1.PolicyTemplate{operatorPolicy("op-a"), opB},
			RolloutStrategy: &clusterv1alpha1.RolloutStrategy{
				Type: clusterv1alpha1.ProgressivePerGroup,
				ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{
					RolloutConfig: clusterv1alpha1.RolloutConfig{ProgressDeadline: rolloutDeadline, MaxFailures: intstr.FromInt32(0)},
					MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{
						MandatoryDecisionGroups: []clusterv1alpha1.MandatoryDecisionGroup{{GroupName: rolloutGroups[0].Name}},
					},
				},
			},
		},
	}
	NewWithT(f.t).Expect(f.env.Hub.Client.Create(f.t.Context(), root)).To(Succeed())
	return root
}

// operatorPolicy returns a template: an enforced OperatorPolicy that
// installs the operator pkg from the simulated catalog.
func operatorPolicy(pkg string) policyv1.PolicyTemplate {
	return policyv1.PolicyTemplate{ObjectDefinition: raw(map[string]any{
		"apiVersion": policyv1beta1.GroupVersion.String(), "kind": "OperatorPolicy",
		"metadata": map[string]any{"name": pkg},
		"spec": map[string]any{
			"remediationAction": "enforce", "severity": "high", "complianceType": "musthave",
			"upgradeApproval": "Automatic",
			"subscription": map[string]any{
				"name": pkg, "namespace": "operators", "channel": "stable",
				"source": "platform-catalog", "sourceNamespace": "olm",
			},
		},
	})}
}

// changeRoot applies change to the root and returns the root written.
func (f *rolloutFixture) changeRoot(change func(*policyv1.Policy)) *policyv1.Policy {
	root := &policyv1.Policy{}
	NewWithT(f.t).Eventually(func() error {
		if err := f.env.Hub.Client.Get(f.t.Context(), client.ObjectKey{Namespace: rolloutNS, Name: rolloutRoot}, root); err != nil {
			return err
		}
		change(root)
		return f.env.Hub.Client.Update(f.t.Context(), root)
	}).Should(Succeed())
	return root
}

// rollOut makes change while the hub is down, then starts the hub and
// SIGKILLs it kills times at random points (after a random delay, or
// right after one of its next writes of a replica), and then lets it run
// until the rollout has succeeded on every cluster. It records the
// replicas' generations then, and stops the hub.
func (f *rolloutFixture) rollOut(what string, kills int, change func() *policyv1.Policy) {
	f.t.Logf("rollout after %s, with %d SIGKILLs of the hub", what, kills)
	start := time.Now()
	root := change()
	rv, err := strconv.ParseUint(root.ResourceVersion, 10, 64)
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	stopPolling := f.pollRollout()
	defer stopPolling()
	for range kills {
		f.hub.start()
		f.killAtRandomPoint()
	}
	f.hub.start()
	f.hub.waitReady(f.health)
	rollout := f.expectSucceeded()
	if rollout == nil {
		rollout = &policyv1.RolloutStatus{Phase: "not finished"}
	}
	gens := map[string]int64{}
	for _, mc := range f.env.Managed {
		p := &policyv1.Policy{}
		err := f.env.Hub.Client.Get(f.t.Context(), client.ObjectKey{Namespace: mc.Name, Name: rolloutNS + "." + rolloutRoot}, p)
		NewWithT(f.t).Expect(client.IgnoreNotFound(err)).To(Succeed())
		gens[mc.Name] = p.Generation // Note: 0 for a replica not written yet, when the rollout failed
	}
	f.generations = append(f.generations, gens)
	f.phases = append(f.phases, rolloutPhase{start: rv, wave: root.Labels["wave"], generations: gens})
	f.t.Logf("rollout after %s: %s in %v (%s), replica generations %v", what, rollout.Phase,
		time.Since(start).Round(time.Second), rollout.Message, gens)
	f.hub.stop()
}

// killAtRandomPoint SIGKILLs the running hub after a random delay, or as
// soon as it has written a replica (with a random delay after that, up to
// 200ms, so that some kills fall between the replica writes and the
// root's status), and logs where it struck.
func (f *rolloutFixture) killAtRandomPoint() {
	f.kills++
	f.audit.skip(f.t)
	if f.r.IntN(2) == 0 {
		delay := randomDelay(f.r, 300*time.Millisecond, 4*time.Second)
		time.Sleep(delay) // Note: a fault injection point, not a wait for a result
		f.hub.kill()
		f.t.Logf("kill %d: SIGKILL %v after start", f.kills, delay.Round(time.Millisecond))
		return
	}
	wait := randomDelay(f.r, 2*time.Second, 6*time.Second)
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if n := f.audit.replicaWrites(f.t); n > 0 {
			delay := randomDelay(f.r, 0, 200*time.Millisecond)
			time.Sleep(delay) // Note: a fault injection point
			f.hub.kill()
			f.t.Logf("kill %d: SIGKILL %v after a write of a replica", f.kills, delay.Round(time.Millisecond))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.hub.kill()
	f.t.Logf("kill %d: SIGKILL after %v without a write of a replica", f.kills, wait.Round(time.Millisecond))
}

// pollRollout watches the root's status.rollout until the returned func is
// called, recording every one that is stopped or has a cluster failed.
// Note: these are logged, not failed: the rollout must end Succeeded
// (expectSucceeded), and a NonCompliant report on the current spec (an
// operator still installing) is OCM's Failed, which may pass.
func (f *rolloutFixture) pollRollout() (stop func()) {
	ctx, cancel := context.WithCancel(f.t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			root := &policyv1.Policy{}
			if f.env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: rolloutNS, Name: rolloutRoot}, root) == nil {
				if msg := stoppedOrFailed(root.Status.Rollout); msg != "" {
					f.mu.Lock()
					if !slices.Contains(f.stops, msg) {
						f.stops = append(f.stops, msg)
					}
					f.mu.Unlock()
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	return func() { cancel(); wg.Wait() }
}

// stoppedOrFailed describes a rollout that stopped or has a cluster
// failed; "" otherwise.
func stoppedOrFailed(r *policyv1.RolloutStatus) string {
	if r == nil {
		return ""
	}
	if r.Phase == policyv1.RolloutStopped || r.Reason != "" {
		return string(r.Phase) + " " + r.Reason + ": " + r.Message
	}
	for _, g := range r.Groups {
		for _, c := range g.Clusters {
			if c.State == policyv1.RolloutClusterFailed {
				return "cluster " + c.Name + " Failed: " + r.Message
			}
		}
	}
	return ""
}

// expectSucceeded waits until the root's rollout has succeeded with every
// cluster Succeeded, and returns it. The wait is far shorter than the
// progressDeadline: a rollout that needs the deadline fails here. The
// failure does not end the test (it returns the rollout as it stands, or
// nil), so that the next phases and the audit log are checked too.
func (f *rolloutFixture) expectSucceeded() *policyv1.RolloutStatus {
	var rollout *policyv1.RolloutStatus
	f.soft().Eventually(func(g Gomega) {
		root := &policyv1.Policy{}
		g.Expect(f.env.Hub.Client.Get(f.t.Context(), client.ObjectKey{Namespace: rolloutNS, Name: rolloutRoot}, root)).To(Succeed())
		rollout = root.Status.Rollout
		g.Expect(rollout).NotTo(BeNil(), "status.rollout")
		g.Expect(rollout.Phase).To(Equal(policyv1.RolloutSucceeded), "%s %s", rollout.Reason, rollout.Message)
		g.Expect(rollout.Reason).To(BeEmpty())
		for _, group := range rollout.Groups {
			for _, c := range group.Clusters {
				g.Expect(c.State).To(Equal(policyv1.RolloutClusterSucceeded), "cluster %s of group %s", c.Name, group.GroupName)
			}
		}
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(),
		"the rollout succeeding, long before its progressDeadline (%s)", rolloutDeadline)
	return rollout
}

// expectReplicasCurrent checks that every replica has the root's spec and
// labels, and is Compliant with op-a and op-b installed.
func (f *rolloutFixture) expectReplicasCurrent() {
	g := f.soft()
	ctx := f.t.Context()
	root := &policyv1.Policy{}
	g.Expect(f.env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: rolloutNS, Name: rolloutRoot}, root)).To(Succeed())
	for _, mc := range f.env.Managed {
		p := &policyv1.Policy{}
		g.Expect(f.env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: mc.Name, Name: rolloutNS + "." + rolloutRoot}, p)).To(Succeed())
		g.Expect(p.Spec.PolicyTemplates).To(Equal(root.Spec.PolicyTemplates), "templates of the replica on %s", mc.Name)
		g.Expect(p.Labels).To(HaveKeyWithValue("wave", root.Labels["wave"]), "labels of the replica on %s", mc.Name)
		g.Expect(p.Status.ComplianceState).To(Equal(policyv1.Compliant), "replica on %s", mc.Name)
		for _, csv := range []string{"op-a.v1.0.0", "op-b.v1.0.0"} {
			u := olmsimObject(olmsim.CSVGVK)
			err := mc.Client.Get(ctx, client.ObjectKey{Namespace: "operators", Name: csv}, u)
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			g.Expect(apierrors.IsNotFound(err)).To(BeFalse(), "CSV %s on %s", csv, mc.Name)
		}
	}
}
