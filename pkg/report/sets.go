package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// SetExplanation says why a PolicySet is in its state: its members' states
// and, per cluster where the set is not Compliant, the member that holds it
// back there.
type SetExplanation struct {
	// Set is the PolicySet explained.
	Set PolicyRef `json:"set"`
	// Compliant is the set's status.compliant.
	Compliant policyv1.ComplianceState `json:"compliant,omitempty"`
	// Members are the set's policies, in spec order.
	Members []SetMember `json:"members"`
	// HeldBack names, per cluster (sorted) where a member placed there is
	// not Compliant, the first such member in spec order.
	HeldBack []HeldBack `json:"heldBack"`
	// Exclusions are the set's spec.exclusions, one per policy and cluster:
	// those clusters hold nothing back.
	Exclusions []Exclusion `json:"exclusions,omitempty"`
}

// SetMember is one policy of a PolicySet.
type SetMember struct {
	// Name is the member policy's name, in the set's namespace.
	Name string `json:"name"`
	// Compliant is the member's overall compliance.
	Compliant policyv1.ComplianceState `json:"compliant,omitempty"`
	// Missing is true when no root policy of that name is on the hub.
	Missing bool `json:"missing,omitempty"`
	// Clusters is the member's explanation on each cluster it is placed
	// on, sorted by cluster.
	Clusters []ClusterExplanation `json:"clusters,omitempty"`
}

// HeldBack is the member that keeps a PolicySet from being Compliant on
// one cluster.
type HeldBack struct {
	Cluster   string                   `json:"cluster"`
	Member    string                   `json:"member"`
	Compliant policyv1.ComplianceState `json:"compliant,omitempty"`
	// Reason is the member's first reason there (FirstReason).
	Reason string `json:"reason,omitempty"`
}

// ExplainSet explains set from the root policies and replicas of inv.
func ExplainSet(set *policyv1beta1.PolicySet, inv Inventory) SetExplanation {
	e := SetExplanation{Set: PolicyRef{Namespace: set.Namespace, Name: set.Name},
		Compliant: set.Status.ComplianceState, Members: []SetMember{}, HeldBack: []HeldBack{}, Exclusions: SetExclusions(set)}
	roots, replicas := splitInventory(inv)
	clusters := map[string]bool{}
	for _, name := range set.Spec.Policies {
		m := SetMember{Name: string(name)}
		root, ok := roots[PolicyRef{Namespace: set.Namespace, Name: string(name)}]
		if !ok {
			m.Missing = true
			e.Members = append(e.Members, m)
			continue
		}
		ex := Explain(root, replicas[replica.Name(root)], ExplainOptions{})
		m.Compliant, m.Clusters = ex.Compliant, ex.Clusters
		for _, c := range ex.Clusters {
			clusters[c.Cluster] = true
		}
		e.Members = append(e.Members, m)
	}
	for _, cluster := range slices.Sorted(maps.Keys(clusters)) {
		if h, ok := heldBackOn(cluster, e.Members); ok {
			e.HeldBack = append(e.HeldBack, h)
		}
	}
	return e
}

// heldBackOn returns the first member of members not Compliant on cluster.
func heldBackOn(cluster string, members []SetMember) (HeldBack, bool) {
	for _, m := range members {
		i := slices.IndexFunc(m.Clusters, func(c ClusterExplanation) bool { return c.Cluster == cluster })
		if i >= 0 && m.Clusters[i].Compliant != policyv1.Compliant {
			c := m.Clusters[i]
			return HeldBack{Cluster: cluster, Member: m.Name, Compliant: c.Compliant, Reason: FirstReason(c)}, true
		}
	}
	return HeldBack{}, false
}

// FirstReason is why a policy is not Compliant on one cluster, in one
// line: the first template that is not Compliant, with its first unmet
// dependency and why, or else its message; "" when every template is
// Compliant. Every view that shows one reason per cell shows this one.
func FirstReason(c ClusterExplanation) string {
	if c.NoReplica {
		return "no replica on this cluster yet"
	}
	for _, t := range c.Templates {
		if t.Compliant == policyv1.Compliant {
			continue
		}
		if len(t.Unmet) > 0 {
			u := t.Unmet[0]
			return strings.TrimSpace(t.Name + ": waiting for " + u.String() + ": " + u.Reason)
		}
		if len(t.Cycle) > 0 {
			return t.Name + ": dependency cycle"
		}
		if t.Message != "" {
			return t.Name + ": " + t.Message
		}
	}
	return ""
}

// splitInventory indexes inv's root policies by reference and its
// replicas by root (replica.Name of the root).
func splitInventory(inv Inventory) (map[PolicyRef]*policyv1.Policy, map[string][]policyv1.Policy) {
	roots := map[PolicyRef]*policyv1.Policy{}
	replicas := map[string][]policyv1.Policy{}
	for i := range inv.Policies {
		p := &inv.Policies[i]
		if label, ok := p.Labels[policyv1.RootPolicyLabel]; ok {
			replicas[label] = append(replicas[label], *p)
			continue
		}
		roots[PolicyRef{Namespace: p.Namespace, Name: p.Name}] = p
	}
	return roots, replicas
}

// RenderSetExplanation prints e for a reader: the set's state, each
// member's, and what holds the set back on each cluster.
func RenderSetExplanation(w io.Writer, e SetExplanation, opts RenderOptions) error {
	var b strings.Builder
	fmt.Fprintf(&b, "PolicySet %s: %s\n", e.Set, cell(e.Compliant, true, opts))
	for _, m := range e.Members {
		state := cell(m.Compliant, true, opts)
		if m.Missing {
			state = "not found"
		}
		fmt.Fprintf(&b, "  member %s: %s\n", m.Name, state)
		for _, x := range e.Exclusions {
			if x.Policy == m.Name {
				fmt.Fprintf(&b, "    %s on %s", cell(Excluded, true, opts), x.Cluster)
				if x.Reason != "" {
					fmt.Fprintf(&b, ": %s", x.Reason)
				}
				b.WriteString("\n")
			}
		}
	}
	if len(e.HeldBack) == 0 {
		b.WriteString("\nNo member holds the set back on any cluster.\n")
	}
	for _, h := range e.HeldBack {
		fmt.Fprintf(&b, "\nCluster %s: held back by %s (%s)\n", h.Cluster, h.Member, cell(h.Compliant, true, opts))
		if h.Reason != "" {
			fmt.Fprintf(&b, "  %s\n", h.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
