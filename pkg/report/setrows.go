package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// SetRow is one PolicySet in the status table: its state and the roll-up
// of its members.
type SetRow struct {
	Set       PolicyRef                `json:"set"`
	Compliant policyv1.ComplianceState `json:"compliant,omitempty"`
	// Members is how many policies the set names.
	Members int `json:"members"`
	// NotCompliant are the members that are not Compliant, in spec order,
	// as "name (state)"; a member not on the hub is "name (not found)".
	NotCompliant []string `json:"notCompliant,omitempty"`
	// Exclusions are the set's spec.exclusions, one per policy and cluster.
	Exclusions []Exclusion `json:"exclusions,omitempty"`
}

// BuildSetRows returns a row per set, its members read from roots (the
// root policies of the sets' namespaces).
func BuildSetRows(sets []policyv1beta1.PolicySet, roots []policyv1.Policy) []SetRow {
	states := map[PolicyRef]policyv1.ComplianceState{}
	found := map[PolicyRef]bool{}
	for _, p := range roots {
		ref := PolicyRef{Namespace: p.Namespace, Name: p.Name}
		states[ref], found[ref] = p.Status.ComplianceState, true
	}
	rows := make([]SetRow, 0, len(sets))
	for _, s := range sets {
		row := SetRow{Set: PolicyRef{Namespace: s.Namespace, Name: s.Name}, Compliant: s.Status.ComplianceState,
			Members: len(s.Spec.Policies), Exclusions: SetExclusions(&s)}
		for _, m := range s.Spec.Policies {
			ref := PolicyRef{Namespace: s.Namespace, Name: string(m)}
			switch state := states[ref]; {
			case !found[ref]:
				row.NotCompliant = append(row.NotCompliant, string(m)+" (not found)")
			case state != policyv1.Compliant:
				row.NotCompliant = append(row.NotCompliant, string(m)+" ("+string(cellText(state))+")")
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func cellText(s policyv1.ComplianceState) policyv1.ComplianceState {
	if s == "" {
		return "no status yet"
	}
	return s
}

// RenderSets prints rows as a table: POLICYSET, its state, how many
// members, and those that are not Compliant; then a line per exclusion.
func RenderSets(w io.Writer, rows []SetRow, opts RenderOptions) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICYSET\tCOMPLIANT\tMEMBERS\tNOT COMPLIANT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.Set, cell(r.Compliant, true, opts), r.Members, strings.Join(r.NotCompliant, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	for _, r := range rows {
		for _, e := range r.Exclusions {
			e.PolicySet = r.Set.String()
			fmt.Fprintf(&b, "Excluded: %s\n", e)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RenderRollouts prints one line per root policy with a rollout: where it
// stands, and why it stopped.
func RenderRollouts(w io.Writer, roots []policyv1.Policy) error {
	var b strings.Builder
	for _, p := range roots {
		r := p.Status.Rollout
		if r == nil {
			continue
		}
		fmt.Fprintf(&b, "Rollout of %s/%s (%s): %s", p.Namespace, p.Name, r.Type, r.Phase)
		if r.Reason != "" {
			fmt.Fprintf(&b, ", %s", r.Reason)
		}
		if r.Message != "" {
			fmt.Fprintf(&b, ": %s", r.Message)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
