package report

import (
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// The compliance messages the agent's templatesync writes for a template
// that waits (Pending) or is on a dependency cycle are pkg/compliance's
// (PendingMessage, CycleMessage); this file turns what compliance's
// parsers read into the report's model, a Policy named by its root.

// ParsePending reads a Pending message (without the leading state):
//
//	Dependencies were not satisfied: 1 is still pending (Policy a); Policy a: want Compliant got NonCompliant
//	Dependencies were not satisfied: 2 are still pending (ConfigurationPolicy b, Policy a); ConfigurationPolicy b: not found; Policy a: want Compliant got NonCompliant
//
// It returns the unmet dependencies in message order, whether the template
// ignores them (ignorePending), and false when msg is not such a message.
// A message cut short by the event size limit yields the dependencies it
// still names. The text up to the parenthesis is OCM's, so OCM's own
// message reads too (without reasons); so does "1 are still pending",
// which agents wrote before they used OCM's words.
func ParsePending(msg string) (unmet []UnmetDependency, ignorePending, ok bool) {
	parsed, ignorePending, ok := compliance.ParsePending(msg)
	for _, p := range parsed {
		u := UnmetDependency{ObjectRef: objectRef(p.DependencyRef), Reason: p.Reason}
		u.Want, u.Got, _ = compliance.ParseMismatch(p.Reason)
		unmet = append(unmet, u)
	}
	return unmet, ignorePending, ok
}

// ParseCycle reads a dependency cycle message,
//
//	dependency cycle: Policy a -> Policy b -> Policy a
//
// and returns its nodes, or nil when msg is not one.
func ParseCycle(msg string) []ObjectRef {
	var out []ObjectRef
	for _, n := range compliance.ParseCycle(msg) {
		out = append(out, objectRef(n))
	}
	return out
}

// ParseObjectRef reads "Kind name" as the agent writes it; a Policy named
// "<namespace>.<name>" (a replica) gets its root policy.
func ParseObjectRef(s string) ObjectRef {
	return objectRef(compliance.ParseDependencyRef(s))
}

func objectRef(d compliance.DependencyRef) ObjectRef {
	ref := ObjectRef{Kind: d.Kind, Name: d.Name}
	if d.Kind == policyv1.PolicyKind {
		if root, ok := replica.RootOf(d.Name); ok {
			ref.Policy = &PolicyRef{Namespace: root.Namespace, Name: root.Name}
		}
	}
	return ref
}
