package dashboard

import (
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/report"
)

// cellReasons are the first reasons of the cells, by policy and cluster.
type cellReasons map[report.PolicyRef]map[string]string

// of returns the first reason of a NonCompliant or Pending cell.
func (r cellReasons) of(ref report.PolicyRef, cluster string, state policyv1.ComplianceState) string {
	if state != policyv1.NonCompliant && state != policyv1.Pending {
		return ""
	}
	return r[ref][cluster]
}

// reasonsOf reads the first reason of each root policy of inv on each
// cluster from its replicas in inv, and on each cluster a PolicySet of inv
// excludes it from, the exclusion.
func reasonsOf(inv report.Inventory) cellReasons {
	replicas := map[string][]policyv1.Policy{}
	for _, p := range inv.Policies {
		if label, ok := p.Labels[policyv1.RootPolicyLabel]; ok {
			replicas[label] = append(replicas[label], p)
		}
	}
	out := cellReasons{}
	for i := range inv.Policies {
		root := &inv.Policies[i]
		if _, isReplica := root.Labels[policyv1.RootPolicyLabel]; isReplica {
			continue
		}
		ref := report.PolicyRef{Namespace: root.Namespace, Name: root.Name}
		e := report.Explain(root, replicas[replica.Name(root)], report.ExplainOptions{PolicySets: inv.PolicySets})
		out[ref] = map[string]string{}
		for _, x := range e.Excluded {
			out[ref][x.Cluster] = x.String()
		}
		for _, c := range e.Clusters {
			out[ref][c.Cluster] = report.FirstReason(c)
		}
	}
	return out
}

// dependencyState is the current compliance of the policy or policy set
// d names, and why d is not met, in the agent's words.
func dependencyState(inv report.Inventory, d DependencyView) (policyv1.ComplianceState, string) {
	var state policyv1.ComplianceState
	found := false
	switch d.Kind {
	case policyv1.PolicyKind:
		for _, p := range inv.Policies {
			if _, isReplica := p.Labels[policyv1.RootPolicyLabel]; !isReplica && p.Namespace == d.Namespace && p.Name == d.Name {
				state, found = p.Status.ComplianceState, true
			}
		}
	case policyv1beta1.PolicySetKind:
		for _, s := range inv.PolicySets {
			if s.Namespace == d.Namespace && s.Name == d.Name {
				state, found = s.Status.ComplianceState, true
			}
		}
	default:
		return "", "" // judged on each cluster
	}
	if met, reason := report.DependencyMet(d.Compliance, state, !found); !met {
		return state, reason
	}
	return state, ""
}
