package templatesync

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// DefaultPendingGrace is how long a template waits, by default, before it
// is first reported Pending on dependencies that exist but have no
// compliance yet (Reconciler.PendingGrace).
const DefaultPendingGrace = 5 * time.Second

// pendingGrace remembers since when each template not reported yet has
// waited on dependencies that are on their way: they exist and have not
// been evaluated yet. When thousands of Policies arrive at once (an agent's
// first start, a new fleet-wide PolicySet), a dependant would otherwise
// report Pending on such a dependency and report again a moment later when
// it turns Compliant: a Pending event, the local and the hub Policy's status
// written twice, for a state nobody has time to see. Within the grace, the
// dependant reports nothing (as before its first evaluation: its status
// stays unknown, never Compliant); past it, it reports Pending.
//
// Only a template's first report waits: one that has reported anything
// reports a change at once. A dependency with a compliance that does not
// match, or that does not exist, is reported at once too. The memory is
// the process's: after a restart a template waits one grace again.
type pendingGrace struct {
	mu    sync.Mutex
	since map[graceKey]waitingSince
}

// graceKey is one template of one Policy.
type graceKey struct {
	policy   types.NamespacedName
	template string
}

// waitingSince is since when a template of the Policy object uid waits.
type waitingSince struct {
	uid types.UID
	at  time.Time
}

// left returns how much longer template t of policy waits before its
// Pending on unmet is reported; zero when it is reported now. It forgets
// the template once the wait is over.
func (g *pendingGrace) left(policy *policyv1.Policy, t Template, unmet []Unmet, grace time.Duration, now time.Time) time.Duration {
	key := graceKey{policy: types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name}, template: t.Name}
	onTheirWay := !slices.ContainsFunc(unmet, func(u Unmet) bool { return u.Reason != compliance.UnmetNoCompliance })
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.since == nil {
		g.since = map[graceKey]waitingSince{}
	}
	since, waiting := g.since[key]
	if grace <= 0 || !onTheirWay || visible(policy, t.Name) != nil {
		delete(g.since, key)
		return 0
	}
	if !waiting || since.uid != policy.UID {
		since = waitingSince{uid: policy.UID, at: now}
		g.since[key] = since
	}
	if left := since.at.Add(grace).Sub(now); left > 0 {
		return left
	}
	delete(g.since, key)
	return 0
}

// forget drops template t of policy: its dependencies are met.
func (g *pendingGrace) forget(policy *policyv1.Policy, t Template) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.since, graceKey{policy: types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name}, template: t.Name})
}

// forgetPolicy drops every template of the Policy key: it is gone.
func (g *pendingGrace) forgetPolicy(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.since {
		if k.policy == key {
			delete(g.since, k)
		}
	}
}
