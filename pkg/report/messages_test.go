package report

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/depgraph"
)

func unmet(kind, name, reason string) compliance.UnmetDependency {
	return compliance.UnmetDependency{DependencyRef: compliance.DependencyRef{Kind: kind, Name: name}, Reason: reason}
}

// TestParsePendingReadsWhatTheAgentWrites parses the messages the agent
// writes (through compliance.PendingMessage), so that the two stay in step.
func TestParsePendingReadsWhatTheAgentWrites(t *testing.T) {
	tests := []struct {
		name          string
		unmet         []compliance.UnmetDependency
		ignorePending bool
		want          []UnmetDependency
	}{{
		name:  "one policy, mismatch",
		unmet: []compliance.UnmetDependency{unmet("Policy", "policies.a", "want Compliant got NonCompliant")},
		want: []UnmetDependency{{ObjectRef: ObjectRef{Kind: "Policy", Name: "policies.a", Policy: &PolicyRef{Namespace: "policies", Name: "a"}},
			Reason: "want Compliant got NonCompliant", Want: policyv1.Compliant, Got: policyv1.NonCompliant}},
	}, {
		name: "every reason",
		unmet: []compliance.UnmetDependency{
			unmet("Widget", "w", compliance.UnmetNoMapping),
			unmet("ConfigurationPolicy", "b", compliance.UnmetNotFound),
			unmet("Namespace", "prod", compliance.UnmetNoCompliance),
		},
		want: []UnmetDependency{ // in message order: sorted, as OCM names them
			{ObjectRef: ObjectRef{Kind: "ConfigurationPolicy", Name: "b"}, Reason: "not found"},
			{ObjectRef: ObjectRef{Kind: "Namespace", Name: "prod"}, Reason: "no status.compliant"},
			{ObjectRef: ObjectRef{Kind: "Widget", Name: "w"}, Reason: "no API mapping for the kind"},
		},
	}, {
		name:          "ignorePending",
		unmet:         []compliance.UnmetDependency{unmet("Policy", "x.y", "want Pending got Compliant")},
		ignorePending: true,
		want: []UnmetDependency{{ObjectRef: ObjectRef{Kind: "Policy", Name: "x.y", Policy: &PolicyRef{Namespace: "x", Name: "y"}},
			Reason: "want Pending got Compliant", Want: policyv1.Pending, Got: policyv1.Compliant}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ignore, ok := ParsePending(compliance.PendingMessage(tt.unmet, tt.ignorePending))
			g.Expect(ok).To(BeTrue())
			g.Expect(ignore).To(Equal(tt.ignorePending))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestParsePendingOfOtherMessages(t *testing.T) {
	g := NewWithT(t)
	for _, msg := range []string{"", "Compliant", "dependency cycle: Policy a -> Policy a", "Dependencies were not satisfied: oops"} {
		_, _, ok := ParsePending(msg)
		g.Expect(ok).To(BeFalse(), msg)
	}
}

// TestParsePendingOfOtherWriters reads OCM's own message (no reasons) and
// the "1 are" of agents before OCM's wording, which upgraded clusters keep.
func TestParsePendingOfOtherWriters(t *testing.T) {
	g := NewWithT(t)
	for msg, want := range map[string][]UnmetDependency{
		"Dependencies were not satisfied: 1 is still pending (Policy foo)": {{ObjectRef: ObjectRef{Kind: "Policy", Name: "foo"}}},
		"Dependencies were not satisfied: 1 are still pending (Policy p.a); Policy p.a: not found": {{
			ObjectRef: ObjectRef{Kind: "Policy", Name: "p.a", Policy: &PolicyRef{Namespace: "p", Name: "a"}}, Reason: "not found",
		}},
	} {
		got, _, ok := ParsePending(msg)
		g.Expect(ok).To(BeTrue(), msg)
		g.Expect(got).To(Equal(want), msg)
	}
}

// TestParsePendingOfTruncatedMessage reads what is left of a message the
// event size limit cut.
func TestParsePendingOfTruncatedMessage(t *testing.T) {
	g := NewWithT(t)
	var deps []compliance.UnmetDependency
	for i := range 200 { // Note: more than a message of compliance.MaxMessageLength holds
		deps = append(deps, unmet("ConfigurationPolicy", "some-long-template-name-"+strings.Repeat("x", i%7), "not found"))
	}
	c := compliance.Compliance{State: policyv1.Pending, Message: compliance.PendingMessage(deps, false)}
	_, msg, err := compliance.ParseMessage(c.EventMessage())
	g.Expect(err).NotTo(HaveOccurred())
	got, _, ok := ParsePending(msg)
	g.Expect(ok).To(BeTrue())
	g.Expect(len(got)).To(BeNumerically(">", 10))
	g.Expect(len(got)).To(BeNumerically("<", 200))
	for _, u := range got {
		g.Expect(u.Kind).To(Equal("ConfigurationPolicy"))
		g.Expect(u.Name).To(HavePrefix("some-long-template-name-"))
	}
}

func TestParseCycleReadsWhatTheAgentWrites(t *testing.T) {
	g := NewWithT(t)
	graph := depgraph.BuildGraph([]depgraph.PolicyNode{
		{Name: "p.a", Templates: []depgraph.TemplateNode{{Node: depgraph.Node{Kind: "ConfigurationPolicy", Name: "ta"},
			DependsOn: []depgraph.Node{{Kind: "Policy", Name: "p.b"}}}}},
		{Name: "p.b", Templates: []depgraph.TemplateNode{{Node: depgraph.Node{Kind: "ConfigurationPolicy", Name: "tb"},
			DependsOn: []depgraph.Node{{Kind: "Policy", Name: "p.a"}}}}},
	})
	msg := graph.CycleMessage("p.a", depgraph.Node{Kind: "ConfigurationPolicy", Name: "ta"})
	g.Expect(msg).NotTo(BeEmpty())
	cycle := ParseCycle(msg)
	names := make([]string, len(cycle))
	for i, n := range cycle {
		names[i] = n.String()
	}
	g.Expect(names).To(Equal([]string{"Policy p/a", "Policy p/b", "Policy p/a"}))
	g.Expect(ParseCycle("Compliant; fine")).To(BeNil())
}

func TestParseObjectRef(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ParseObjectRef("Policy ns.a.b")).To(Equal(ObjectRef{Kind: "Policy", Name: "ns.a.b", Policy: &PolicyRef{Namespace: "ns", Name: "a.b"}}))
	g.Expect(ParseObjectRef("Policy local")).To(Equal(ObjectRef{Kind: "Policy", Name: "local"}))
	g.Expect(ParseObjectRef("ConfigurationPolicy c.d")).To(Equal(ObjectRef{Kind: "ConfigurationPolicy", Name: "c.d"}))
}

// FuzzParsePending checks that any message parses without panicking, and
// that a message the agent writes gives back its dependencies.
func FuzzParsePending(f *testing.F) {
	f.Add("Policy", "ns.a", "want Compliant got NonCompliant", false)
	f.Add("ConfigurationPolicy", "b", "not found", true)
	f.Fuzz(func(t *testing.T, kind, name, reason string, ignorePending bool) {
		ParsePending(kind + " " + name + ": " + reason)
		ParseCycle("dependency cycle: " + kind + " " + name)
		if !validWord(kind) || !validWord(name) || strings.Contains(reason, ";") || reason == "" {
			return
		}
		msg := compliance.PendingMessage([]compliance.UnmetDependency{unmet(kind, name, reason), unmet(kind, name+"x", reason)}, ignorePending)
		got, ignore, ok := ParsePending(msg)
		if !ok || ignore != ignorePending || len(got) != 2 {
			t.Fatalf("ParsePending(%q) = %v, %v, %v", msg, got, ignore, ok)
		}
		for i, u := range got {
			if u.Kind != kind || u.Name != name+[]string{"", "x"}[i] || u.Reason != reason {
				t.Fatalf("ParsePending(%q)[%d] = %+v", msg, i, u)
			}
		}
	})
}

// validWord is a kind or a Kubernetes object name: no separators of the
// message format.
func validWord(s string) bool {
	return s != "" && !strings.ContainsAny(s, " ,;:()") && !strings.Contains(s, "\uFFFD") && utf8.ValidString(s)
}
