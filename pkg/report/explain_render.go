package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// RenderExplanation prints e for a reader: per cluster, per template, the
// state, then why (unmet dependencies, cycle, or the latest message), then
// the history entries e holds.
func RenderExplanation(w io.Writer, e Explanation, opts RenderOptions) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Policy %s: %s", e.Policy, cell(e.Compliant, true, opts))
	if e.Disabled {
		b.WriteString(" (disabled)")
	}
	b.WriteString("\n")
	if len(e.Clusters) == 0 && len(e.Excluded) == 0 {
		b.WriteString("  placed on no cluster\n")
	}
	if e.Placement != "" {
		fmt.Fprintf(&b, "  placement: %s\n", e.Placement)
	}
	for _, c := range e.Clusters {
		fmt.Fprintf(&b, "\nCluster %s: %s", c.Cluster, cell(c.Compliant, true, opts))
		if c.NoReplica {
			b.WriteString(" (no replica in the cluster namespace yet)")
		}
		b.WriteString("\n")
		for _, t := range c.Templates {
			renderTemplate(&b, t, opts)
		}
	}
	for _, x := range e.Excluded {
		fmt.Fprintf(&b, "\nCluster %s: %s\n  %s\n", x.Cluster, cell(Excluded, true, opts), x)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func renderTemplate(b *strings.Builder, t TemplateExplanation, opts RenderOptions) {
	fmt.Fprintf(b, "  %s: %s\n", strings.TrimSpace(t.Kind+" "+t.Name), cell(t.Compliant, true, opts))
	switch {
	case len(t.Unmet) > 0:
		head := "waiting for"
		if t.IgnorePending {
			head = "waiting for (reported Compliant: ignorePending)"
		}
		fmt.Fprintf(b, "    %s:\n", head)
		for _, u := range t.Unmet {
			fmt.Fprintf(b, "      - %s: %s\n", u.ObjectRef, u.Reason)
		}
	case len(t.Cycle) > 0:
		refs := make([]compliance.DependencyRef, len(t.Cycle))
		for i, n := range t.Cycle {
			refs[i] = n.display()
		}
		fmt.Fprintf(b, "    %s\n", compliance.CycleMessage(refs))
	case t.Message != "":
		fmt.Fprintf(b, "    message: %s\n", t.Message)
	case t.Compliant == "":
		b.WriteString("    no compliance reported yet\n")
	}
	if len(t.History) > 0 {
		b.WriteString("    history:\n")
	}
	for _, h := range t.History {
		fmt.Fprintf(b, "      %s  %-12s  %s\n", h.Time.UTC().Format(time.RFC3339), historyState(h.State), h.Message)
	}
}

func historyState(s policyv1.ComplianceState) string {
	if s == "" {
		return Unknown
	}
	return string(s)
}
