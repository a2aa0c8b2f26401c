package report

import (
	"strings"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// The parts of the compliance messages the agent's templatesync writes
// (templatesync.PendingMessage and Graph.CycleMessage); the tests check
// that parsing what they write gives back what they were given.
const (
	pendingPrefix     = "Dependencies were not satisfied: "
	pendingCount      = " are still pending ("
	ignorePendingNote = " but ignorePending is true"
	cyclePrefix       = "dependency cycle: "
	cycleArrow        = " -> "
)

// ParsePending reads a Pending message (without the leading state):
//
//	Dependencies were not satisfied: 2 are still pending (Policy a, ConfigurationPolicy b); Policy a: want Compliant got NonCompliant; ConfigurationPolicy b: not found
//
// It returns the unmet dependencies in message order, whether the template
// ignores them (ignorePending), and false when msg is not such a message.
// A message cut short by the event size limit yields the dependencies it
// still names.
func ParsePending(msg string) (unmet []UnmetDependency, ignorePending, ok bool) {
	rest, ok := strings.CutPrefix(msg, pendingPrefix)
	if !ok {
		return nil, false, false
	}
	if _, rest, ok = strings.Cut(rest, pendingCount); !ok {
		return nil, false, false
	}
	list, rest, closed := strings.Cut(rest, ")")
	names := strings.Split(list, ", ")
	if !closed { // truncated inside the list: the last name may be cut
		names = names[:len(names)-1]
	}
	rest, ignorePending = strings.CutPrefix(rest, ignorePendingNote)
	rest = strings.TrimPrefix(rest, "; ")
	for i, name := range names {
		u := UnmetDependency{ObjectRef: ParseObjectRef(name)}
		if body, found := strings.CutPrefix(rest, name+": "); found {
			end := len(body)
			if i+1 < len(names) {
				if j := strings.Index(body, "; "+names[i+1]+": "); j >= 0 {
					end = j
				}
			}
			u.Reason, rest = body[:end], strings.TrimPrefix(body[end:], "; ")
			u.Want, u.Got = parseMismatch(u.Reason)
		}
		unmet = append(unmet, u)
	}
	return unmet, ignorePending, true
}

// parseMismatch reads "want X got Y".
func parseMismatch(reason string) (want, got policyv1.ComplianceState) {
	rest, ok := strings.CutPrefix(reason, "want ")
	if !ok {
		return "", ""
	}
	w, g, ok := strings.Cut(rest, " got ")
	if !ok {
		return "", ""
	}
	return policyv1.ComplianceState(w), policyv1.ComplianceState(g)
}

// ParseCycle reads a dependency cycle message,
//
//	dependency cycle: Policy a -> Policy b -> Policy a
//
// and returns its nodes, or nil when msg is not one.
func ParseCycle(msg string) []ObjectRef {
	rest, ok := strings.CutPrefix(msg, cyclePrefix)
	if !ok {
		return nil
	}
	var out []ObjectRef
	for _, n := range strings.Split(rest, cycleArrow) {
		out = append(out, ParseObjectRef(n))
	}
	return out
}

// ParseObjectRef reads "Kind name" as the agent writes it; a Policy named
// "<namespace>.<name>" (a replica) gets its root policy.
func ParseObjectRef(s string) ObjectRef {
	kind, name, _ := strings.Cut(s, " ")
	ref := ObjectRef{Kind: kind, Name: name}
	if kind == "Policy" {
		if ns, n, ok := strings.Cut(name, "."); ok && ns != "" && n != "" {
			ref.Policy = &PolicyRef{Namespace: ns, Name: n}
		}
	}
	return ref
}
