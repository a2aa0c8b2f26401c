package compliance

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func unmet(kind, name, reason string) UnmetDependency {
	return UnmetDependency{DependencyRef: DependencyRef{Kind: kind, Name: name}, Reason: reason}
}

// TestPendingMessageText pins the bytes the agent writes: up to the closing
// parenthesis (and " but ignorePending is true") OCM's template-sync text,
// which OCM tooling matches, then Canopy's reasons, which pkg/report reads.
func TestPendingMessageText(t *testing.T) {
	mismatch := UnmetMismatch(policyv1.Compliant, policyv1.NonCompliant)
	tests := []struct {
		name          string
		unmet         []UnmetDependency
		ignorePending bool
		want          string
	}{
		{name: "one", unmet: []UnmetDependency{unmet("Policy", "foo", UnmetNotFound)},
			want: "Dependencies were not satisfied: 1 is still pending (Policy foo); Policy foo: not found"},
		{name: "one, ignorePending", unmet: []UnmetDependency{unmet("Policy", "foo", mismatch)}, ignorePending: true,
			want: "Dependencies were not satisfied: 1 is still pending (Policy foo) but ignorePending is true; " +
				"Policy foo: want Compliant got NonCompliant"},
		{name: "several, named in sorted order", unmet: []UnmetDependency{
			unmet("Policy", "a", mismatch),
			unmet("ConfigurationPolicy", "b", UnmetNoCompliance),
			unmet("Namespace", "prod", UnmetNotFound),
		}, want: "Dependencies were not satisfied: 3 are still pending (ConfigurationPolicy b, Namespace prod, Policy a); " +
			"ConfigurationPolicy b: no status.compliant; Namespace prod: not found; Policy a: want Compliant got NonCompliant"},
		{name: "several, ignorePending", unmet: []UnmetDependency{
			unmet("Policy", "a", mismatch),
			unmet("ConfigurationPolicy", "b", UnmetNoCompliance),
		}, ignorePending: true,
			want: "Dependencies were not satisfied: 2 are still pending (ConfigurationPolicy b, Policy a) but ignorePending is true; " +
				"ConfigurationPolicy b: no status.compliant; Policy a: want Compliant got NonCompliant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(PendingMessage(tt.unmet, tt.ignorePending)).To(Equal(tt.want))
		})
	}
	NewWithT(t).Expect(CycleMessage([]DependencyRef{{"Policy", "a"}, {"Policy", "b"}, {"Policy", "a"}})).To(Equal(
		"dependency cycle: Policy a -> Policy b -> Policy a"))
}

// TestParsePendingOfOlderAgents reads the text agents wrote before they used
// OCM's "1 is": upgraded clusters keep such events and history.
func TestParsePendingOfOlderAgents(t *testing.T) {
	g := NewWithT(t)
	got, ignore, ok := ParsePending("Dependencies were not satisfied: 1 are still pending (Policy a) but ignorePending is true; Policy a: not found")
	g.Expect(ok).To(BeTrue())
	g.Expect(ignore).To(BeTrue())
	g.Expect(got).To(Equal([]UnmetDependency{unmet("Policy", "a", UnmetNotFound)}))
	got, _, ok = ParsePending("Dependencies were not satisfied: 2 are still pending (Policy a, ConfigurationPolicy b); " +
		"Policy a: want Compliant got NonCompliant; ConfigurationPolicy b: not found")
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal([]UnmetDependency{
		unmet("Policy", "a", UnmetMismatch(policyv1.Compliant, policyv1.NonCompliant)), unmet("ConfigurationPolicy", "b", UnmetNotFound),
	}))
	// OCM's own message, without Canopy's reasons.
	got, _, ok = ParsePending("Dependencies were not satisfied: 1 is still pending (Policy foo)")
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal([]UnmetDependency{{DependencyRef: DependencyRef{Kind: "Policy", Name: "foo"}}}))
}

// TestParsePendingReadsWhatPendingMessageWrites parses the messages the
// agent writes, so that the two stay in step.
func TestParsePendingReadsWhatPendingMessageWrites(t *testing.T) {
	tests := []struct {
		name          string
		unmet         []UnmetDependency
		ignorePending bool
	}{
		{name: "one policy, mismatch", unmet: []UnmetDependency{unmet("Policy", "policies.a", "want Compliant got NonCompliant")}},
		{name: "every reason", unmet: []UnmetDependency{
			unmet("ConfigurationPolicy", "b", UnmetNotFound),
			unmet("Namespace", "prod", UnmetNoCompliance),
			unmet("Widget", "w", UnmetNoMapping),
		}},
		{name: "ignorePending", unmet: []UnmetDependency{unmet("Policy", "x.y", "want Pending got Compliant")}, ignorePending: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ignore, ok := ParsePending(PendingMessage(tt.unmet, tt.ignorePending))
			g.Expect(ok).To(BeTrue())
			g.Expect(ignore).To(Equal(tt.ignorePending))
			g.Expect(got).To(Equal(tt.unmet), "in sorted order, as written")
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

// TestParsePendingOfTruncatedMessage reads what is left of a message the
// event size limit cut.
func TestParsePendingOfTruncatedMessage(t *testing.T) {
	g := NewWithT(t)
	var deps []UnmetDependency
	for i := range 300 {
		deps = append(deps, unmet("ConfigurationPolicy", "some-long-template-name-"+strings.Repeat("x", i%7), UnmetNotFound))
	}
	c := Compliance{State: policyv1.Pending, Message: PendingMessage(deps, false)}
	_, msg, err := ParseMessage(c.EventMessage())
	g.Expect(err).NotTo(HaveOccurred())
	got, _, ok := ParsePending(msg)
	g.Expect(ok).To(BeTrue())
	g.Expect(len(got)).To(BeNumerically(">", 10))
	g.Expect(len(got)).To(BeNumerically("<", 300))
	for _, u := range got {
		g.Expect(u.Kind).To(Equal("ConfigurationPolicy"))
		g.Expect(u.Name).To(HavePrefix("some-long-template-name-"))
	}
}

func TestParseMismatch(t *testing.T) {
	g := NewWithT(t)
	want, got, ok := ParseMismatch(UnmetMismatch(policyv1.Compliant, policyv1.NonCompliant))
	g.Expect(ok).To(BeTrue())
	g.Expect(want).To(Equal(policyv1.Compliant))
	g.Expect(got).To(Equal(policyv1.NonCompliant))
	for _, other := range []string{UnmetNotFound, UnmetNoMapping, UnmetNoCompliance, "want Compliant", ""} {
		_, _, ok := ParseMismatch(other)
		g.Expect(ok).To(BeFalse(), other)
	}
}

func TestParseCycle(t *testing.T) {
	g := NewWithT(t)
	cycle := []DependencyRef{{"Policy", "p.a"}, {"ConfigurationPolicy", "ta"}, {"Policy", "p.a"}}
	g.Expect(ParseCycle(CycleMessage(cycle))).To(Equal(cycle))
	g.Expect(ParseCycle("Compliant; fine")).To(BeNil())
}

// FuzzParsePending checks that any message parses without panicking, and
// that a message PendingMessage writes gives back its dependencies.
func FuzzParsePending(f *testing.F) {
	f.Add("Policy", "ns.a", "want Compliant got NonCompliant", false)
	f.Add("ConfigurationPolicy", "b", "not found", true)
	f.Fuzz(func(t *testing.T, kind, name, reason string, ignorePending bool) {
		ParsePending(kind + " " + name + ": " + reason)
		ParseCycle(cyclePrefix + kind + " " + name)
		ParseMismatch(reason)
		if !validWord(kind) || !validWord(name) || strings.Contains(reason, ";") || reason == "" {
			return
		}
		msg := PendingMessage([]UnmetDependency{unmet(kind, name, reason), unmet(kind, name+"x", reason)}, ignorePending)
		got, ignore, ok := ParsePending(msg)
		if !ok || ignore != ignorePending || len(got) != 2 {
			t.Fatalf("ParsePending(%q) = %v, %v, %v", msg, got, ignore, ok)
		}
		for i, u := range got {
			if u.Kind != kind || u.Name != name+[]string{"", "x"}[i] || u.Reason != reason {
				t.Fatalf("ParsePending(%q)[%d] = %+v", msg, i, u)
			}
		}
		cycle := []DependencyRef{{kind, name}, {kind, name + "x"}, {kind, name}}
		if back := ParseCycle(CycleMessage(cycle)); len(back) != 3 || back[1] != cycle[1] {
			t.Fatalf("ParseCycle(CycleMessage(%v)) = %v", cycle, back)
		}
	})
}

// validWord is a kind or a Kubernetes object name: no separators of the
// message format.
func validWord(s string) bool {
	return s != "" && !strings.ContainsAny(s, " ,;:()") && !strings.Contains(s, "\uFFFD") && utf8.ValidString(s)
}
