package dashboard

import (
	"time"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// SetView is the JSON of /api/policysets/{ns}/{name}: one PolicySet, its
// members on each cluster, and which member holds it back where.
type SetView struct {
	Updated     time.Time                `json:"updated"`
	Namespace   string                   `json:"namespace"`
	Name        string                   `json:"name"`
	Description string                   `json:"description,omitempty"`
	Compliant   policyv1.ComplianceState `json:"compliant"`
	// StatusMessage is the set's status.statusMessage.
	StatusMessage string `json:"statusMessage,omitempty"`
	// Clusters are the clusters any member is placed on, sorted.
	Clusters []string `json:"clusters"`
	// Members are the member policies in spec order.
	Members []MemberView `json:"members"`
	// HeldBack names, per cluster where the set is not Compliant, the
	// member that holds it back and why.
	HeldBack []HeldBack `json:"heldBack"`
	// Exclusions are the set's spec.exclusions, one per member and
	// cluster, with their reasons.
	Exclusions []report.Exclusion `json:"exclusions"`
	// Graph is the state of each node and edge of the set's graph.
	Graph GraphState `json:"graph"`
}

// MemberView is one member policy of a set.
type MemberView struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Missing is true when no such policy is on the hub.
	Missing   bool                     `json:"missing,omitempty"`
	Compliant policyv1.ComplianceState `json:"compliant"`
	// Cells are the member's compliance on each of SetView.Clusters.
	Cells []Cell `json:"cells"`
	// Rollout is the member's status.rollout; nil without a strategy.
	Rollout *policyv1.RolloutStatus `json:"rollout,omitempty"`
}

// HeldBack is the member that keeps a set from being Compliant on a
// cluster, as report.ExplainSet (and kubectl canopy explain) says.
type HeldBack = report.HeldBack

// newSetView describes set from inv, which holds the hub's root policies,
// policy sets and the members' replicas.
func newSetView(set *policyv1beta1.PolicySet, inv report.Inventory, now time.Time) SetView {
	v := SetView{Updated: now, Namespace: set.Namespace, Name: set.Name, Description: set.Spec.Description,
		Compliant: set.Status.ComplianceState, StatusMessage: set.Status.StatusMessage,
		Members: []MemberView{}, HeldBack: []HeldBack{}}
	roots := map[string]*policyv1.Policy{}
	var members []policyv1.Policy
	for i := range inv.Policies {
		p := &inv.Policies[i]
		if _, isReplica := p.Labels[policyv1.RootPolicyLabel]; !isReplica && p.Namespace == set.Namespace {
			roots[p.Name] = p
		}
	}
	for _, m := range set.Spec.Policies {
		if p := roots[string(m)]; p != nil {
			members = append(members, *p)
		}
	}
	matrix := newMatrixView(report.Build(members), reasonsOf(inv), now)
	v.Clusters = matrix.Clusters
	rows := map[string]PolicyRow{}
	for _, r := range matrix.Policies {
		rows[r.Name] = r
	}
	for _, m := range set.Spec.Policies {
		mv := MemberView{Namespace: set.Namespace, Name: string(m), Cells: []Cell{}}
		if p := roots[string(m)]; p != nil {
			mv.Compliant, mv.Rollout, mv.Cells = p.Status.ComplianceState, p.Status.Rollout, rows[string(m)].Cells
		} else {
			mv.Missing = true
		}
		v.Members = append(v.Members, mv)
	}
	e := report.ExplainSet(set, inv)
	v.HeldBack, v.Exclusions = e.HeldBack, e.Exclusions
	if v.Exclusions == nil {
		v.Exclusions = []report.Exclusion{}
	}
	return v
}
