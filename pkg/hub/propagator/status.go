package propagator

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// ConditionPropagated says whether the root policy is replicated to every
// managed cluster its bindings select.
const ConditionPropagated = "Propagated"

// Reasons of ConditionPropagated.
const (
	// ReasonPropagated (True): every selected cluster has an up-to-date replica.
	ReasonPropagated = "Propagated"
	// ReasonNoClustersSelected (False): no binding selects a cluster; the
	// message says which binding or placement to fix.
	ReasonNoClustersSelected = "NoClustersSelected"
	// ReasonDisabled (False): spec.disabled is true, the policy has no replicas.
	ReasonDisabled = "Disabled"
	// ReasonNameTooLong (False): the namespace and name together exceed
	// policyv1.MaxRootPolicyNameLength; the policy must be recreated.
	ReasonNameTooLong = "NameTooLong"
	// ReasonPropagationFailed (False): writing some replicas failed; the
	// propagator retries.
	ReasonPropagationFailed = "PropagationFailed"
)

// maxMessageLength bounds condition messages, which list clusters and errors.
const maxMessageLength = 4096

// PropagatedCondition computes ConditionPropagated of a root policy from the
// placement resolution and the replica writes that failed.
func PropagatedCondition(root *policyv1.Policy, res Resolution, failures []error) metav1.Condition {
	c := metav1.Condition{Type: ConditionPropagated, Status: metav1.ConditionFalse, ObservedGeneration: root.Generation}
	switch {
	case root.Spec.Disabled:
		c.Reason = ReasonDisabled
		c.Message = "spec.disabled is true: the policy is removed from every managed cluster. Set it to false to propagate the policy again."
	case len(failures) > 0:
		c.Reason = ReasonPropagationFailed
		msgs := make([]string, 0, len(failures))
		for _, err := range failures {
			msgs = append(msgs, err.Error())
		}
		slices.Sort(msgs)
		c.Message = fmt.Sprintf("Writing the replicas failed for %d of %d selected managed clusters (retrying): %s",
			len(failures), len(res.Clusters), strings.Join(msgs, "; "))
	case len(res.Clusters) == 0:
		c.Reason = ReasonNoClustersSelected
		c.Message = noClustersMessage(root, res)
	default:
		c.Status = metav1.ConditionTrue
		c.Reason = ReasonPropagated
		c.Message = withProblems(fmt.Sprintf("Replicated to %d managed %s.", len(res.Clusters), plural(len(res.Clusters), "cluster")), res.Problems)
	}
	c.Message = truncate(c.Message)
	return c
}

// NameTooLongCondition is ConditionPropagated of a root policy whose
// namespace and name are too long for the replica label.
func NameTooLongCondition(root *policyv1.Policy) metav1.Condition {
	return metav1.Condition{
		Type:               ConditionPropagated,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: root.Generation,
		Reason:             ReasonNameTooLong,
		Message: fmt.Sprintf("The namespace and name of this policy are %d characters long together; at most %d are allowed, "+
			"because its replicas carry the label %s=<namespace>.<name>. Recreate the policy with a shorter name.",
			len(root.Namespace)+len(root.Name), policyv1.MaxRootPolicyNameLength, policyv1.RootPolicyLabel),
	}
}

func noClustersMessage(root *policyv1.Policy, res Resolution) string {
	if !res.Bound {
		return withProblems(fmt.Sprintf("No PlacementBinding in namespace %s names this policy or a PolicySet listing it: "+
			"create one that binds a Placement to it.", root.Namespace), res.Problems)
	}
	return withProblems("The placements bound to this policy select no managed cluster.", res.Problems)
}

func withProblems(msg string, problems []string) string {
	if len(problems) == 0 {
		return msg
	}
	return msg + " " + strings.Join(problems, ". ") + "."
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func truncate(msg string) string {
	if len(msg) <= maxMessageLength {
		return msg
	}
	return msg[:maxMessageLength-3] + "..."
}

// IsFailure reports whether c is a ConditionPropagated that a user should
// be told about with a Warning event: a failure to propagate, not a policy
// that is disabled or not bound yet (authors often create the binding
// after the policy).
func IsFailure(c metav1.Condition) bool {
	return c.Status == metav1.ConditionFalse && (c.Reason == ReasonPropagationFailed || c.Reason == ReasonNameTooLong)
}
