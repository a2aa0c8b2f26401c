package templatesync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/depgraph"
)

// chainPolicy is a Policy with one ConfigurationPolicy template that waits
// for Policy dep ("" for none).
func chainPolicy(name, dep string, generation int64) policyv1.Policy {
	p := policyv1.Policy{}
	p.Namespace, p.Name, p.UID, p.Generation = "cluster1", name, types.UID("uid-"+name), generation
	raw := fmt.Sprintf(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":%q}}`, name+"-config")
	p.Spec.PolicyTemplates = []policyv1.PolicyTemplate{{ObjectDefinition: runtime.RawExtension{Raw: []byte(raw)}}}
	if dep != "" {
		d := policyv1.PolicyDependency{Name: dep, Compliance: policyv1.Compliant}
		d.Kind = "Policy"
		p.Spec.Dependencies = []policyv1.PolicyDependency{d}
	}
	return p
}

// store is a namespace of Policies as the graph cache reads them, counting
// the reads.
type store struct {
	policies    map[string]*policyv1.Policy
	lists, gets int
	err         error
}

func (s *store) source() policySource {
	return policySource{
		list: func() ([]policyv1.Policy, error) {
			s.lists++
			var out []policyv1.Policy
			for _, p := range s.policies {
				out = append(out, *p)
			}
			return out, s.err
		},
		get: func(name string) (*policyv1.Policy, error) {
			s.gets++
			return s.policies[name], s.err
		},
	}
}

func (s *store) all() []policyv1.Policy {
	var out []policyv1.Policy
	for _, p := range s.policies {
		out = append(out, *p)
	}
	return out
}

// edgeSets is g with each node's edges as a sorted list of names, for
// comparisons that ignore the order in which Policies were linked.
func edgeSets(g depgraph.Graph) map[string][]string {
	out := map[string][]string{}
	for n, edges := range g {
		names := []string{}
		for _, e := range edges {
			names = append(names, e.String())
		}
		slices.Sort(names)
		out[n.String()] = names
	}
	return out
}

// randomPolicy is Policy name of cluster1 with up to two templates, of two
// kinds, each depending on up to two of names' Policies or templates.
func randomPolicy(rng *rand.Rand, name string, uid int, generation int64, names []string) *policyv1.Policy {
	p := &policyv1.Policy{}
	p.Namespace, p.Name, p.UID, p.Generation = "cluster1", name, types.UID(fmt.Sprintf("uid-%s-%d", name, uid)), generation
	for i := range rng.IntN(3) {
		kind := []string{"ConfigurationPolicy", "CertificatePolicy"}[rng.IntN(2)]
		raw := fmt.Sprintf(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":%q,"metadata":{"name":"%s-%d"}}`, kind, name, i)
		pt := policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: []byte(raw)}}
		for range rng.IntN(3) {
			d := policyv1.PolicyDependency{Name: names[rng.IntN(len(names))], Compliance: policyv1.Compliant}
			d.Kind = "Policy"
			if rng.IntN(2) == 0 {
				d.Kind, d.APIVersion, d.Name = "ConfigurationPolicy", "policy.open-cluster-management.io/v1", d.Name+"-0"
			}
			pt.ExtraDependencies = append(pt.ExtraDependencies, d)
		}
		p.Spec.PolicyTemplates = append(p.Spec.PolicyTemplates, pt)
	}
	return p
}

// TestGraphCacheAgreesWithGraphFor creates, changes and deletes Policies at
// random, telling the cache through its event handler as the informer
// does, and checks after each change that the graph kept up to date one
// Policy at a time is the graph built from all of them.
func TestGraphCacheAgreesWithGraphFor(t *testing.T) {
	g := NewWithT(t)
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "c", "d", "e", "f"}
	configs := map[schema.GroupKind]bool{{Group: policyv1.GroupName, Kind: "ConfigurationPolicy"}: true}
	both := map[schema.GroupKind]bool{
		{Group: policyv1.GroupName, Kind: "ConfigurationPolicy"}: true, {Group: policyv1.GroupName, Kind: "CertificatePolicy"}: true,
	}
	cache, st := &graphCache{}, &store{policies: map[string]*policyv1.Policy{}}
	events, ctx := cache.invalidations(), context.Background()
	kinds, uids := configs, 0
	for step := range 500 {
		name := names[rng.IntN(len(names))]
		old := st.policies[name]
		switch {
		case rng.IntN(50) == 0:
			kinds = map[bool]map[schema.GroupKind]bool{true: configs, false: both}[len(kinds) == 2]
		case old != nil && rng.IntN(4) == 0:
			delete(st.policies, name)
			events.Delete(ctx, event.DeleteEvent{Object: old}, nil)
		case old != nil && rng.IntN(3) == 0: // a new Policy of the same name
			uids++
			st.policies[name] = randomPolicy(rng, name, uids, 1, names)
			events.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: st.policies[name]}, nil)
		case old != nil:
			st.policies[name] = randomPolicy(rng, name, uids, old.Generation+1, names)
			st.policies[name].UID = old.UID
			events.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: st.policies[name]}, nil)
		default:
			uids++
			st.policies[name] = randomPolicy(rng, name, uids, 1, names)
			events.Create(ctx, event.CreateEvent{Object: st.policies[name]}, nil)
		}
		got, err := cache.graphFor("cluster1", kinds, st.source())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(edgeSets(got)).To(Equal(edgeSets(depgraph.GraphFor("cluster1", kinds, st.all()))), "step %d", step)
	}
	g.Expect(st.lists).To(BeNumerically("<", 20), "lists only on the first call and when the kinds change")
}

// TestGraphForReusesTheLastGraph: a namespace's graph is listed and built
// once, and then changes only where one of its Policies appeared, went or
// changed its spec, each read alone; other template kinds build it again;
// a failed read is returned and not remembered.
func TestGraphForReusesTheLastGraph(t *testing.T) {
	g := NewWithT(t)
	kinds := map[schema.GroupKind]bool{{Group: policyv1.GroupName, Kind: "ConfigurationPolicy"}: true}
	cache := &graphCache{}
	events := cache.invalidations()
	a, b := chainPolicy("a", "", 1), chainPolicy("b", "a", 1)
	st := &store{policies: map[string]*policyv1.Policy{"a": &a, "b": &b}}
	ctx := context.Background()
	expectReads := func(lists, gets int, why string) {
		t.Helper()
		got, err := cache.graphFor("cluster1", kinds, st.source())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(edgeSets(got)).To(Equal(edgeSets(depgraph.GraphFor("cluster1", kinds, st.all()))), why)
		g.Expect([]int{st.lists, st.gets}).To(Equal([]int{lists, gets}), why)
	}
	expectReads(1, 0, "the first call lists")
	expectReads(1, 0, "nothing changed: the last graph")

	labelled := a.DeepCopy()
	labelled.Labels = map[string]string{"x": "y"}
	events.Update(ctx, event.UpdateEvent{ObjectOld: &a, ObjectNew: labelled}, nil)
	expectReads(1, 0, "a label changes no dependency")

	cycle := chainPolicy("a", "b", 2)
	st.policies["a"] = &cycle
	events.Update(ctx, event.UpdateEvent{ObjectOld: &a, ObjectNew: &cycle}, nil)
	expectReads(1, 1, "a new generation: that Policy is read")
	got, err := cache.graphFor("cluster1", kinds, st.source())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.CycleThrough(cp("a-config"))).NotTo(BeNil(), "a now waits for b, which waits for a")

	other := cycle.DeepCopy()
	other.Namespace = "cluster2"
	events.Create(ctx, event.CreateEvent{Object: other}, nil)
	expectReads(1, 1, "a Policy of another namespace")

	delete(st.policies, "a")
	events.Delete(ctx, event.DeleteEvent{Object: &cycle}, nil)
	expectReads(1, 2, "a Policy went")

	widgets := map[schema.GroupKind]bool{{Group: "example.com", Kind: "Widget"}: true}
	_, err = cache.graphFor("cluster1", widgets, st.source())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.lists).To(Equal(2), "other template kinds: listed again")

	st.err = errors.New("cache not started")
	st.policies["a"] = &a
	events.Create(ctx, event.CreateEvent{Object: &a}, nil)
	_, err = cache.graphFor("cluster1", widgets, st.source())
	g.Expect(err).To(MatchError(st.err))
	st.err = nil
	got, err = cache.graphFor("cluster1", widgets, st.source())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(edgeSets(got)).To(Equal(edgeSets(depgraph.GraphFor("cluster1", widgets, st.all()))), "a failed read is read again")
}
