package operatorpolicy

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// ref identifies a related object, which may not exist.
type ref struct {
	gvk             schema.GroupVersionKind
	namespace, name string
	uid             string
}

// refOf is the ref of obj, which exists.
func refOf(obj *unstructured.Unstructured) ref {
	return ref{gvk: obj.GroupVersionKind(), namespace: obj.GetNamespace(), name: obj.GetName(), uid: string(obj.GetUID())}
}

// related is the related object r with a compliance and a reason; the
// UID is kept when withUID.
func related(r ref, compliant, reason string, withUID bool) policyv1.RelatedObject {
	obj := policyv1.RelatedObject{
		Object: policyv1.ObjectResource{Kind: r.gvk.Kind, APIVersion: r.gvk.GroupVersion().String(),
			Metadata: policyv1.ObjectMetadata{Name: r.name, Namespace: r.namespace}},
		Compliant: compliant, Reason: reason,
	}
	if withUID && r.uid != "" {
		obj.Properties = &policyv1.ObjectProperties{UID: r.uid}
	}
	return obj
}

const (
	compliant    = string(policyv1.Compliant)
	noncompliant = string(policyv1.NonCompliant)
	inapplicable = "Inapplicable"
)

func missingWantedObj(r ref) policyv1.RelatedObject {
	return related(r, noncompliant, reasonWantFoundDNE, false)
}

func missingNotWantedObj(r ref) policyv1.RelatedObject {
	return related(r, compliant, reasonWantNotFoundDNE, false)
}

func foundNotWantedObj(r ref) policyv1.RelatedObject {
	return related(r, noncompliant, reasonWantNotFoundExists, true)
}

func foundNotApplicableObj(r ref) policyv1.RelatedObject {
	return related(r, compliant, reasonFoundNotApplicable, true)
}

func matchedObj(r ref) policyv1.RelatedObject {
	return related(r, compliant, reasonWantFoundExists, true)
}

func mismatchedObj(r ref) policyv1.RelatedObject {
	return related(r, noncompliant, reasonWantFoundNoMatch, true)
}

func updatedObj(r ref) policyv1.RelatedObject {
	return related(r, compliant, reasonUpdateSuccess, true)
}

func deletedObj(r ref) policyv1.RelatedObject {
	return related(r, compliant, reasonDeleteSuccess, false)
}

func deletingObj(r ref) policyv1.RelatedObject {
	return related(r, noncompliant, reasonDeleting, false)
}

func nonCompObj(r ref, reason string) policyv1.RelatedObject {
	return related(r, noncompliant, reason, true)
}

// createdObj is an object the policy created: createdByPolicy is kept for
// as long as the object (its UID) lives.
func createdObj(r ref) policyv1.RelatedObject {
	obj := related(r, compliant, reasonWantFoundCreated, true)
	created := true
	if obj.Properties == nil {
		obj.Properties = &policyv1.ObjectProperties{}
	}
	obj.Properties.CreatedByPolicy = &created
	return obj
}

// leftoverObj is an object a mustnothave policy keeps: it has no
// compliance.
func leftoverObj(r ref) policyv1.RelatedObject {
	return related(r, "", "The "+r.gvk.Kind+" is attached to a mustnothave policy, but does not need to be removed", true)
}

// placeholder is the related object "-" of kind in namespace, for a kind
// of which nothing relevant was found.
func placeholder(gvk schema.GroupVersionKind, namespace, compliance, reason string) policyv1.RelatedObject {
	return related(ref{gvk: gvk, namespace: namespace, name: "-"}, compliance, reason, false)
}

// installPlanObj reports an InstallPlan by its phase; Installing and
// RequiresApproval are NonCompliant only when upgradesAvailable says so.
func installPlanObj(r ref, phase string, config policyv1beta1.ComplianceConfigAction) policyv1.RelatedObject {
	reason := "The InstallPlan is Unknown"
	if phase != "" {
		reason = "The InstallPlan is " + phase
	}
	state := noncompliant
	switch phase {
	case "Installing", "RequiresApproval":
		if config == policyv1beta1.ConfigCompliant {
			state = compliant
		}
	case "Complete":
		state = compliant
	}
	return related(r, state, reason, true)
}

// csvObj reports a CSV: Compliant only when Succeeded; the reason is the
// CSV's.
func csvObj(r ref, phase, reason string) policyv1.RelatedObject {
	state := noncompliant
	if phase == "Succeeded" {
		state = compliant
	}
	return related(r, state, reason, true)
}

// setStatus sets c (keeping its lastTransitionTime when nothing else
// changed), replaces the related objects of objs' kind with objs, and
// recomputes the Compliant condition. objs are all of one kind.
func setStatus(policy *policyv1beta1.OperatorPolicy, now metav1.Time, c metav1.Condition, objs ...policyv1.RelatedObject) {
	setCondition(&policy.Status, c, now)
	if len(objs) > 0 {
		setRelated(&policy.Status, objs)
	}
	setCondition(&policy.Status, complianceCondition(policy), now)
	slices.SortStableFunc(policy.Status.Conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	policy.Status.ComplianceState = policyv1.NonCompliant
	if c, _ := policy.Status.Condition(CondCompliant); c.Status == metav1.ConditionTrue {
		policy.Status.ComplianceState = policyv1.Compliant
	}
	if policy.Status.RelatedObjects == nil {
		policy.Status.RelatedObjects = []policyv1.RelatedObject{}
	}
	policy.Status.ObservedGeneration = policy.Generation
}

func setCondition(st *policyv1beta1.OperatorPolicyStatus, c metav1.Condition, now metav1.Time) {
	for i, old := range st.Conditions {
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return
		}
		c.LastTransitionTime = now
		st.Conditions[i] = c
		return
	}
	c.LastTransitionTime = now
	st.Conditions = append(st.Conditions, c)
}

// setRelated replaces the related objects of objs' kind, keeping
// createdByPolicy of an object whose UID did not change.
func setRelated(st *policyv1beta1.OperatorPolicyStatus, objs []policyv1.RelatedObject) {
	kind := objs[0].Object.Kind
	kept := make([]policyv1.RelatedObject, 0, len(st.RelatedObjects)+len(objs))
	for _, old := range st.RelatedObjects {
		if old.Object.Kind != kind {
			kept = append(kept, old)
			continue
		}
		for i := range objs {
			n := &objs[i]
			if n.Object.Metadata.Name != old.Object.Metadata.Name || n.Properties == nil || old.Properties == nil {
				continue
			}
			if n.Properties.UID == old.Properties.UID && old.Properties.CreatedByPolicy != nil {
				n.Properties.CreatedByPolicy = old.Properties.CreatedByPolicy
			}
		}
	}
	kept = append(kept, objs...)
	slices.SortStableFunc(kept, func(a, b policyv1.RelatedObject) int {
		return cmp.Or(strings.Compare(a.Object.Kind, b.Object.Kind),
			strings.Compare(a.Object.Metadata.Name, b.Object.Metadata.Name))
	})
	st.RelatedObjects = kept
}

// summarised are the condition types the Compliant condition sums up, in
// the order of its message.
var summarised = []string{CondValidPolicySpec, CondOperatorGroup, CondSubscription, CondInstallPlan, CondCSV,
	CondCRD, CondDeployment, CondCatalogSource}

// complianceCondition is the Compliant condition: NonCompliant when a
// summarised condition is missing or says so, its message the conditions'
// messages in order after the state ("Compliant; the policy spec is valid,
// ..."). An invalid spec says only why, unless it is a missing operator
// namespace (which enforce creates).
func complianceCondition(policy *policyv1beta1.OperatorPolicy) metav1.Condition {
	var msgs []string
	bad := false
	for _, t := range summarised {
		c, ok := policy.Status.Condition(t)
		if !ok {
			bad = true
			continue
		}
		msgs = append(msgs, c.Message)
		healthy := c.Status == metav1.ConditionTrue
		if t == CondCatalogSource {
			healthy = c.Status == metav1.ConditionFalse
		}
		if t == CondValidPolicySpec && !healthy &&
			!strings.HasPrefix(strings.ToLower(c.Message), "the operator namespace") {
			return compliantCond(false, c.Message)
		}
		bad = bad || !healthy
	}
	// Note: as in OCM, the deprecation message is summed up whenever it
	// counts, the minor channel one only when it says NonCompliant.
	config := policy.Spec.ComplianceConfig
	if !policy.Spec.ComplianceType.IsMustNotHave() && config.DeprecationsPresent == policyv1beta1.ConfigNonCompliant {
		c, ok := policy.Status.Condition(CondNoDeprecations)
		if ok {
			msgs = append(msgs, c.Message)
		}
		bad = bad || !ok || c.Status != metav1.ConditionTrue
	}
	if !policy.Spec.ComplianceType.IsMustNotHave() && config.MinorChannelUpgradeAvailable == policyv1beta1.ConfigNonCompliant {
		c, ok := policy.Status.Condition(CondMinorChannel)
		if ok && c.Status != metav1.ConditionTrue {
			msgs = append(msgs, c.Message)
		}
		bad = bad || !ok || c.Status != metav1.ConditionTrue
	}
	return compliantCond(!bad, strings.Join(msgs, ", "))
}

// defaultHistoryLength is the length of status.history when the
// Reconciler does not say, as in OCM.
const defaultHistoryLength = 10

// recordHistory puts the Compliant condition's message at the head of
// status.history when it is not there already, and keeps the newest
// length entries (defaultHistoryLength when length < 1).
func recordHistory(policy *policyv1beta1.OperatorPolicy, length int) {
	c, ok := policy.Status.Condition(CondCompliant)
	if !ok {
		return
	}
	history := policy.Status.History
	if len(history) > 0 && history[0].Message == c.Message {
		return
	}
	if length < 1 {
		length = defaultHistoryLength
	}
	entry := policyv1.HistoryEvent{LastTimestamp: metav1.MicroTime(c.LastTransitionTime), Message: c.Message}
	history = append([]policyv1.HistoryEvent{entry}, history...)
	policy.Status.History = history[:min(len(history), length)]
}

func compliantCond(ok bool, message string) metav1.Condition {
	c := metav1.Condition{Type: CondCompliant, Status: metav1.ConditionFalse, Reason: "NonCompliant"}
	if ok {
		c.Status, c.Reason = metav1.ConditionTrue, "Compliant"
	}
	c.Message = c.Reason + ";"
	if message != "" {
		c.Message += " " + message
	}
	if len(c.Message) > maxMessageLength {
		const trunc = "...[truncated]"
		c.Message = c.Message[:maxMessageLength-len(trunc)] + trunc
	}
	return c
}

// eventMessage is the compliance event's message after the state: the
// Compliant condition's message without its state.
func eventMessage(policy *policyv1beta1.OperatorPolicy) string {
	c, _ := policy.Status.Condition(CondCompliant)
	_, msg, _ := strings.Cut(c.Message, ";")
	return strings.TrimSpace(msg)
}
