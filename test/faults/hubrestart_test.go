package faults

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
)

// restartFixture is the state TestHubRestarted sets up and checks.
type restartFixture struct {
	t               *testing.T
	env             *testenv.Env
	hub             *process
	health, metrics string
	r               *rand.Rand
	roots           []string // the root policies that exist
	selected        []string // the clusters the placement selects
	enforced        map[string]bool
}

const restartNS = "faults"

var restartClusters = []string{"cluster1", "cluster2", "cluster3"}

// TestHubRestarted SIGKILLs the hub controller at random points while it
// propagates 30 policies to 3 clusters (100 with CANOPY_SOAK=1), changing
// the fleet while it is down: root policies deleted, a cluster unselected
// then selected again, policies edited. Then the replicas are exactly the
// declared ones (no orphan, none missing, none stale), every root status
// lists its clusters, and once steady a restart of the hub makes zero writes
// (counted in the hub API server's audit log).
func TestHubRestarted(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: restartClusters, AuditLog: true})
	f := &restartFixture{t: t, env: env, r: newRand(t), selected: restartClusters, enforced: map[string]bool{}}
	f.hub, f.health, f.metrics = newHub(t, env)
	f.setUp(scale(30, 100))
	disturbances := []func(){
		func() { f.deleteRoots(3) },
		func() { f.selectClusters(restartClusters[:2]...) },
		func() { f.selectClusters(restartClusters...); f.enforce(5) },
	}
	for i, disturb := range disturbances {
		f.hub.start()
		reached := f.killAtRandomProgress()
		f.t.Logf("restart %d: SIGKILL with %d of %d replicas propagated", i+1, reached, len(f.declared()))
		disturb()
	}
	f.hub.start()
	f.hub.waitReady(f.health)
	f.expectConverged()
	f.expectZeroWritesOnRestart()
}

// setUp creates n root policies bound to a placement selecting every cluster.
func (f *restartFixture) setUp(n int) {
	g := NewWithT(f.t)
	ctx := f.t.Context()
	g.Expect(f.env.Hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: restartNS}})).To(Succeed())
	f.selectClusters(restartClusters...)
	binding := &policyv1.PlacementBinding{
		ObjectMeta:   metav1.ObjectMeta{Namespace: restartNS, Name: "all"},
		PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: "all"},
	}
	for i := range n {
		name := fmt.Sprintf("p-%03d", i)
		f.roots = append(f.roots, name)
		binding.Subjects = append(binding.Subjects, policyv1.Subject{APIGroup: policyv1.GroupName, Kind: policyv1.PolicyKind, Name: name})
		g.Expect(f.env.Hub.Client.Create(ctx, &policyv1.Policy{
			ObjectMeta: metav1.ObjectMeta{Namespace: restartNS, Name: name},
			Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{
				configurationPolicy(name, "inform", configMap("default", name, map[string]any{"n": name})),
			}},
		})).To(Succeed())
	}
	g.Expect(f.env.Hub.Client.Create(ctx, binding)).To(Succeed())
}

// killAtRandomProgress SIGKILLs the hub once it has written a random share
// of the replicas still missing, or after a random delay when none is
// missing, and returns how many of the declared replicas there were.
func (f *restartFixture) killAtRandomProgress() int {
	g := NewWithT(f.t)
	declared := func() int { return len(intersect(f.replicas(g), f.declared())) }
	start := declared()
	if start == len(f.declared()) {
		time.Sleep(randomDelay(f.r, 200*time.Millisecond, 3*time.Second)) // Note: a fault injection point
		f.hub.kill()
		return declared()
	}
	target := start + 1 + f.r.IntN(len(f.declared())-start)
	var n int
	g.Eventually(func() int {
		n = declared()
		return n
	}).WithPolling(20*time.Millisecond).Should(BeNumerically(">=", target), "replicas before the kill")
	f.hub.kill()
	return n
}

// declared returns the replicas there should be, as cluster/name.
func (f *restartFixture) declared() []string {
	var want []string
	for _, c := range f.selected {
		for _, name := range f.roots {
			want = append(want, c+"/"+restartNS+"."+name)
		}
	}
	slices.Sort(want)
	return want
}

func intersect(a, b []string) []string {
	var out []string
	for _, s := range a {
		if slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// replicas returns the replicas on the hub, as cluster/name.
func (f *restartFixture) replicas(g Gomega) []string {
	list := &policyv1.PolicyList{}
	g.Expect(f.env.Hub.Client.List(f.t.Context(), list, client.HasLabels{policyv1.RootPolicyLabel})).To(Succeed())
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

// deleteRoots deletes the first n root policies.
func (f *restartFixture) deleteRoots(n int) {
	for _, name := range f.roots[:n] {
		p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: restartNS, Name: name}}
		NewWithT(f.t).Expect(f.env.Hub.Client.Delete(f.t.Context(), p)).To(Succeed())
	}
	f.roots = f.roots[n:]
}

// selectClusters makes the placement select clusters.
func (f *restartFixture) selectClusters(clusters ...string) {
	NewWithT(f.t).Expect(f.env.SetPlacementDecisions(f.t.Context(), restartNS, "all", clusters...)).To(Succeed())
	f.selected = clusters
}

// enforce sets remediationAction enforce on n random root policies.
func (f *restartFixture) enforce(n int) {
	g := NewWithT(f.t)
	for _, i := range f.r.Perm(len(f.roots))[:n] {
		p := &policyv1.Policy{}
		g.Expect(f.env.Hub.Client.Get(f.t.Context(), client.ObjectKey{Namespace: restartNS, Name: f.roots[i]}, p)).To(Succeed())
		p.Spec.RemediationAction = policyv1.Enforce
		g.Expect(f.env.Hub.Client.Update(f.t.Context(), p)).To(Succeed())
		f.enforced[f.roots[i]] = true
	}
}

// expectConverged waits until the replicas are exactly those of the
// remaining roots on the selected clusters, each with its root's
// remediationAction, and every root's status lists the selected clusters.
func (f *restartFixture) expectConverged() {
	want := f.declared()
	NewWithT(f.t).Eventually(func(g Gomega) {
		g.Expect(f.replicas(g)).To(ConsistOf(want), "replicas (an extra one is an orphan)")
		for _, name := range f.roots {
			root := &policyv1.Policy{}
			g.Expect(f.env.Hub.Client.Get(f.t.Context(), client.ObjectKey{Namespace: restartNS, Name: name}, root)).To(Succeed())
			g.Expect(root.Status.Status).To(HaveLen(len(f.selected)), "status of root %s", name)
			for _, c := range f.selected {
				rep := &policyv1.Policy{}
				g.Expect(f.env.Hub.Client.Get(f.t.Context(), client.ObjectKey{Namespace: c, Name: restartNS + "." + name}, rep)).To(Succeed())
				g.Expect(rep.Spec.RemediationAction).To(Equal(root.Spec.RemediationAction), "replica %s/%s", c, rep.Name)
				g.Expect(rep.Spec.PolicyTemplates).To(Equal(root.Spec.PolicyTemplates), "replica %s/%s", c, rep.Name)
			}
		}
	}).Should(Succeed())
	f.t.Logf("converged: %d replicas of %d roots on %d clusters, %d roots enforced", len(want), len(f.roots), len(f.selected), len(f.enforced))
}

// expectZeroWritesOnRestart waits until the hub is idle and has made no
// write for a while, SIGKILLs and restarts it, waits until it has
// reconciled every root again and is idle, lets it sit for an idle window,
// and expects no write from it in the audit log since the kill.
func (f *restartFixture) expectZeroWritesOnRestart() {
	g := NewWithT(f.t)
	f.waitIdle(0)
	last := -1 // steady: the hub made no write for a whole polling interval
	g.Eventually(func() bool {
		n := len(f.hubWrites(g))
		steady := n == last
		last = n
		return steady
	}).WithPolling(time.Duration(scale(2, 10))*time.Second).Should(BeTrue(), "the hub becoming steady")
	f.hub.kill()
	before := f.rootStatuses(g)
	mark := len(f.hubWrites(g))
	g.Expect(mark).To(BeNumerically(">=", len(f.declared())), "the audit log must hold the hub's writes so far")
	f.hub.start()
	f.hub.waitReady(f.health)
	f.waitIdle(len(f.roots))
	time.Sleep(time.Duration(scale(5, 60)) * time.Second) // Note: the idle window, in which a periodic write would show
	writes := f.hubWrites(g)[mark:]
	f.t.Logf("writes by the hub after the final restart: %d", len(writes))
	if len(writes) > 0 {
		after := f.rootStatuses(g)
		for name, status := range before {
			if after[name] != status {
				f.t.Logf("status of root %s before the restart:\n%s\nafter:\n%s", name, status, after[name])
			}
		}
	}
	g.Expect(writes).To(BeEmpty(), "writes of a steady hub after a restart")
}

// hubWrites returns the hub controller's writes in the audit log.
func (f *restartFixture) hubWrites(g Gomega) []string {
	events, err := f.env.Hub.ReadAuditLog()
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, ev := range events {
		if ev.User.Username == hubUser && ev.ObjectRef != nil {
			out = append(out, fmt.Sprintf("%s %s %s/%s/%s", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Subresource, ev.ObjectRef.Namespace, ev.ObjectRef.Name))
		}
	}
	return out
}

// waitIdle waits until each hub controller has reconciled at least
// minReconciles requests since the process started and has nothing queued
// or in progress.
func (f *restartFixture) waitIdle(minReconciles int) {
	NewWithT(f.t).Eventually(func(g Gomega) {
		m := scrape(g, f.metrics)
		for _, c := range []string{propagator.ControllerName, rootstatus.ControllerName} {
			g.Expect(m.sum("controller_runtime_reconcile_total", `controller="`+c+`"`)).To(BeNumerically(">=", minReconciles), "reconciles of %s", c)
			g.Expect(m.sum("workqueue_depth", `name="`+c+`"`)).To(BeZero(), "queue of %s", c)
			g.Expect(m.sum("workqueue_unfinished_work_seconds", `name="`+c+`"`)).To(BeZero(), "work in progress in %s", c)
			g.Expect(m.sum("controller_runtime_active_workers", `controller="`+c+`"`)).To(BeZero(), "workers of %s", c)
		}
	}).Should(Succeed(), "the hub becoming idle")
}

// rootStatuses returns the status of every root policy, as JSON, by name.
func (f *restartFixture) rootStatuses(g Gomega) map[string]string {
	list := &policyv1.PolicyList{}
	g.Expect(f.env.Hub.Client.List(f.t.Context(), list, client.InNamespace(restartNS))).To(Succeed())
	out := map[string]string{}
	for _, p := range list.Items {
		data, err := json.MarshalIndent(p.Status, "", "  ")
		g.Expect(err).NotTo(HaveOccurred())
		out[p.Name] = string(data)
	}
	return out
}
