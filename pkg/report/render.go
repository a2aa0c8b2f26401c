package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// ANSI colours of the compliance states on a terminal.
const (
	green  = "\x1b[32m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	plain  = "\x1b[39m" // the default colour, as long as the others
	reset  = "\x1b[0m"
)

// RenderOptions change how a matrix is printed.
type RenderOptions struct {
	// Colour paints the states (for a terminal).
	Colour bool
}

// Render prints m as a table: POLICY, one column per cluster, and the totals.
func Render(w io.Writer, m Matrix, opts RenderOptions) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := append(append([]string{"POLICY"}, upper(m.Clusters)...), "COMPLIANT", "NONCOMPLIANT", "PENDING")
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range m.Rows {
		cells := []string{r.Namespace + "/" + r.Name}
		for _, c := range m.Clusters {
			state, placed := r.Clusters[c]
			if !placed && slices.Contains(r.Excluded, c) {
				cells = append(cells, cell(Excluded, true, opts))
				continue
			}
			cells = append(cells, cell(state, placed, opts))
		}
		t := r.Totals()
		cells = append(cells, fmt.Sprint(t.Compliant), fmt.Sprint(t.NonCompliant), fmt.Sprint(t.Pending))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func upper(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.ToUpper(n)
	}
	return out
}

// cell shows one state. Note: colour codes have no width in a terminal but
// count for tabwriter, so every coloured cell carries the same number of
// them to keep the columns aligned.
func cell(state policyv1.ComplianceState, placed bool, opts RenderOptions) string {
	text := string(state)
	switch {
	case !placed:
		text = ""
	case state == "":
		text = Unknown
	}
	if !opts.Colour {
		return text
	}
	colour := plain
	switch state {
	case policyv1.Compliant:
		colour = green
	case policyv1.NonCompliant:
		colour = red
	case policyv1.Pending:
		colour = yellow
	}
	return colour + text + reset
}
