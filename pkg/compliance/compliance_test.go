package compliance

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

var tmpl = types.NamespacedName{Namespace: "cluster1", Name: "app-config"}

func TestFormat(t *testing.T) {
	tests := []struct {
		name        string
		c           Compliance
		wantReason  string
		wantMessage string
		wantType    string
	}{
		{
			name:        "compliant",
			c:           Compliance{Template: tmpl, State: policyv1.Compliant, Message: "notification - configmaps [a] found as specified in namespace default"},
			wantReason:  "policy: cluster1/app-config",
			wantMessage: "Compliant; notification - configmaps [a] found as specified in namespace default",
			wantType:    corev1.EventTypeNormal,
		},
		{
			name:        "noncompliant",
			c:           Compliance{Template: tmpl, State: policyv1.NonCompliant, Message: "violation - configmaps [a] not found in namespace default"},
			wantReason:  "policy: cluster1/app-config",
			wantMessage: "NonCompliant; violation - configmaps [a] not found in namespace default",
			wantType:    corev1.EventTypeWarning,
		},
		{
			name:        "pending",
			c:           Compliance{Template: tmpl, State: policyv1.Pending, Message: "Dependencies were not satisfied: 1 is still pending (Policy p)"},
			wantReason:  "policy: cluster1/app-config",
			wantMessage: "Pending; Dependencies were not satisfied: 1 is still pending (Policy p)",
			wantType:    corev1.EventTypeWarning,
		},
		{
			name:        "state alone",
			c:           Compliance{Template: tmpl, State: policyv1.Compliant},
			wantReason:  "policy: cluster1/app-config",
			wantMessage: "Compliant",
			wantType:    corev1.EventTypeNormal,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.c.Reason()).To(Equal(tt.wantReason))
			g.Expect(tt.c.EventMessage()).To(Equal(tt.wantMessage))
			g.Expect(tt.c.EventType()).To(Equal(tt.wantType))
		})
	}
}

func TestEventMessageTruncated(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("é", MaxMessageLength) // two bytes each
	msg := Compliance{State: policyv1.NonCompliant, Message: long}.EventMessage()
	g.Expect(len(msg)).To(BeNumerically("<=", MaxMessageLength))
	g.Expect(msg).To(HavePrefix("NonCompliant; éé"))
	g.Expect(msg).To(HaveSuffix("é..."))
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		reason  string
		message string
		want    Compliance
		wantErr string
	}{
		{name: "OCM event", reason: "policy: cluster1/app-config",
			message: "NonCompliant; violation - configmaps [a] found but not as specified in namespace default",
			want: Compliance{Template: tmpl, State: policyv1.NonCompliant,
				Message: "violation - configmaps [a] found but not as specified in namespace default"}},
		{name: "state alone", reason: "policy: cluster1/app-config", message: "Compliant",
			want: Compliance{Template: tmpl, State: policyv1.Compliant}},
		{name: "pending", reason: "policy: cluster1/app-config", message: "Pending; waiting",
			want: Compliance{Template: tmpl, State: policyv1.Pending, Message: "waiting"}},
		{name: "not a compliance event", reason: "PolicyTemplateSync", message: "Compliant", wantErr: ErrNotCompliance.Error()},
		{name: "reason without name", reason: "policy: cluster1", message: "Compliant", wantErr: "is not"},
		{name: "reason with empty namespace", reason: "policy: /a", message: "Compliant", wantErr: "is not"},
		{name: "unknown state", reason: "policy: cluster1/a", message: "ComplianceState is still unknown", wantErr: "does not start with"},
		{name: "no space after semicolon", reason: "policy: cluster1/a", message: "Compliant;x", wantErr: "expected"},
		{name: "lowercase state", reason: "policy: cluster1/a", message: "compliant; x", wantErr: "does not start with"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Parse(&corev1.Event{Reason: tt.reason, Message: tt.message})
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestRoundTrip(t *testing.T) {
	parent := Parent{Namespace: "cluster1", Name: "default.app", UID: "uid-1"}
	now := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, c := range []Compliance{
		{Template: tmpl, State: policyv1.Compliant, Message: "notification - namespaces [a] found as specified"},
		{Template: tmpl, State: policyv1.NonCompliant, Message: "violation - a; violation - b"},
		{Template: tmpl, State: policyv1.Pending, Message: "Dependencies were not satisfied: 2 are still pending (Policy a, Policy b)"},
		{Template: tmpl, State: policyv1.Compliant},
		{Template: tmpl, State: policyv1.NonCompliant, Message: " leading space; and ; semicolons"},
	} {
		g := NewWithT(t)
		ev := NewEvent(parent, c, EventSource{Component: "canopy-agent", Instance: "host"}, nil, false, now)
		g.Expect(ev.Namespace).To(Equal(parent.Namespace))
		g.Expect(ev.InvolvedObject.UID).To(Equal(parent.UID))
		g.Expect(ev.InvolvedObject.Kind).To(Equal("Policy"))
		g.Expect(ev.Name).To(Equal("default.app.1816c11eeef33206"))
		got, err := Parse(ev)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(c))
	}
}

func TestDecide(t *testing.T) {
	compliant := Compliance{Template: tmpl, State: policyv1.Compliant, Message: "found"}
	created := Compliance{Template: tmpl, State: policyv1.Compliant, Message: "created"}
	missing := Compliance{Template: tmpl, State: policyv1.NonCompliant, Message: "missing"}
	mismatch := Compliance{Template: tmpl, State: policyv1.NonCompliant, Message: "mismatch"}
	tests := []struct {
		name         string
		last         *recorded
		next         Compliance
		remediated   bool
		wantEmit     bool
		wantRemember recorded
	}{
		{name: "first event", next: missing, wantEmit: true, wantRemember: recorded{Compliance: missing}},
		{name: "same again", last: &recorded{Compliance: missing}, next: missing, wantRemember: recorded{Compliance: missing}},
		{name: "state change", last: &recorded{Compliance: missing}, next: compliant, wantEmit: true,
			wantRemember: recorded{Compliance: compliant}},
		{name: "message change", last: &recorded{Compliance: missing}, next: mismatch, wantEmit: true,
			wantRemember: recorded{Compliance: mismatch}},
		{name: "remediation in the same state", last: &recorded{Compliance: compliant}, next: created, remediated: true,
			wantEmit: true, wantRemember: recorded{Compliance: created, remediated: true}},
		{name: "the fix settling", last: &recorded{Compliance: created, remediated: true}, next: compliant,
			wantEmit: true, wantRemember: recorded{Compliance: compliant}},
		{name: "after a remediation, a new state", last: &recorded{Compliance: created, remediated: true}, next: missing,
			wantEmit: true, wantRemember: recorded{Compliance: missing}},
		{name: "after a remediation, still NonCompliant with another message", last: &recorded{Compliance: mismatch, remediated: true},
			next: missing, wantEmit: true, wantRemember: recorded{Compliance: missing}},
		{name: "same remediation again", last: &recorded{Compliance: created, remediated: true}, next: created,
			remediated: true, wantEmit: true, wantRemember: recorded{Compliance: created, remediated: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			emit, remember := decide(tt.last, tt.next, RecordOptions{Remediated: tt.remediated})
			g.Expect(emit).To(Equal(tt.wantEmit))
			g.Expect(remember).To(Equal(tt.wantRemember))
		})
	}
}
