package faults

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// replicaVersion is one version of a replica of the rolled-out root, as
// watched on the hub.
type replicaVersion struct {
	cluster    string
	rv         uint64 // Note: one API server's objects share etcd's revisions, so the test compares them across objects
	generation int64
	wave       string // the replica's label "wave", which the test changes on the root
	state      policyv1.ComplianceState
}

// replicaWatch records every version of the root's replicas on the hub.
type replicaWatch struct {
	mu       sync.Mutex
	versions []replicaVersion
}

// watchReplicas records the versions of the root's replicas until the
// test ends.
func watchReplicas(t *testing.T, c client.WithWatch) *replicaWatch {
	w := &replicaWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	selector := client.MatchingLabels{policyv1.RootPolicyLabel: rolloutNS + "." + rolloutRoot}
	list := &policyv1.PolicyList{}
	NewWithT(t).Expect(c.List(ctx, list, selector)).To(Succeed())
	rv := list.ResourceVersion
	wg.Go(func() {
		for ctx.Err() == nil {
			ww, err := c.Watch(ctx, &policyv1.PolicyList{}, selector, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				t.Errorf("watching the replicas: the record has a gap: %v", err)
				return
			}
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range ww.ResultChan() {
				p, ok := ev.Object.(*policyv1.Policy)
				if ev.Type == watch.Error || !ok {
					if ev.Type == watch.Error && ctx.Err() == nil {
						t.Errorf("watching the replicas: %v", ev.Object)
						ww.Stop()
						return
					}
					continue
				}
				rv = p.ResourceVersion
				w.add(p)
			}
		}
	})
	return w
}

func (w *replicaWatch) add(p *policyv1.Policy) {
	rv, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("resourceVersion %q: %v", p.ResourceVersion, err))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.versions = append(w.versions, replicaVersion{cluster: p.Namespace, rv: rv, generation: p.Generation,
		wave: p.Labels["wave"], state: p.Status.ComplianceState})
}

// snapshot returns the versions recorded so far.
func (w *replicaWatch) snapshot() []replicaVersion {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]replicaVersion(nil), w.versions...)
}

// rolloutPhase is one rollout of the test: from the root's write at
// revision start, the root's label wave and the replicas' generations
// once it succeeded.
type rolloutPhase struct {
	start       uint64
	wave        string
	generations map[string]int64
}

// staleSuccesses returns, for each phase, the first versions of a later
// group's replica that the hub wrote in it (a new generation or label)
// while a cluster of an earlier group did not yet have its replica at the
// phase's generation and label, Compliant on a report (a version that
// changed only the status) made since the replica got that generation.
// versions are in watch order; phases in order.
func staleSuccesses(versions []replicaVersion, groups [][]string, phases []rolloutPhase) []string {
	groupOf := map[string]int{}
	for i, g := range groups {
		for _, c := range g {
			groupOf[c] = i
		}
	}
	var out []string
	latest := map[string]replicaVersion{} // the newest version of each replica so far
	reported := map[string]bool{}         // a report came since the replica got its generation
	phase := -1
	written := map[string]bool{} // replicas written in this phase
	for _, v := range versions {
		for phase+1 < len(phases) && v.rv > phases[phase+1].start {
			phase++
			written = map[string]bool{}
		}
		prev, seen := latest[v.cluster]
		latest[v.cluster] = v
		hubWrite := !seen || prev.generation != v.generation || prev.wave != v.wave
		switch {
		case !hubWrite:
			reported[v.cluster] = true
		case !seen || prev.generation != v.generation:
			reported[v.cluster] = false
		}
		if phase < 0 || !hubWrite || written[v.cluster] {
			continue
		}
		written[v.cluster] = true
		p := phases[phase]
		for _, earlier := range groups[:groupOf[v.cluster]] {
			for _, e := range earlier {
				if l := latest[e]; l.generation != p.generations[e] || l.wave != p.wave || l.state != policyv1.Compliant || !reported[e] {
					out = append(out, fmt.Sprintf("phase %d: %s written (generation %d, wave %s, at revision %d) while %s was generation %d (want %d), wave %q (want %s), %q, reported since its generation: %t",
						phase, v.cluster, v.generation, v.wave, v.rv, e, l.generation, p.generations[e], l.wave, p.wave, l.state, reported[e]))
				}
			}
		}
	}
	return out
}

// expectNoStaleSuccess checks staleSuccesses on the replicas' recorded
// versions.
func (f *rolloutFixture) expectNoStaleSuccess() {
	var groups [][]string
	for _, group := range rolloutGroups {
		groups = append(groups, group.Clusters)
	}
	versions := f.replicas.snapshot()
	byCluster := map[string][]string{}
	for _, v := range versions {
		byCluster[v.cluster] = append(byCluster[v.cluster], fmt.Sprintf("%d:g%d/w%s/%s", v.rv, v.generation, v.wave, v.state))
	}
	f.t.Logf("watch: %d versions of the replicas recorded (revision:generation/wave/compliance): %v", len(versions), byCluster)
	f.soft().Expect(staleSuccesses(versions, groups, f.phases)).To(BeEmpty(),
		"replicas of a later group written while an earlier group's cluster was not Compliant at the phase's generation")
}
