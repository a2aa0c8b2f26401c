package gatekeeper

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// constraint decodes doc (YAML) into an object, as a client decodes what
// the API server returns (integers as int64).
func constraint(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	raw, err := yaml.YAMLToJSON([]byte(doc))
	g.Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{}
	g.Expect(obj.UnmarshalJSON(raw)).To(Succeed())
	return obj
}

const constraintHead = `
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: ns-must-have-owner, generation: 2}
spec: {enforcementAction: warn}
`

// The messages are OCM's, from
// open-cluster-management-io/governance-policy-framework-addon,
// controllers/gatekeepersync/gatekeeper_constraint_sync.go: "The
// constraint has no violations", "The constraint status is invalid",
// "%s - %s (on %s %s)" joined by "; ", and "The Gatekeeper validating
// webhook is disabled but the constraint's spec.enforcementAction is %s.
// %s".
func TestConstraintCompliance(t *testing.T) {
	changed := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		status  string
		spec    string // replaces constraintHead's spec when set
		webhook bool
		want    Result
	}{{
		name:   "no audit results yet",
		status: `{}`,
		want:   Result{policyv1.Pending, "The constraint audit results haven't yet been posted"},
	}, {
		name:   "no violations",
		status: `{auditTimestamp: "2026-11-27T20:00:05Z", totalViolations: 0, byPod: [{id: audit, observedGeneration: 2}]}`,
		want:   Result{policyv1.Compliant, "The constraint has no violations"},
	}, {
		name: "violations as OCM lists them",
		status: `{auditTimestamp: "2026-11-27T20:00:05Z", totalViolations: 2, violations: [
			{enforcementAction: warn, kind: Namespace, message: "you must provide labels: {\"owner\"}", name: team-a, version: v1},
			{enforcementAction: warn, kind: Pod, message: "bad", name: p, namespace: team-a, version: v1}]}`,
		want: Result{policyv1.NonCompliant,
			`warn - you must provide labels: {"owner"} (on Namespace team-a); warn - bad (on Pod team-a/p)`},
	}, {
		name:   "violations beyond the status list are counted",
		status: `{auditTimestamp: "2026-11-27T20:00:05Z", totalViolations: 30, violations: [{enforcementAction: warn, kind: Namespace, message: m, name: a}]}`,
		want:   Result{policyv1.NonCompliant, "warn - m (on Namespace a); and 29 more"},
	}, {
		name:   "violations the status does not list are NonCompliant, not OCM's Compliant",
		status: `{auditTimestamp: "2026-11-27T20:00:05Z", totalViolations: 3}`,
		want:   Result{policyv1.NonCompliant, "3 violations (the constraint's status lists none of them)"},
	}, {
		name:   "status.violations not a list",
		status: `{auditTimestamp: "2026-11-27T20:00:05Z", totalViolations: 1, violations: "x"}`,
		want:   Result{policyv1.NonCompliant, "The constraint status is invalid"},
	}, {
		name:   "a pod behind the generation: Pending, not the old Compliant",
		status: `{auditTimestamp: "2026-11-27T20:00:05Z", totalViolations: 0, byPod: [{id: gatekeeper-audit-1, observedGeneration: 1}]}`,
		want: Result{policyv1.Pending, "The constraint audit results are not for its current spec yet: Gatekeeper pod gatekeeper-audit-1 " +
			"has observed generation 1 of the constraint, which is at generation 2; waiting for the next audit"},
	}, {
		name:   "an audit that started before the last change: Pending",
		status: `{auditTimestamp: "2026-11-27T19:59:59Z", totalViolations: 0}`,
		want: Result{policyv1.Pending, "The constraint audit results (status.auditTimestamp 2026-11-27T19:59:59Z) are older than its last " +
			"change (2026-11-27T20:00:00Z); waiting for the next audit"},
	}, {
		name:   "an audit in the second of the change may have started before it: Pending",
		status: `{auditTimestamp: "2026-11-27T20:00:00Z", totalViolations: 0}`,
		want: Result{policyv1.Pending, "The constraint audit results (status.auditTimestamp 2026-11-27T20:00:00Z) are older than its last " +
			"change (2026-11-27T20:00:00Z); waiting for the next audit"},
	}, {
		name:   "deny without the webhook",
		spec:   `{}`,
		status: `{auditTimestamp: "2026-11-27T20:00:05Z", totalViolations: 0}`,
		want: Result{policyv1.NonCompliant,
			"The Gatekeeper validating webhook is disabled but the constraint's spec.enforcementAction is deny. The constraint has no violations"},
	}, {
		name:    "deny with the webhook",
		spec:    `{enforcementAction: deny}`,
		status:  `{auditTimestamp: "2026-11-27T20:00:05Z", totalViolations: 0}`,
		webhook: true,
		want:    Result{policyv1.Compliant, "The constraint has no violations"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := constraintHead
			if tt.spec != "" {
				doc = strings.Replace(doc, "spec: {enforcementAction: warn}", "spec: "+tt.spec, 1)
			}
			obj := constraint(t, doc+"status: "+tt.status+"\n")
			got := ConstraintCompliance(ConstraintInput{Object: obj, LastChange: changed, WebhookEnabled: tt.webhook})
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

func TestViolationsAreCapped(t *testing.T) {
	var vs []any
	for range 25 {
		vs = append(vs, map[string]any{"enforcementAction": "warn", "kind": "Namespace", "message": "m", "name": "n"})
	}
	msg := violationsMessage(vs, 25)
	g := NewWithT(t)
	g.Expect(msg).To(HaveSuffix("; and 15 more"))
	g.Expect(msg).To(ContainSubstring("warn - m (on Namespace n)"))
}

// The messages are OCM's, from
// open-cluster-management-io/governance-policy-framework-addon,
// controllers/templatesync/template_sync.go: "%s %s was created
// successfully" and, through emitTemplateError, "template-error; Failed to
// create Gatekeeper ConstraintTemplate. Check the status of %s.".
func TestTemplateCompliance(t *testing.T) {
	head := "apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata: {name: k8srequiredlabels, generation: 3}\n"
	tests := []struct {
		name   string
		status string
		want   Result
	}{{
		name:   "created",
		status: "status: {created: true, byPod: [{id: audit, observedGeneration: 3}]}",
		want:   Result{policyv1.Compliant, "ConstraintTemplate k8srequiredlabels was created successfully"},
	}, {
		name:   "not created",
		status: "status: {created: false}",
		want: Result{policyv1.NonCompliant,
			"template-error; Failed to create Gatekeeper ConstraintTemplate. Check the status of k8srequiredlabels."},
	}, {
		name:   "not processed yet",
		status: "",
		want:   Result{policyv1.Pending, "Gatekeeper has not processed the ConstraintTemplate yet (it has no status.created)"},
	}, {
		name:   "processed at an older generation",
		status: "status: {created: true, byPod: [{id: audit, observedGeneration: 2}]}",
		want: Result{policyv1.Pending, "The ConstraintTemplate's status is not for its current spec yet: Gatekeeper pod audit " +
			"has observed generation 2, the template is at generation 3"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(TemplateCompliance(constraint(t, head+tt.status))).To(Equal(tt.want))
		})
	}
}

func TestLastChange(t *testing.T) {
	at := func(s int) *metav1.Time { v := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC)); return &v }
	obj := &unstructured.Unstructured{}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "canopy-agent", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(10)},
		{Manager: "gatekeeper", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: at(50)},
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(20)},
	})
	g := NewWithT(t)
	g.Expect(LastChange(obj)).To(BeTemporally("==", at(20).Time), "the status subresource's writes are not changes of the spec")
	g.Expect(LastChange(&unstructured.Unstructured{})).To(BeZero())
}
