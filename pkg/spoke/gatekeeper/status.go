package gatekeeper

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// Messages, where OCM's framework addon has the same case, are its words:
// controllers/gatekeepersync/gatekeeper_constraint_sync.go for a constraint,
// controllers/templatesync/template_sync.go for a ConstraintTemplate.
const (
	// MsgNoViolations is a constraint's Compliant message.
	MsgNoViolations = "The constraint has no violations"
	// MsgInvalidStatus is a constraint's message when its status.violations
	// is not a list.
	MsgInvalidStatus = "The constraint status is invalid"
	// MsgWebhookDisabledFormat prefixes the message of a constraint whose
	// enforcementAction is deny while Gatekeeper's validating webhook is not
	// configured: nothing denies anything, so it is NonCompliant.
	MsgWebhookDisabledFormat = "The Gatekeeper validating webhook is disabled but the constraint's spec.enforcementAction is %s. %s"
	// MsgTemplateCreatedFormat is a ConstraintTemplate's Compliant message.
	MsgTemplateCreatedFormat = "%s %s was created successfully"
	// MsgTemplateNotCreatedFormat is a ConstraintTemplate's message when
	// Gatekeeper could not make its constraint kind (status.created false:
	// a Rego error, say), after OCM's "template-error; ".
	MsgTemplateNotCreatedFormat = "Failed to create Gatekeeper ConstraintTemplate. Check the status of %s."
	// MsgAuditNotPosted is a constraint's Pending message before Gatekeeper's
	// audit has written its results (status.totalViolations): OCM logs
	// these words and reports nothing.
	MsgAuditNotPosted = "The constraint audit results haven't yet been posted"
)

// MaxListedViolations is how many violations a constraint's message lists;
// the others are counted ("and N more"). Gatekeeper itself lists at most
// its --constraint-violations-limit (20 by default) in status.violations,
// and a compliance event message holds 1,024 bytes.
const MaxListedViolations = 10

// Result is what a Gatekeeper template's status says: a compliance state
// and its message.
type Result struct {
	// State is Compliant, NonCompliant or Pending.
	State policyv1.ComplianceState
	// Message says why.
	Message string
}

// ConstraintInput is what ConstraintCompliance reads of a constraint.
type ConstraintInput struct {
	// Object is the constraint as the API server returned it.
	Object *unstructured.Unstructured
	// LastChange is when its spec (anything but its status) last changed,
	// from its managedFields (LastChange); zero when unknown.
	LastChange time.Time
	// WebhookEnabled says whether Gatekeeper's validating webhook is
	// configured on the cluster (OCM's webhookEnabled).
	WebhookEnabled bool
}

// ConstraintCompliance returns the compliance of a constraint from the
// results Gatekeeper's audit wrote in its status, as OCM's gatekeepersync
// reads them, with two differences that keep it true:
//
//   - results about an older spec are Pending, never Compliant: when a
//     Gatekeeper pod's status.byPod[].observedGeneration is not the
//     constraint's generation, or when status.auditTimestamp is not after
//     the spec's last change (the audit run that wrote them started before
//     it). OCM reports the old results until the next audit; Canopy says
//     it waits for it. So is a constraint no audit has reported on yet
//     (OCM reports nothing);
//   - compliance follows status.totalViolations, not the list of
//     status.violations, which Gatekeeper cuts at its
//     --constraint-violations-limit (possibly 0).
//
// The violations are listed as OCM lists them, "<enforcementAction> -
// <message> (on <kind> <namespace>/<name>)", joined by "; ", at most
// MaxListedViolations; the rest are counted.
func ConstraintCompliance(in ConstraintInput) Result {
	obj := in.Object.Object
	total, audited, err := unstructured.NestedInt64(obj, "status", "totalViolations")
	if err != nil {
		return Result{policyv1.NonCompliant, MsgInvalidStatus}
	}
	if !audited {
		return Result{policyv1.Pending, MsgAuditNotPosted}
	}
	if stale := staleness(in); stale != "" {
		return Result{policyv1.Pending, stale}
	}
	violations, _, err := unstructured.NestedSlice(obj, "status", "violations")
	if err != nil {
		return Result{policyv1.NonCompliant, MsgInvalidStatus}
	}
	res := Result{policyv1.Compliant, MsgNoViolations}
	if total > 0 || len(violations) > 0 {
		res = Result{policyv1.NonCompliant, violationsMessage(violations, total)}
	}
	if action := enforcementAction(in.Object); action == "deny" && !in.WebhookEnabled {
		res = Result{policyv1.NonCompliant, fmt.Sprintf(MsgWebhookDisabledFormat, action, res.Message)}
	}
	return res
}

// staleness says why the audit results of in are about an older spec than
// the constraint's, or "" when they are not.
func staleness(in ConstraintInput) string {
	if pod, observed, ok := behindPod(in.Object); ok {
		return fmt.Sprintf("The constraint audit results are not for its current spec yet: Gatekeeper pod %s has observed generation %d "+
			"of the constraint, which is at generation %d; waiting for the next audit", pod, observed, in.Object.GetGeneration())
	}
	at, _, _ := unstructured.NestedString(in.Object.Object, "status", "auditTimestamp")
	audit, err := time.Parse(time.RFC3339, at)
	switch {
	case err != nil:
		return fmt.Sprintf("The constraint audit results carry no valid status.auditTimestamp (%q); waiting for the next audit", at)
	case !in.LastChange.IsZero() && !audit.After(in.LastChange):
		return fmt.Sprintf("The constraint audit results (status.auditTimestamp %s) are older than its last change (%s); "+
			"waiting for the next audit", audit.UTC().Format(time.RFC3339), in.LastChange.UTC().Format(time.RFC3339))
	}
	return ""
}

// behindPod returns the first Gatekeeper pod in obj's status.byPod whose
// observedGeneration is not obj's generation.
func behindPod(obj *unstructured.Unstructured) (pod string, observed int64, behind bool) {
	pods, _, _ := unstructured.NestedSlice(obj.Object, "status", "byPod")
	for _, p := range pods {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		if gen != obj.GetGeneration() {
			id, _, _ := unstructured.NestedString(m, "id")
			return id, gen, true
		}
	}
	return "", 0, false
}

// violationsMessage lists violations as OCM does, at most
// MaxListedViolations, and counts the rest of total.
func violationsMessage(violations []any, total int64) string {
	var listed []string
	for _, v := range violations {
		if len(listed) == MaxListedViolations {
			break
		}
		if m, ok := v.(map[string]any); ok {
			listed = append(listed, violationText(m))
		}
	}
	msg := strings.Join(listed, "; ")
	if more := total - int64(len(listed)); more > 0 {
		if msg == "" {
			return fmt.Sprintf("%d violations (the constraint's status lists none of them)", total)
		}
		msg += fmt.Sprintf("; and %d more", more)
	}
	return msg
}

// violationText is one violation as OCM words it.
func violationText(v map[string]any) string {
	name, _ := v["name"].(string)
	if ns, ok := v["namespace"].(string); ok && ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%v - %v (on %v %s)", v["enforcementAction"], v["message"], v["kind"], name)
}

// enforcementAction is the constraint's spec.enforcementAction, "deny" when
// unset (Gatekeeper's default, as OCM's getEnforcementAction reads it).
func enforcementAction(obj *unstructured.Unstructured) string {
	action, found, err := unstructured.NestedString(obj.Object, "spec", "enforcementAction")
	if err != nil || !found {
		return "deny"
	}
	return action
}

// TemplateCompliance returns the compliance of a ConstraintTemplate from
// its status, as OCM's templatesync reads it (emitGKConstraintTemplateErrMsg):
// status.created true is Compliant ("ConstraintTemplate <name> was created
// successfully"), false NonCompliant ("template-error; Failed to create
// Gatekeeper ConstraintTemplate. Check the status of <name>."). Unlike OCM,
// which reports a status without created as an error, a template Gatekeeper
// has not processed yet — no status.created, or a pod in status.byPod
// behind its generation — is Pending: its status is about an older spec or
// none.
func TemplateCompliance(obj *unstructured.Unstructured) Result {
	if pod, observed, behind := behindPod(obj); behind {
		return Result{policyv1.Pending, fmt.Sprintf("The ConstraintTemplate's status is not for its current spec yet: "+
			"Gatekeeper pod %s has observed generation %d, the template is at generation %d", pod, observed, obj.GetGeneration())}
	}
	created, found, err := unstructured.NestedBool(obj.Object, "status", "created")
	switch {
	case err != nil || !found:
		return Result{policyv1.Pending, "Gatekeeper has not processed the ConstraintTemplate yet (it has no status.created)"}
	case !created:
		return Result{policyv1.NonCompliant, templating.TemplateErrorPrefix + fmt.Sprintf(MsgTemplateNotCreatedFormat, obj.GetName())}
	}
	return Result{policyv1.Compliant, fmt.Sprintf(MsgTemplateCreatedFormat, obj.GetKind(), obj.GetName())}
}

// LastChange returns when obj last changed other than in its status: the
// newest time of its managedFields entries that are not about the status
// subresource. Zero when it has none.
func LastChange(obj metav1.Object) time.Time {
	var last time.Time
	for _, f := range obj.GetManagedFields() {
		if f.Subresource == "status" || f.Time == nil {
			continue
		}
		if f.Time.After(last) {
			last = f.Time.Time
		}
	}
	return last
}
