package dashboard

import (
	"slices"
	"time"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// MatrixView is the JSON of /api/matrix: the matrix of report.Build with
// its cells in column order and totals per policy and for the fleet, the
// policy sets, and the states of the overview's graph.
type MatrixView struct {
	// Updated is when the matrix was read.
	Updated  time.Time   `json:"updated"`
	Clusters []string    `json:"clusters"`
	Policies []PolicyRow `json:"policies"`
	// Totals count the cells of every policy.
	Totals report.Totals `json:"totals"`
	// Sets are the hub's PolicySets, sorted by namespace and name.
	Sets []SetRow `json:"sets"`
	// Graph is the state of each node and edge of the overview's graph.
	Graph GraphState `json:"graph"`
}

// PolicyRow is one policy of the matrix.
type PolicyRow struct {
	Namespace string                   `json:"namespace"`
	Name      string                   `json:"name"`
	Compliant policyv1.ComplianceState `json:"compliant"`
	// Cells are the policy's compliance on each cluster of
	// MatrixView.Clusters, in that order.
	Cells  []Cell        `json:"cells"`
	Totals report.Totals `json:"totals"`
}

// Cell is the compliance of one policy on one cluster.
type Cell struct {
	Cluster string `json:"cluster"`
	// Placed says whether the policy is placed on the cluster.
	Placed bool `json:"placed"`
	// State is the replica's compliance; empty is unknown.
	State policyv1.ComplianceState `json:"state"`
	// Excluded says that a PolicySet's exclusion keeps the policy off the
	// cluster (and no other binding places it there): the cell is not
	// placed on purpose.
	Excluded bool `json:"excluded,omitempty"`
	// Reason is the first reason a NonCompliant or Pending cell gives, as
	// the policy's page shows it; for an excluded cell, which set excludes
	// the policy and why.
	Reason string `json:"reason,omitempty"`
}

// SetRow is one PolicySet of the overview.
type SetRow struct {
	Namespace string                   `json:"namespace"`
	Name      string                   `json:"name"`
	Compliant policyv1.ComplianceState `json:"compliant"`
	// Members are the member policies' names, in spec order.
	Members []string `json:"members"`
	// StatusMessage is the set's status.statusMessage.
	StatusMessage string `json:"statusMessage,omitempty"`
}

// newMatrixView lays out m for the page; reasons gives each cell's first
// reason.
func newMatrixView(m report.Matrix, reasons cellReasons, now time.Time) MatrixView {
	v := MatrixView{Updated: now, Clusters: m.Clusters, Policies: []PolicyRow{}, Totals: m.Totals(), Sets: []SetRow{}}
	if v.Clusters == nil {
		v.Clusters = []string{}
	}
	for _, r := range m.Rows {
		row := PolicyRow{Namespace: r.Namespace, Name: r.Name, Compliant: r.Compliant, Totals: r.Summary}
		ref := report.PolicyRef{Namespace: r.Namespace, Name: r.Name}
		for _, c := range m.Clusters {
			state, placed := r.Clusters[c]
			cell := Cell{Cluster: c, Placed: placed, State: state, Reason: reasons.of(ref, c, state)}
			if !placed && slices.Contains(r.Excluded, c) {
				cell.Excluded, cell.Reason = true, reasons[ref][c]
			}
			row.Cells = append(row.Cells, cell)
		}
		v.Policies = append(v.Policies, row)
	}
	return v
}
