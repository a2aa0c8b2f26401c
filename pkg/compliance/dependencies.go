package compliance

import (
	"slices"
	"strconv"
	"strings"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// The messages of a template whose dependencies hold it back, written by
// the agent's templatesync and read back by pkg/report (the CLI and the
// dashboard), without the leading state of the event message:
//
//	Dependencies were not satisfied: 1 is still pending (Policy a); Policy a: want Compliant got NonCompliant
//	Dependencies were not satisfied: 2 are still pending (ConfigurationPolicy b, Policy a); ConfigurationPolicy b: not found; Policy a: want Compliant got NonCompliant
//	dependency cycle: Policy a -> Policy b -> Policy a
//
// The writers and the parsers live side by side so that they cannot drift;
// the text is OCM's where OCM has one. Up to the closing parenthesis (and
// " but ignorePending is true" after it) a Pending message is OCM's byte for
// byte, so that dashboards, alerts and scripts written for OCM match it; the
// per-dependency reasons that follow are Canopy's.
const (
	pendingPrefix = "Dependencies were not satisfied: "
	// pendingOne and pendingMany follow the count, as OCM writes them.
	pendingOne        = " is still pending ("
	pendingMany       = " are still pending ("
	ignorePendingNote = " but ignorePending is true"
	cyclePrefix       = "dependency cycle: "
	cycleArrow        = " -> "
	mismatchWant      = "want "
	mismatchGot       = " got "
)

// Reasons a dependency is not met, as a Pending message gives them; the
// fourth is a mismatch (UnmetMismatch).
const (
	// UnmetNotFound: the object does not exist.
	UnmetNotFound = "not found"
	// UnmetNoMapping: the API server serves no resource of that kind.
	UnmetNoMapping = "no API mapping for the kind"
	// UnmetNoCompliance: the object exists but has no status.compliant.
	UnmetNoCompliance = "no status.compliant"
)

// DependencyRef is an object as the Pending and cycle messages name it,
// "Kind name", in the cluster namespace: a Policy is named as its replica,
// "<root namespace>.<root name>".
type DependencyRef struct {
	// Kind is the object's kind, for example Policy.
	Kind string
	// Name is the object's name.
	Name string
}

// String returns "Kind name".
func (r DependencyRef) String() string { return r.Kind + " " + r.Name }

// ParseDependencyRef reads "Kind name".
func ParseDependencyRef(s string) DependencyRef {
	kind, name, _ := strings.Cut(s, " ")
	return DependencyRef{Kind: kind, Name: name}
}

// UnmetDependency is a dependency a Pending message names, and why it is
// not met.
type UnmetDependency struct {
	DependencyRef
	// Reason is one of the Unmet* constants or an UnmetMismatch.
	Reason string
}

// UnmetMismatch is the reason of a dependency whose object reports got
// where want is required: "want X got Y".
func UnmetMismatch(want, got policyv1.ComplianceState) string {
	return mismatchWant + string(want) + mismatchGot + string(got)
}

// ParseMismatch reads an UnmetMismatch reason; ok is false for any other.
func ParseMismatch(reason string) (want, got policyv1.ComplianceState, ok bool) {
	rest, ok := strings.CutPrefix(reason, mismatchWant)
	if !ok {
		return "", "", false
	}
	w, g, ok := strings.Cut(rest, mismatchGot)
	if !ok {
		return "", "", false
	}
	return policyv1.ComplianceState(w), policyv1.ComplianceState(g), true
}

// PendingMessage returns the message of a template whose dependencies
// unmet are not satisfied, in OCM's words up to the closing parenthesis:
//
//	Dependencies were not satisfied: 1 is still pending (Policy a); Policy a: want Compliant got NonCompliant
//	Dependencies were not satisfied: 2 are still pending (ConfigurationPolicy b, Policy a); ConfigurationPolicy b: not found; Policy a: want Compliant got NonCompliant
//
// The dependencies are named in the order of their "Kind name", as OCM
// sorts them, and their reasons follow in the same order. With
// ignorePending, " but ignorePending is true" follows the list, where OCM
// puts it.
func PendingMessage(unmet []UnmetDependency, ignorePending bool) string {
	sorted := slices.Clone(unmet)
	slices.SortStableFunc(sorted, func(a, b UnmetDependency) int { return strings.Compare(a.String(), b.String()) })
	names := make([]string, len(sorted))
	reasons := make([]string, len(sorted))
	for i, u := range sorted {
		names[i] = u.String()
		reasons[i] = u.String() + ": " + u.Reason
	}
	count := pendingMany
	if len(sorted) == 1 {
		count = pendingOne
	}
	msg := pendingPrefix + strconv.Itoa(len(sorted)) + count + strings.Join(names, ", ") + ")"
	if ignorePending {
		msg += ignorePendingNote
	}
	return msg + "; " + strings.Join(reasons, "; ")
}

// ParsePending reads a PendingMessage. It returns the unmet dependencies
// in message order, whether the template ignores them (ignorePending), and
// false when msg is not such a message. A message cut short by the event
// size limit yields the dependencies it still names.
//
// Note: it reads "1 are still pending" too, as agents before OCM's wording
// wrote it: upgraded clusters keep such events and status history.
func ParsePending(msg string) (unmet []UnmetDependency, ignorePending, ok bool) {
	rest, ok := strings.CutPrefix(msg, pendingPrefix)
	if !ok {
		return nil, false, false
	}
	if rest, ok = cutCount(rest); !ok {
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
		u := UnmetDependency{DependencyRef: ParseDependencyRef(name)}
		if body, found := strings.CutPrefix(rest, name+": "); found {
			end := len(body)
			if i+1 < len(names) {
				if j := strings.Index(body, "; "+names[i+1]+": "); j >= 0 {
					end = j
				}
			}
			u.Reason, rest = body[:end], strings.TrimPrefix(body[end:], "; ")
		}
		unmet = append(unmet, u)
	}
	return unmet, ignorePending, true
}

// cutCount returns what follows "<count> is still pending (" or "<count>
// are still pending (", whichever the count takes.
func cutCount(rest string) (string, bool) {
	for _, sep := range []string{pendingOne, pendingMany} {
		if _, after, found := strings.Cut(rest, sep); found {
			return after, true
		}
	}
	return "", false
}

// CycleMessage returns the message of a template on the dependency cycle
// cycle, whose first node is repeated at its end:
//
//	dependency cycle: Policy a -> Policy b -> Policy a
func CycleMessage(cycle []DependencyRef) string {
	names := make([]string, len(cycle))
	for i, n := range cycle {
		names[i] = n.String()
	}
	return cyclePrefix + strings.Join(names, cycleArrow)
}

// ParseCycle reads a CycleMessage and returns its nodes, or nil when msg
// is not one.
func ParseCycle(msg string) []DependencyRef {
	rest, ok := strings.CutPrefix(msg, cyclePrefix)
	if !ok {
		return nil
	}
	var out []DependencyRef
	for _, n := range strings.Split(rest, cycleArrow) {
		out = append(out, ParseDependencyRef(n))
	}
	return out
}
