package certpolicy

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The messages are OCM's cert-policy-controller's, so that users and
// dashboards read them the same way.

// noNamespacesMessage is the compliance message of a policy whose
// namespaceSelector selects no namespace.
const noNamespacesMessage = "No namespaces matched the namespace selector."

// namespaceMessage is the status message of namespace ns ("" when none is
// selected), whose non-compliant certificates are bad.
func namespaceMessage(r rules, ns string, bad []certificate, now time.Time) string {
	if ns == "" {
		return "Found 0 non compliant certificates, no namespaces were selected.\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d non compliant certificates in the namespace %s.\n", len(bad), ns)
	if len(bad) == 0 {
		return b.String()
	}
	b.WriteString("List of non compliant certificates:\n")
	for _, c := range byName(bad) {
		if r.expiring(c, now) {
			fmt.Fprintf(&b, "%s expires in %s\n", c.name, c.notAfter.Sub(now))
		}
		if r.tooLong(c) {
			fmt.Fprintf(&b, "%s duration too long %s\n", c.name, c.notAfter.Sub(c.notBefore))
		}
		if r.sanMismatch(c) {
			fmt.Fprintf(&b, "%s SAN entry found not matching pattern %s\n", c.name, patterns(r))
		}
	}
	return b.String()
}

// finding is one kind of violation in the parent event: its sentence and
// the namespace:secret pairs it lists.
type finding struct {
	format  string // with %d (count), %s (limit), %s (list)
	limit   string
	secrets []string
}

// parentMessage is the compliance event's message of a NonCompliant
// policy: one sentence per kind of violation, listing namespace:secret
// pairs in namespace order.
func parentMessage(r rules, namespaces []string, certs map[string][]certificate, now time.Time) string {
	least := DefaultMinimumDuration
	if r.spec.MinDuration != nil {
		least = r.spec.MinDuration.Duration
	}
	findings := []*finding{
		{format: "%d certificates expire in less than %s: %s\n", limit: least.String()},
		{format: "%d CA certificates expire in less than %s: %s\n", limit: durationString(r.spec.MinCADuration)},
		{format: "%d certificates exceed the maximum duration of %s: %s\n", limit: durationString(r.spec.MaxDuration)},
		{format: "%d CA certificates exceed the maximum duration of %s: %s\n", limit: durationString(r.spec.MaxCADuration)},
		{format: "%d certificates defined SAN entries do not match pattern %s: %s\n", limit: patterns(r)},
	}
	for _, ns := range namespaces {
		for _, c := range byName(certs[ns]) {
			pair := ns + ":" + c.secret
			if r.expiring(c, now) {
				_, ca := r.minimum(c)
				findings[pick(ca, 1, 0)].secrets = append(findings[pick(ca, 1, 0)].secrets, pair)
			}
			if r.tooLong(c) {
				_, ca := r.maximum(c)
				findings[pick(ca, 3, 2)].secrets = append(findings[pick(ca, 3, 2)].secrets, pair)
			}
			if r.sanMismatch(c) {
				findings[4].secrets = append(findings[4].secrets, pair)
			}
		}
	}
	// Note: OCM joins the sentences as "<previous> <next>", each ending in
	// a newline; the outer spaces and newlines are trimmed here, since the
	// event message is "<State>; <message>".
	msg := ""
	for i, f := range findings {
		if len(f.secrets) == 0 {
			continue
		}
		sentence := fmt.Sprintf(f.format, len(f.secrets), f.limit, strings.Join(f.secrets, ", "))
		if i == 0 {
			msg = sentence
		} else {
			msg += " " + sentence
		}
	}
	return strings.TrimSpace(msg)
}

// patterns names the SAN patterns of r as OCM does: "Allowed: <p>",
// " Disallowed: <p>", or both.
func patterns(r rules) string {
	out := ""
	if r.spec.AllowedSANPattern != "" {
		out = "Allowed: " + r.spec.AllowedSANPattern
	}
	if r.spec.DisallowedSANPattern != "" {
		out += " Disallowed: " + r.spec.DisallowedSANPattern
	}
	return out
}

func pick(cond bool, yes, no int) int {
	if cond {
		return yes
	}
	return no
}

// byName returns certs sorted by certificate name, then Secret name, so
// that messages do not change from one evaluation to the next.
func byName(certs []certificate) []certificate {
	out := slices.Clone(certs)
	slices.SortFunc(out, func(a, b certificate) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.secret, b.secret)
	})
	return out
}
