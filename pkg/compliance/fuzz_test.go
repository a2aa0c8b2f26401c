package compliance

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// FuzzRoundTrip checks that Parse reads back what NewEvent writes, for any
// message (cut to MaxMessageLength, made valid UTF-8).
func FuzzRoundTrip(f *testing.F) {
	f.Add("cluster1", "app-config", 0, "violation - configmaps [a] not found in namespace default")
	f.Add("ns", "n", 1, "")
	f.Add("ns", "n", 2, "; ;;")
	f.Add("ns", "n", 1, strings.Repeat("\xff", 2000))
	states := []policyv1.ComplianceState{policyv1.Compliant, policyv1.NonCompliant, policyv1.Pending}
	f.Fuzz(func(t *testing.T, ns, name string, state int, message string) {
		if ns == "" || name == "" || strings.Contains(ns, "/") || strings.Contains(name, "/") {
			t.Skip("not a namespace and name")
		}
		c := Compliance{
			Template: types.NamespacedName{Namespace: ns, Name: name},
			State:    states[(state%3+3)%3],
			Message:  message,
		}
		ev := NewEvent(Parent{Namespace: ns, Name: "p", UID: "u"}, c, EventSource{}, nil, false, time.Unix(0, 0))
		if len(ev.Message) > MaxMessageLength {
			t.Fatalf("message of %d bytes", len(ev.Message))
		}
		got, err := Parse(ev)
		if err != nil {
			t.Fatalf("Parse(NewEvent(%#v)): %v", c, err)
		}
		want := c
		if _, msg, _ := ParseMessage(c.EventMessage()); msg != message {
			want.Message = msg // cut or made valid
			if !strings.HasSuffix(msg, "...") && strings.ToValidUTF8(message, "\uFFFD") != msg {
				t.Fatalf("message %q became %q", message, msg)
			}
		}
		if got != want {
			t.Fatalf("Parse(NewEvent(%#v)) = %#v", c, got)
		}
	})
}

// FuzzParse checks that Parse never panics and that whatever it accepts is
// written back by NewEvent with the same reason and meaning.
func FuzzParse(f *testing.F) {
	f.Add("policy: cluster1/app-config", "NonCompliant; violation - x")
	f.Add("policy: a/b", "Compliant")
	f.Add("policy: /", "Pending;")
	f.Add("other", "Compliant; x")
	f.Fuzz(func(t *testing.T, reason, message string) {
		c, err := Parse(&corev1.Event{Reason: reason, Message: message})
		if err != nil {
			return
		}
		ev := NewEvent(Parent{}, c, EventSource{}, nil, false, time.Unix(0, 0))
		if ev.Reason != reason {
			t.Fatalf("reason %q written back as %q", reason, ev.Reason)
		}
		again, err := Parse(ev)
		if err != nil {
			t.Fatalf("message %q written back as %q, which does not parse: %v", message, ev.Message, err)
		}
		if len(message) <= MaxMessageLength && strings.ToValidUTF8(message, "\uFFFD") == message && again != c {
			t.Fatalf("message %q written back as %q, which reads %#v", message, ev.Message, again)
		}
	})
}
