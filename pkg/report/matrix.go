package report

import (
	"cmp"
	"slices"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Unknown is how a cell without a reported compliance is shown.
const Unknown = "-"

// Matrix is the compliance of root policies across managed clusters.
type Matrix struct {
	// Clusters are the column headings, sorted.
	Clusters []string `json:"clusters"`
	// Rows are the policies, sorted by namespace and name.
	Rows []Row `json:"policies"`
}

// Row is one root policy and its compliance on each cluster.
type Row struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Compliant is the policy's overall compliance (status.compliant).
	Compliant policyv1.ComplianceState `json:"compliant,omitempty"`
	// Clusters maps a cluster name to the replica's compliance there; a
	// cluster the policy is not placed on has no entry.
	Clusters map[string]policyv1.ComplianceState `json:"clusters"`
	// Excluded are the clusters a PolicySet's exclusion keeps the policy
	// off (and no other binding places it on), sorted: shown as Excluded,
	// not as not placed.
	Excluded []string `json:"excluded,omitempty"`
	// Summary is Totals(), filled by Build for readers of the JSON form.
	Summary Totals `json:"totals"`
}

// Totals counts the cells of each compliance state in a row.
type Totals struct {
	Compliant    int `json:"compliant"`
	NonCompliant int `json:"nonCompliant"`
	Pending      int `json:"pending"`
	Unknown      int `json:"unknown"`
}

// Build makes the matrix of roots, the root policies of a hub (replicas,
// which carry the root-policy label, are skipped).
func Build(roots []policyv1.Policy) Matrix {
	clusters := map[string]bool{}
	m := Matrix{}
	for _, p := range roots {
		if _, replica := p.Labels[policyv1.RootPolicyLabel]; replica {
			continue
		}
		row := Row{Namespace: p.Namespace, Name: p.Name, Compliant: p.Status.ComplianceState,
			Clusters: map[string]policyv1.ComplianceState{}}
		for _, s := range p.Status.Status {
			row.Clusters[s.ClusterName] = s.ComplianceState
			clusters[s.ClusterName] = true
		}
		for _, c := range excludedOnly(RootExclusions(&p, nil)) {
			if _, placed := row.Clusters[c]; !placed {
				row.Excluded = append(row.Excluded, c)
				clusters[c] = true
			}
		}
		row.Summary = row.Totals()
		m.Rows = append(m.Rows, row)
	}
	for c := range clusters {
		m.Clusters = append(m.Clusters, c)
	}
	slices.Sort(m.Clusters)
	slices.SortFunc(m.Rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return m
}

// Totals counts the states of the row's cells over the given clusters, a
// placed cluster without status counting as Unknown.
func (r Row) Totals() Totals {
	var t Totals
	for _, state := range r.Clusters {
		switch state {
		case policyv1.Compliant:
			t.Compliant++
		case policyv1.NonCompliant:
			t.NonCompliant++
		case policyv1.Pending:
			t.Pending++
		default:
			t.Unknown++
		}
	}
	return t
}

// Settled reports whether every policy is placed on some cluster and
// Compliant on each.
func (m Matrix) Settled() bool {
	for _, r := range m.Rows {
		if t := r.Totals(); t.Compliant == 0 || t.NonCompliant+t.Pending+t.Unknown > 0 {
			return false
		}
	}
	return len(m.Rows) > 0
}

// Totals counts the cells of every row: the fleet's totals.
func (m Matrix) Totals() Totals {
	var t Totals
	for _, r := range m.Rows {
		rt := r.Totals()
		t.Compliant += rt.Compliant
		t.NonCompliant += rt.NonCompliant
		t.Pending += rt.Pending
		t.Unknown += rt.Unknown
	}
	return t
}
