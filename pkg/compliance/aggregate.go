package compliance

import policyv1 "github.com/canopy-policy/canopy/api/v1"

// Aggregate combines compliances into one, the way a root policy combines
// its clusters, a PolicySet its members and a replica its templates:
// NonCompliant wins over Pending, which wins over unknown (""), which wins
// over Compliant. A value other than Compliant, NonCompliant and Pending
// counts as unknown.
//
// No compliance at all is unknown (""): with nothing reporting there is
// nothing to conclude. This is OCM's answer for a root policy placed on no
// cluster (the propagator's CalculateRootCompliance). A caller for whom an
// empty input means something else (statussync: a Policy without templates
// is Compliant, as OCM's framework addon has it) says so at its call site.
func Aggregate(states ...policyv1.ComplianceState) policyv1.ComplianceState {
	if len(states) == 0 {
		return ""
	}
	worst := policyv1.Compliant
	for _, s := range states {
		if rank(s) > rank(worst) {
			worst = Known(s)
		}
	}
	return worst
}

// rank orders compliances by how much they weigh in Aggregate.
func rank(s policyv1.ComplianceState) int {
	switch Known(s) {
	case policyv1.NonCompliant:
		return 3
	case policyv1.Pending:
		return 2
	case "":
		return 1
	}
	return 0
}

// Known returns s when it is a compliance a policy reports (Compliant,
// NonCompliant or Pending), and "" (unknown) otherwise.
func Known(s policyv1.ComplianceState) policyv1.ComplianceState {
	switch s {
	case policyv1.Compliant, policyv1.NonCompliant, policyv1.Pending:
		return s
	}
	return ""
}
