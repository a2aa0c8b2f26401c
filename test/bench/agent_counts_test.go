//go:build linux

package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// The agent's writes while it converges depend on how its evaluations and
// the hub's writes interleave: a dependant copied before its dependency
// has a compliance reports Pending first, one copied after does not. The
// cascade below is the part of the agent stage whose requests do not
// depend on the machine: every chain is delivered and settles Pending
// behind one closed gate, then the gate opens and every link, one after
// another, goes from Pending to Compliant. Each link then costs the same
// requests, which TestCounts checks.

// Names of the cascade's gate: a ConfigurationPolicy in the cluster
// namespace without a parent Policy (so it records no compliance event),
// which checks that the namespace gateNamespace exists. Link 0 of every
// chain depends on it.
const (
	gateName      = "gate"
	gateNamespace = "bench-gate"
)

// agentControllers are the agent's controllers that take part in a
// chain's delivery, reporting and cascade.
var agentControllers = []string{"specsync", "templatesync", "configpolicy", "statussync", "statussync-hub"}

// gate is the cascade's gate.
func gate() client.Object {
	obj := &unstructured.Unstructured{Object: configurationPolicy(gateName)}
	obj.SetNamespace(agentCluster)
	unstructured.SetNestedSlice(obj.Object, []any{map[string]any{ //nolint:errcheck // a map of strings always sets
		"complianceType": "musthave",
		"objectDefinition": map[string]any{
			"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": gateNamespace},
		},
	}}, "spec", "object-templates")
	return obj
}

// gatedReplica is replica(c, k), with link 0 depending on the gate.
func gatedReplica(c, k int) *policyv1.Policy {
	p := replica(c, k)
	if k == 0 {
		p.Spec.Dependencies = append(p.Spec.Dependencies, policyv1.PolicyDependency{
			TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: policyv1.ConfigurationPolicyKind},
			Name:       gateName,
			Compliance: policyv1.Compliant,
		})
	}
	return p
}

// cascadeResult is what the cascade measured, from the gate's opening
// until every link is Compliant on the hub and the agent is idle, without
// the benchmark's own requests and the agent's lease renewals.
type cascadeResult struct {
	links   int     // links in the cascade: every policy of every chain
	seconds float64 // from the gate's opening until every link is Compliant on the hub
	// managed and hub are the agent's writes made on each API server, by
	// resource; managedReads its GET and LIST requests on the managed
	// cluster, by resource.
	managed, hub, managedReads requests
	// managedAll and hubAll are every request, by "VERB resource" (a
	// refused one with its code).
	managedAll, hubAll requests
	// hops are the latencies of a link's steps, and of the whole link, in
	// milliseconds, sorted (hops).
	hops [4][]float64
}

// cascade delivers the chains behind a closed gate, waits until every link
// is Pending on the hub and the agent is idle, opens the gate and counts
// the agent's requests until every link is Compliant on the hub and the
// agent is idle again.
func (s *agentBench) cascade(ctx context.Context, t testing.TB) cascadeResult {
	t.Helper()
	n := s.chains * chainDepth
	if err := s.managed.Create(ctx, namespace(agentCluster)); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := s.managed.Create(ctx, gate()); err != nil {
		t.Fatal(err)
	}
	hubState := s.hubCompliance(ctx, t)
	localState := s.localCompliance(ctx, t)
	evaluated := s.evaluatedAt(ctx, t)
	if err := createAll(ctx, s.hub, n, seedWorkers, func(i int) client.Object {
		return gatedReplica(i/chainDepth, i%chainDepth)
	}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "every link Pending on the hub", 200*time.Millisecond, func(context.Context) (bool, error) {
		return hubState.countIn(policyv1.Pending) == n, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := waitIdle(ctx, s.agent, 5*time.Second, agentControllers...); err != nil {
		t.Fatal(err)
	}
	before := s.allRequests(ctx, t)
	queuesBefore, err := controllerTimes(ctx, s.agent)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.managed.Create(ctx, namespace(gateNamespace)); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "every link Compliant on the hub", 200*time.Millisecond, func(context.Context) (bool, error) {
		return hubState.countIn(policyv1.Compliant) == n, nil
	}); err != nil {
		t.Fatal(err)
	}
	seconds := since(start)
	if err := waitIdle(ctx, s.agent, 5*time.Second, agentControllers...); err != nil {
		t.Fatal(err)
	}
	after := s.allRequests(ctx, t)
	queuesAfter, err := controllerTimes(ctx, s.agent)
	if err != nil {
		t.Fatal(err)
	}
	logQueues(t, queuesBefore, queuesAfter)
	r := cascadeResult{links: n, seconds: seconds, hops: hops(s.chains, localState, evaluated)}
	r.managedAll = after.managed.minus(before.managed).minus(requests{"POST namespaces": 1}) // the gate's opening
	r.hubAll = after.hub.minus(before.hub)
	r.managed, r.managedReads, r.hub = byResource(r.managedAll, isWrite), byResource(r.managedAll, isRead), byResource(r.hubAll, isWrite)
	delete(r.managed, "leases") // the agent's heartbeat, not the workload's
	delete(r.hub, "leases")
	t.Logf("agent cascade of %d links in %.2f s: requests on the managed cluster %v, on the hub %v", n, seconds, r.managedAll, r.hubAll)
	for i, step := range hopNames {
		t.Logf("agent cascade: %s p50 %.1f ms, max %.1f ms", step, percentile(r.hops[i], 50), percentile(r.hops[i], 100))
	}
	return r
}

// hopNames name the steps of a link that hops times.
var hopNames = [4]string{"dependency Compliant → template created", "template created → evaluated",
	"evaluated → Policy Compliant", "link (dependency Compliant → Policy Compliant)"}

// hops are, for each link after the first, the times in milliseconds from
// its dependency's local Policy seen Compliant to its template seen
// created, from there to the template seen evaluated, from there to the
// link's own local Policy seen Compliant, and the whole link: from its
// dependency's local Policy seen Compliant to its own.
func hops(chains int, local *transitions, evaluated *transitions) [4][]float64 {
	var out [4][]float64
	for c := range chains {
		for k := 1; k < chainDepth; k++ {
			dep, _ := chainPolicy(c, k-1)
			self, template := chainPolicy(c, k)
			t0, ok0 := local.at(agentCluster+"/"+dep, string(policyv1.Compliant))
			t1, ok1 := evaluated.at(agentCluster+"/"+template, "created")
			t2, ok2 := evaluated.at(agentCluster+"/"+template, "evaluated")
			t3, ok3 := local.at(agentCluster+"/"+self, string(policyv1.Compliant))
			if ok0 && ok1 && ok2 && ok3 {
				for i, d := range []time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t3.Sub(t0)} {
					out[i] = append(out[i], float64(d.Microseconds())/1000)
				}
			}
		}
	}
	for i := range out {
		slices.Sort(out[i])
	}
	return out
}

// transitions records, per object and state, when a watch first saw the
// object in that state.
type transitions struct {
	by map[string]*seen
}

func (t *transitions) at(key, state string) (time.Time, bool) {
	s, ok := t.by[state]
	if !ok {
		return time.Time{}, false
	}
	return s.at(key)
}

// countIn is how many objects have been seen in state.
func (t *transitions) countIn(state policyv1.ComplianceState) int {
	return t.by[string(state)].count()
}

// watchStates watches resource on the API server of cfg and records when
// each object is first seen in each of the states match tells apart.
func watchStates(ctx context.Context, t testing.TB, cfg *rest.Config, resource string, states map[string]func(any) bool) *transitions {
	t.Helper()
	informer, err := dynamicInformer(cfg, policyv1.GroupVersion.WithResource(resource))
	if err != nil {
		t.Fatal(err)
	}
	tr := &transitions{by: map[string]*seen{}}
	for state, match := range states {
		s := &seen{when: map[string]time.Time{}, match: match}
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    s.observe,
			UpdateFunc: func(_, obj any) { s.observe(obj) },
		}); err != nil {
			t.Fatal(err)
		}
		tr.by[state] = s
	}
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatalf("watching %s: %v", resource, ctx.Err())
	}
	return tr
}

func compliantIs(state policyv1.ComplianceState) func(any) bool {
	return func(obj any) bool { return unstructuredField(obj, "status", "compliant") == string(state) }
}

// hubCompliance watches the hub replicas' compliance.
func (s *agentBench) hubCompliance(ctx context.Context, t testing.TB) *transitions {
	return watchStates(ctx, t, s.env.Hub.Config, "policies", map[string]func(any) bool{
		string(policyv1.Pending): compliantIs(policyv1.Pending), string(policyv1.Compliant): compliantIs(policyv1.Compliant),
	})
}

// localCompliance watches the local Policies' compliance.
func (s *agentBench) localCompliance(ctx context.Context, t testing.TB) *transitions {
	return watchStates(ctx, t, s.env.Cluster(agentCluster).Config, "policies", map[string]func(any) bool{
		string(policyv1.Compliant): compliantIs(policyv1.Compliant),
	})
}

// evaluatedAt watches the templates: when each was created and evaluated.
func (s *agentBench) evaluatedAt(ctx context.Context, t testing.TB) *transitions {
	return watchStates(ctx, t, s.env.Cluster(agentCluster).Config, "configurationpolicies", map[string]func(any) bool{
		"created": always, "evaluated": evaluatedTemplate,
	})
}

// requestsOf are the requests of both API servers, by "VERB resource".
type requestsOf struct{ managed, hub requests }

func (s *agentBench) allRequests(ctx context.Context, t testing.TB) requestsOf {
	t.Helper()
	var out requestsOf
	var err error
	if out.managed, err = countByVerb(ctx, s.env.Cluster(agentCluster).Config); err != nil {
		t.Fatal(err)
	}
	if out.hub, err = countByVerb(ctx, s.env.Hub.Config); err != nil {
		t.Fatal(err)
	}
	return out
}

// countByVerb reads every request of the API server of cfg so far, keyed
// "VERB resource[/subresource][ (code)]" (WATCH requests left out: one
// lasts as long as its informer).
func countByVerb(ctx context.Context, cfg *rest.Config) (requests, error) {
	out := requests{}
	for _, verb := range []string{"GET", "LIST", "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY"} {
		r, err := countRequests(ctx, cfg, func(v string) bool { return v == verb })
		if err != nil {
			return nil, err
		}
		for k, v := range r {
			out[verb+" "+k] = v
		}
	}
	return out, nil
}

// byResource sums the requests of r ("VERB resource") whose verb counts,
// by resource.
func byResource(r requests, counts func(verb string) bool) requests {
	out := requests{}
	for k, v := range r {
		verb, resource, _ := strings.Cut(k, " ")
		if counts(verb) && !strings.HasSuffix(resource, ")") {
			out[resource] += v
		}
	}
	return out
}

// String lists r sorted by key.
func (w requests) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(w)) {
		parts = append(parts, fmt.Sprintf("%s: %g", k, w[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// queueTimes are, per controller of an agent, the seconds its work items
// waited in its queue and spent in reconciles, and how many there were.
type queueTimes map[string]struct{ waited, items, busy, reconciles float64 }

// controllerTimes reads the queueTimes of p from its metrics.
func controllerTimes(ctx context.Context, p *process) (queueTimes, error) {
	data, err := p.scrape(ctx)
	if err != nil {
		return nil, err
	}
	out := queueTimes{}
	eachSample(data, func(name string, labels map[string]string, v float64) {
		c := labels["controller"]
		if c == "" { // the workqueue metrics name it "name"
			c = labels["name"]
		}
		x := out[c]
		switch name {
		case "workqueue_queue_duration_seconds_sum":
			x.waited += v
		case "workqueue_queue_duration_seconds_count":
			x.items += v
		case "controller_runtime_reconcile_time_seconds_sum":
			x.busy += v
		case "controller_runtime_reconcile_time_seconds_count":
			x.reconciles += v
		default:
			return
		}
		out[c] = x
	})
	return out, nil
}

// logQueues logs, per controller, what its queue did between before and
// after: where a link's time goes.
func logQueues(t testing.TB, before, after queueTimes) {
	t.Helper()
	for _, c := range agentControllers {
		a, b := after[c], before[c]
		t.Logf("agent cascade: %s: %g items waited %.3f s in its queue; %g reconciles took %.3f s",
			c, a.items-b.items, a.waited-b.waited, a.reconciles-b.reconciles, a.busy-b.busy)
	}
}

// BenchmarkAgentCascade delivers the agent stage's chains behind a closed
// gate and measures, once it opens, how long a dependency link takes and
// what it costs in requests on each API server.
func BenchmarkAgentCascade(b *testing.B) {
	ctx := b.Context()
	for b.Loop() {
		s := startAgentBench(ctx, b)
		r := s.cascade(ctx, b)
		link := r.hops[len(r.hops)-1]
		links := float64(r.links)
		results.add(row{
			Stage: "agent: cascade (gate opened → every link Compliant on the hub)",
			Scale: fmt.Sprintf("%d policies in %d chains of depth %d", r.links, s.chains, chainDepth),
			Units: links, Unit: "policies",
			Seconds: r.seconds,
			Extra: []metric{
				{Name: "link p50", Value: percentile(link, 50), Unit: "ms"},
				{Name: "p99", Value: percentile(link, 99), Unit: "ms"},
				{Name: "writes/link on the managed cluster", Value: (r.managed.total() - 1) / links}, // less the gate's evaluation
				{Name: "on the hub", Value: r.hub.total() / links},
				{Name: "refused writes", Value: r.managedAll.refused() + r.hubAll.refused()},
			},
		})
	}
}
