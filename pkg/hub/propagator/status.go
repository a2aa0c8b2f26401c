package propagator

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// ConditionPropagated says whether the root policy is replicated to every
// managed cluster its bindings select (policyv1.ConditionPropagated).
const ConditionPropagated = policyv1.ConditionPropagated

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
	// ReasonHubTemplateError (False): the hub templates of some policy
	// templates failed to resolve for some clusters. Their replicas carry
	// each such template as the root wrote it, with the error in the
	// annotation templating.HubTemplatesErrorAnnotation, and the agents
	// report it NonCompliant. The message names the clusters and errors; a
	// Warning event of this reason says "Failed to resolve templates for
	// cluster <cluster>: <error>" when a cluster's error first appears.
	ReasonHubTemplateError = "HubTemplateError"
)

// HubTemplateFailure is a policy template whose hub templates failed to
// resolve for a cluster.
type HubTemplateFailure struct {
	// Cluster is the managed cluster.
	Cluster string
	// Message is the error, without the template it quotes.
	Message string
}

const (
	// maxMessageLength bounds condition messages, which list clusters and errors.
	maxMessageLength = 4096
	// maxEventNoteLength is the most an events.k8s.io Event's note may hold.
	maxEventNoteLength = 1024
)

// PropagatedCondition computes ConditionPropagated of a root policy from the
// placement resolution, the replica writes that failed and the templates
// whose hub templates failed.
func PropagatedCondition(root *policyv1.Policy, res Resolution, failures []error, templateFailures []HubTemplateFailure) metav1.Condition {
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
	case len(templateFailures) > 0:
		c.Reason = ReasonHubTemplateError
		c.Message = hubTemplateMessage(res, templateFailures)
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

// hubTemplateMessage names the clusters whose hub templates failed, those
// that failed alike together.
func hubTemplateMessage(res Resolution, failures []HubTemplateFailure) string {
	byMessage := map[string][]string{}
	clusters := map[string]bool{}
	for _, f := range failures {
		if !slices.Contains(byMessage[f.Message], f.Cluster) {
			byMessage[f.Message] = append(byMessage[f.Message], f.Cluster)
		}
		clusters[f.Cluster] = true
	}
	lines := make([]string, 0, len(byMessage))
	for msg, cs := range byMessage {
		slices.Sort(cs)
		lines = append(lines, fmt.Sprintf("%s %s: %s", plural(len(cs), "cluster"), strings.Join(cs, ", "), msg))
	}
	slices.Sort(lines)
	return fmt.Sprintf("Hub templates failed to resolve for %d of %d selected managed clusters. Their replicas hold those "+
		"policy templates unresolved, with the error in the annotation %s, and the agents report them NonCompliant. "+
		"Fix the templates or the objects they read: %s",
		len(clusters), len(res.Clusters), templating.HubTemplatesErrorAnnotation, strings.Join(lines, "; "))
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
	return truncateTo(msg, maxMessageLength)
}

// truncateTo cuts msg to at most n bytes of valid UTF-8, "..." included.
func truncateTo(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	return strings.ToValidUTF8(msg[:n-3], "") + "..."
}

// IsFailure reports whether c is a ConditionPropagated that a user should
// be told about with a Warning event: a failure to propagate, not a policy
// that is disabled or not bound yet (authors often create the binding
// after the policy).
func IsFailure(c metav1.Condition) bool {
	return c.Status == metav1.ConditionFalse &&
		(c.Reason == ReasonPropagationFailed || c.Reason == ReasonNameTooLong || c.Reason == ReasonInvalidRolloutStrategy ||
			c.Reason == ReasonInClusterNamespace)
}
