package configpolicy

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// sentEvent is a compliance event on the parent Policy: its message and
// its time, read from its name to the nanosecond.
type sentEvent struct {
	message string
	at      time.Time
}

// sent returns a function that lists the compliance events on the parent
// Policy, newest first.
func (f *fixture) sent() func(Gomega) []sentEvent {
	return func(g Gomega) []sentEvent {
		list := &corev1.EventList{}
		g.Expect(f.c.List(f.t.Context(), list, client.InNamespace(f.ns))).To(Succeed())
		var out []sentEvent
		for _, ev := range list.Items {
			if ev.InvolvedObject.UID != f.parent.UID {
				continue
			}
			_, err := compliance.Parse(&ev)
			g.Expect(err).NotTo(HaveOccurred())
			nanos, err := strconv.ParseInt(ev.Name[strings.LastIndex(ev.Name, ".")+1:], 16, 64)
			g.Expect(err).NotTo(HaveOccurred())
			out = append(out, sentEvent{message: ev.Message, at: time.Unix(0, nanos)})
		}
		slices.SortFunc(out, func(a, b sentEvent) int { return b.at.Compare(a.at) })
		return out
	}
}

// history returns a function that gets status.history of
// ConfigurationPolicy name as sentEvents, newest first.
func (f *fixture) history(name string) func(Gomega) []sentEvent {
	return func(g Gomega) []sentEvent {
		var out []sentEvent
		for _, h := range f.status(name)(g).History {
			out = append(out, sentEvent{message: h.Message, at: h.LastTimestamp.Time})
		}
		return out
	}
}

// truncatedToMicros returns events with their times cut to the
// microsecond that status.history keeps.
func truncatedToMicros(events []sentEvent) []sentEvent {
	out := slices.Clone(events)
	for i := range out {
		out[i].at = out[i].at.Truncate(time.Microsecond)
	}
	return out
}

// TestHistory: status.history holds each compliance message sent to the
// parent Policy, newest first, with the event's time, and at most 10. Field
// names, order and length are OCM's: config-policy-controller
// api/v1/configurationpolicy_types.go (ConfigurationPolicyStatus.History,
// HistoryEvent{lastTimestamp, message}) and
// controllers/configurationpolicy_controller.go (updatePolicyStatus:
// newest first, maxHistoryLength 10).
func TestHistory(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: hist}
spec:
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: hist, namespace: $NS}, data: {k: v}}`)
	notFound := "NonCompliant; violation - configmaps [hist] not found in namespace " + f.ns
	f.g.Eventually(f.history("hist"), eventually, poll).Should(HaveLen(1))
	f.g.Expect(f.history("hist")(f.g)[0].message).To(Equal(notFound))
	f.g.Expect(f.history("hist")(f.g)).To(Equal(truncatedToMicros(f.sent()(f.g))))

	f.object(&corev1.ConfigMap{}, `{metadata: {name: hist}, data: {k: v}}`)
	f.g.Eventually(f.history("hist"), eventually, poll).Should(HaveLen(2))
	f.g.Expect(f.history("hist")(f.g)[0].message).To(Equal(
		"Compliant; notification - configmaps [hist] found as specified in namespace " + f.ns))
	f.g.Expect(f.history("hist")(f.g)).To(Equal(truncatedToMicros(f.sent()(f.g))))

	// Twelve more changes: the history keeps the newest 10 events.
	for i := range 12 {
		value := map[bool]string{true: "v", false: "w"}[i%2 == 1]
		f.patchConfigMap("hist", map[string]string{"k": value})
		f.g.Eventually(f.sent(), eventually, poll).Should(HaveLen(3 + i))
	}
	f.g.Eventually(func(g Gomega) []sentEvent {
		return truncatedToMicros(f.sent()(g))[:policyv1.ConfigurationPolicyHistoryLimit]
	}, eventually, poll).Should(Equal(f.history("hist")(f.g)))
	f.g.Expect(f.history("hist")(f.g)).To(HaveLen(10))
}

// TestHistoryWithoutParent: a ConfigurationPolicy created by hand has no
// events, and its history still holds each new message, as OCM's does
// (updatePolicyStatus appends whether or not an event could be sent).
func TestHistoryWithoutParent(t *testing.T) {
	f := newFixture(t)
	p := &policyv1.ConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: f.ns},
		Spec: policyv1.ConfigurationPolicySpec{ObjectTemplates: []policyv1.ObjectTemplate{{
			ComplianceType: policyv1.MustNotHave,
			ObjectDefinition: rawJSON(f.g, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "unwanted", "namespace": f.ns}}),
		}}}}
	f.g.Expect(f.c.Create(t.Context(), p)).To(Succeed())
	f.g.Eventually(f.history("orphan"), eventually, poll).Should(HaveLen(1))
	f.g.Expect(f.history("orphan")(f.g)[0].message).To(Equal(
		"Compliant; notification - configmaps [unwanted] missing as expected in namespace " + f.ns))
	f.object(&corev1.ConfigMap{}, `{metadata: {name: unwanted}}`)
	f.g.Eventually(func(g Gomega) []string {
		var msgs []string
		for _, h := range f.history("orphan")(g) {
			msgs = append(msgs, h.message)
		}
		return msgs
	}, eventually, poll).Should(Equal([]string{
		"NonCompliant; violation - configmaps [unwanted] found in namespace " + f.ns,
		"Compliant; notification - configmaps [unwanted] missing as expected in namespace " + f.ns,
	}))
	f.g.Consistently(f.history("orphan"), quiet, poll).Should(HaveLen(2)) // no entry per evaluation
}

// TestMessageCap: a compliance message longer than 4096 bytes is cut to
// 4096, state included, ending with "...[truncated]", in the event and the
// history alike. Length and suffix are OCM's: config-policy-controller
// controllers/configurationpolicy_controller.go (updatePolicyStatus,
// maxMessageLength 4096, truncMsg "...[truncated]").
func TestMessageCap(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: long}
spec:
  customMessage:
    noncompliant: '{{ repeat 5000 "x" }}'
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: long, namespace: $NS}}`)
	want := "NonCompliant; " + strings.Repeat("x", 4096-len("NonCompliant; ")-len("...[truncated]")) + "...[truncated]"
	f.g.Eventually(f.sent(), eventually, poll).Should(HaveLen(1))
	f.g.Expect(f.sent()(f.g)[0].message).To(HaveLen(4096))
	f.g.Expect(f.sent()(f.g)[0].message).To(Equal(want))
	f.g.Eventually(f.history("long"), eventually, poll).Should(HaveLen(1))
	f.g.Expect(f.history("long")(f.g)[0].message).To(Equal(want))
}

// TestHistoryKeptAcrossSpecChange: a new spec is evaluated anew, and the
// history goes on (it is about the policy, not one generation).
func TestHistoryKeptAcrossSpecChange(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: gen}
spec:
  object-templates:
  - complianceType: mustnothave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: gen-a, namespace: $NS}}`)
	f.g.Eventually(f.history("gen"), eventually, poll).Should(HaveLen(1))
	f.updateSpec("gen", func(s *policyv1.ConfigurationPolicySpec) {
		s.ObjectTemplates[0].ComplianceType = policyv1.MustHave
	})
	f.g.Eventually(f.history("gen"), eventually, poll).Should(HaveLen(2))
	p := &policyv1.ConfigurationPolicy{}
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "gen"}, p)).To(Succeed())
	f.g.Expect(p.Status.History[0].Message).To(HavePrefix("NonCompliant; "))
	f.g.Expect(p.Status.History[1].Message).To(HavePrefix("Compliant; "))
}

// rawJSON is v as an object definition.
func rawJSON(g Gomega, v map[string]any) runtime.RawExtension {
	b, err := json.Marshal(v)
	g.Expect(err).NotTo(HaveOccurred())
	return runtime.RawExtension{Raw: b}
}
