package configpolicy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Reasons of object results and related objects. The values are OCM's, so
// that consoles and scripts written for OCM read them.
const (
	// ReasonFoundAsExpected: the object exists and matches.
	ReasonFoundAsExpected = "Resource found as expected"
	// ReasonCreated: the object was missing and was created (enforce).
	ReasonCreated = "K8s creation success"
	// ReasonCreatedStatusUnchecked: the object was created, and the
	// template sets a status that the next evaluation checks.
	ReasonCreatedStatusUnchecked = ReasonCreated + ", status unchecked"
	// ReasonUpdated: the object did not match and was updated (enforce).
	ReasonUpdated = "K8s update success"
	// ReasonDeleted: the object should not exist and was deleted (enforce).
	ReasonDeleted = "K8s deletion success"
	// ReasonFoundNoMatch: the object exists but does not match (inform).
	ReasonFoundNoMatch = "Resource found but does not match"
	// ReasonNotFound: the object should exist but does not (inform).
	ReasonNotFound = "Resource not found but should exist"
	// ReasonFoundUnwanted: the object should not exist but does (inform).
	ReasonFoundUnwanted = "Resource found but should not exist"
	// ReasonNotFoundAsExpected: the object should not exist and does not.
	ReasonNotFoundAsExpected = "Resource not found as expected"
)

// Condition types of compliancyDetails, as in OCM.
const (
	// ConditionViolation is the condition type of a noncompliant template.
	ConditionViolation = "violation"
	// ConditionNotification is the condition type of a compliant template.
	ConditionNotification = "notification"
)

// phrase is how the message and condition reason of a template say one of
// the reasons above.
type phrase struct{ words, conditionReason string }

var phrases = map[string]phrase{
	ReasonFoundAsExpected:    {"found as specified", "K8s `must have` object already exists"},
	ReasonCreated:            {"was created successfully", ReasonCreated},
	ReasonUpdated:            {"was updated successfully", ReasonUpdated},
	ReasonDeleted:            {"was deleted successfully", ReasonDeleted},
	ReasonNotFound:           {"not found", "K8s does not have a `must have` object"},
	ReasonFoundNoMatch:       {"found but not as specified", "K8s does not have a `must have` object"},
	ReasonNotFoundAsExpected: {"missing as expected", "K8s `must not have` object already missing"},
	ReasonFoundUnwanted:      {"found", "K8s has a `must not have` object"},
}

// reasonOrder orders the parts of a template's message.
var reasonOrder = []string{
	ReasonFoundAsExpected, ReasonCreated, ReasonUpdated, ReasonDeleted,
	ReasonNotFound, ReasonFoundNoMatch, ReasonNotFoundAsExpected, ReasonFoundUnwanted,
}

// objectResult is the outcome of an object template in one namespace (""
// for a cluster-scoped kind or a template that could not be evaluated).
type objectResult struct {
	namespace string
	// names are the objects the result is about, sorted; none when an
	// unnamed template found nothing.
	names     []string
	reason    string
	compliant bool
	// message is the whole message, for reasons without a phrase (errors).
	message string
}

// templateOutcome is the evaluation of one object template.
type templateOutcome struct {
	// resource is the plural resource name messages use ("configmaps").
	resource string
	results  []objectResult
	related  []policyv1.RelatedObject
	// remediated says that objects were created, updated or deleted.
	remediated bool
	// objects are the related objects as found or written, by identity,
	// when the evaluation watches (for customMessage; message.go).
	objects map[policyv1.ObjectResource]map[string]any
}

// errorOutcome is the outcome of a template that could not be evaluated.
func errorOutcome(resource, reason, message string) templateOutcome {
	return templateOutcome{resource: resource, results: []objectResult{{reason: reason, message: message}}}
}

// templateMessage returns the compliance, condition reason and message of
// an object template from its results. When any result is noncompliant,
// only the noncompliant ones are told. Results with the same reason are
// grouped, e.g. "configmaps [app] found as specified in namespaces: a, b".
func templateMessage(resource string, results []objectResult) (bool, string, string) {
	compliant := !slices.ContainsFunc(results, func(r objectResult) bool { return !r.compliant })
	byReason := map[string][]objectResult{}
	for _, r := range results {
		if r.compliant == compliant {
			byReason[r.reason] = append(byReason[r.reason], r)
		}
	}
	var reasons, msgs []string
	for _, reason := range orderReasons(byReason) {
		rs := byReason[reason]
		p, known := phrases[reason]
		if !known {
			reasons = appendNew(reasons, reason)
			slices.SortFunc(rs, func(a, b objectResult) int { return strings.Compare(a.namespace, b.namespace) })
			for _, r := range rs {
				msgs = append(msgs, r.message)
			}
			continue
		}
		reasons = appendNew(reasons, p.conditionReason)
		msgs = append(msgs, phraseResults(resource, p.words, rs)...)
	}
	return compliant, strings.Join(reasons, "; "), strings.Join(msgs, "; ")
}

// phraseResults says results of one reason: the names found in each
// namespace, and the namespaces that have the same names together.
func phraseResults(resource, words string, rs []objectResult) []string {
	namesIn := map[string][]string{}
	for _, r := range rs {
		namesIn[r.namespace] = append(namesIn[r.namespace], r.names...)
	}
	byNames := map[string][]string{}
	for ns, names := range namesIn {
		key := ""
		if len(names) > 0 {
			key = " [" + strings.Join(slices.Compact(slices.Sorted(slices.Values(names))), ", ") + "]"
		}
		byNames[key] = append(byNames[key], ns)
	}
	var msgs []string
	for _, names := range slices.Sorted(maps.Keys(byNames)) {
		nss := slices.Sorted(slices.Values(byNames[names]))
		msg := resource + names + " " + words
		switch {
		case len(nss) > 1:
			msg += " in namespaces: " + strings.Join(nss, ", ")
		case nss[0] != "":
			msg += " in namespace " + nss[0]
		}
		msgs = append(msgs, msg)
	}
	return msgs
}

func orderReasons(byReason map[string][]objectResult) []string {
	var out, others []string
	for _, r := range reasonOrder {
		if _, ok := byReason[r]; ok {
			out = append(out, r)
		}
	}
	for r := range byReason {
		if _, known := phrases[r]; !known {
			others = append(others, r)
		}
	}
	slices.Sort(others)
	return append(out, others...)
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// evaluatedStatus returns the status of policy after an evaluation at now
// with these outcomes (one per object template, in order).
func evaluatedStatus(policy *policyv1.ConfigurationPolicy, outcomes []templateOutcome, now time.Time) policyv1.ConfigurationPolicyStatus {
	prev := policy.Status
	st := policyv1.ConfigurationPolicyStatus{
		ComplianceState:         policyv1.Compliant,
		LastEvaluated:           now.UTC().Format(time.RFC3339),
		LastEvaluatedGeneration: policy.Generation,
		History:                 prev.History, // record (controller.go) adds this evaluation's
	}
	if len(outcomes) == 0 {
		msg := policy.Name + " contains no object templates to check, and thus has no violations"
		st.CompliancyDetails = []policyv1.TemplateStatus{templateStatus(prev, 0, true, "No object templates", msg, now)}
		return st
	}
	for i, o := range outcomes {
		compliant, reason, msg := templateMessage(o.resource, o.results)
		msg += neverNotice(policy.Spec.EvaluationInterval, compliant)
		st.CompliancyDetails = append(st.CompliancyDetails, templateStatus(prev, i, compliant, reason, msg, now))
		if !compliant {
			st.ComplianceState = policyv1.NonCompliant
		}
		for _, rel := range o.related {
			st.RelatedObjects = addRelated(st.RelatedObjects, rel)
		}
	}
	return st
}

// neverNotice is OCM's notice, at the end of a template's message, that a
// policy in this state is not evaluated again (evaluationInterval never).
func neverNotice(iv policyv1.EvaluationInterval, compliant bool) string {
	const notice = `. This policy will not be evaluated again due to spec.evaluationInterval.%s being set to "never".`
	switch {
	case compliant && iv.Compliant == "never":
		return fmt.Sprintf(notice, "compliant")
	case !compliant && iv.NonCompliant == "never":
		return fmt.Sprintf(notice, "noncompliant")
	}
	return ""
}

// templateStatus builds compliancyDetails[i], keeping the previous
// transition time when the condition is unchanged.
func templateStatus(prev policyv1.ConfigurationPolicyStatus, i int, compliant bool, reason, msg string, now time.Time) policyv1.TemplateStatus {
	ts := policyv1.TemplateStatus{ComplianceState: policyv1.NonCompliant}
	cond := policyv1.TemplateCondition{Type: ConditionViolation, Status: metav1.ConditionTrue, Reason: reason, Message: msg}
	if compliant {
		ts.ComplianceState, cond.Type = policyv1.Compliant, ConditionNotification
	}
	cond.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
	if i < len(prev.CompliancyDetails) && len(prev.CompliancyDetails[i].Conditions) > 0 {
		old := prev.CompliancyDetails[i].Conditions[0]
		if old.Type == cond.Type && old.Reason == cond.Reason && old.Message == cond.Message {
			cond.LastTransitionTime = old.LastTransitionTime
		}
	}
	ts.Conditions = []policyv1.TemplateCondition{cond}
	return ts
}

// addRelated adds rel to list; an object listed twice is noncompliant if
// either entry is.
func addRelated(list []policyv1.RelatedObject, rel policyv1.RelatedObject) []policyv1.RelatedObject {
	for i := range list {
		if list[i].Object == rel.Object {
			if rel.Compliant == string(policyv1.NonCompliant) {
				list[i] = rel
			}
			return list
		}
	}
	return append(list, rel)
}

// eventMessage is the part of the compliance event message after the
// state: each template's condition, "violation - ..." or "notification -
// ...", joined by "; ".
func eventMessage(st policyv1.ConfigurationPolicyStatus) string {
	var parts []string
	for _, d := range st.CompliancyDetails {
		for _, c := range d.Conditions {
			parts = append(parts, c.Type+" - "+c.Message)
		}
	}
	return strings.Join(parts, "; ")
}

// relatedObject is the relatedObjects entry of an object.
func relatedObject(apiVersion, kind, namespace, name string, compliant bool, reason string,
	props *policyv1.ObjectProperties,
) policyv1.RelatedObject {
	state := policyv1.NonCompliant
	if compliant {
		state = policyv1.Compliant
	}
	return policyv1.RelatedObject{
		Object: policyv1.ObjectResource{
			APIVersion: apiVersion, Kind: kind,
			Metadata: policyv1.ObjectMetadata{Name: name, Namespace: namespace},
		},
		Compliant:  string(state),
		Reason:     reason,
		Properties: props,
	}
}
