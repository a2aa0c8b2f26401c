package statussync

import (
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/replica"
)

// recordVersion creates, with l's client, the compliance event of template
// of p at second s, about related (nil: templatesync's, by name), of the
// template version version.
func (l *local) recordVersion(p *policyv1.Policy, template string, related *corev1.ObjectReference, version string, s int) *corev1.Event {
	l.t.Helper()
	if related == nil {
		related = compliance.TemplateRef(configurationPolicy, p.Namespace, template)
	}
	ev := compliance.NewEvent(compliance.ParentFromPolicy(p), compliance.Compliance{
		Template: types.NamespacedName{Namespace: p.Namespace, Name: template}, State: policyv1.Compliant, Message: "ok",
	}, source, related, false, at(s))
	ev.Annotations = map[string]string{compliance.TemplateVersionAnnotation: version}
	create(l.t, l.c, ev)
	return ev
}

// stampTemplate sets on obj the version and Policy generation templatesync
// writes.
func (l *local) stampTemplate(obj *policyv1.ConfigurationPolicy, version string, generation int64) {
	l.t.Helper()
	l.g.Eventually(func() error {
		if err := l.c.Get(l.t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		obj.Annotations = map[string]string{compliance.TemplateHashAnnotation: version,
			replica.PolicyGenerationAnnotation: strconv.FormatInt(generation, 10)}
		return l.c.Update(l.t.Context(), obj)
	}).Should(Succeed())
}

// evaluated reads p's status.evaluatedGeneration and whether
// ConditionEvaluated is True for p's current generation.
func (l *local) evaluated(p *policyv1.Policy) func(Gomega) []any {
	return func(g Gomega) []any {
		current := &policyv1.Policy{}
		g.Expect(l.c.Get(l.t.Context(), client.ObjectKeyFromObject(p), current)).To(Succeed())
		c := meta.FindStatusCondition(current.Status.Conditions, ConditionEvaluated)
		return []any{current.Status.EvaluatedGeneration, c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == current.Generation}
	}
}

// TestLocalEvaluatedGeneration: a local copy of a replica reports the
// replica's generation as evaluated once every template's newest event is
// about the Policy's current generation: an evaluator's report on the
// object templatesync wrote for it (its UID and version), or templatesync's
// own for a template without an object. A new generation resets it until
// each template reports again, also a change that leaves the template
// objects' content as it was; events that expire later leave it as it is.
func TestLocalEvaluatedGeneration(t *testing.T) {
	l := newLocal(t)
	p := newPolicy(l.ns, "p", "a", "b")
	p.Annotations = map[string]string{replica.GenerationAnnotation: "7"}
	create(t, l.c, p)
	obj := newTemplate(t, l.c, l.ns, "a", "p")
	l.stampTemplate(obj, "h1", p.Generation)
	l.recordVersion(p, "a", about(obj.UID), "h1", 1)
	l.g.Consistently(l.evaluated(p)).WithTimeout(2*time.Second).Should(Equal([]any{int64(0), false}), "b has not reported")
	l.recordVersion(p, "b", nil, replica.TemplateSyncVersion(p.Generation), 2)
	l.g.Eventually(l.evaluated(p)).Should(Equal([]any{int64(7), true}))

	l.g.Eventually(func() error { // Note: a new generation, as specsync writes it: only ignorePending changed
		if err := l.c.Get(t.Context(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Spec.PolicyTemplates[0].IgnorePending = true
		p.Annotations[replica.GenerationAnnotation] = "8"
		return l.c.Update(t.Context(), p)
	}).Should(Succeed())
	l.g.Eventually(l.evaluated(p)).Should(Equal([]any{int64(0), false}))
	l.stampTemplate(obj, "h2", p.Generation)
	l.recordVersion(p, "a", about(obj.UID), "h2", 3)
	l.recordVersion(p, "b", nil, replica.TemplateSyncVersion(p.Generation-1), 4)
	l.g.Consistently(l.evaluated(p)).WithTimeout(2*time.Second).Should(Equal([]any{int64(0), false}), "b reported on the previous generation")
	l.recordVersion(p, "b", nil, replica.TemplateSyncVersion(p.Generation), 5)
	l.g.Eventually(l.evaluated(p)).Should(Equal([]any{int64(8), true}))

	l.g.Expect(l.c.DeleteAllOf(t.Context(), &corev1.Event{}, client.InNamespace(l.ns))).To(Succeed())
	l.g.Consistently(l.evaluated(p)).WithTimeout(2*time.Second).Should(Equal([]any{int64(8), true}), "expired events")
}

// TestEvaluatedGenerationSent: the hub gets the local
// status.evaluatedGeneration only while ConditionEvaluated was computed
// for the local Policy's current generation.
func TestEvaluatedGenerationSent(t *testing.T) {
	local := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	local.Status.EvaluatedGeneration = 7
	g := NewWithT(t)
	g.Expect(EvaluatedGeneration(local)).To(BeZero(), "not computed yet")
	meta.SetStatusCondition(&local.Status.Conditions, metav1.Condition{Type: ConditionEvaluated, Status: metav1.ConditionTrue,
		ObservedGeneration: 3, Reason: ReasonAllTemplatesReported})
	g.Expect(EvaluatedGeneration(local)).To(BeEquivalentTo(7))
	local.Generation = 4
	g.Expect(EvaluatedGeneration(local)).To(BeZero(), "computed for the previous spec")
}

// TestEvaluated: a Policy is evaluated when every template's newest event
// reports on the Policy's current generation.
func TestEvaluated(t *testing.T) {
	p := newPolicy("c1", "p", "a")
	p.UID, p.Generation = "p-uid", 2
	other := newPolicy("c1", "p", "w")
	other.Spec.PolicyTemplates[0].ObjectDefinition.Raw = []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`)
	other.UID, other.Generation = "p-uid", 2
	event := func(template string, related *corev1.ObjectReference, version string, s int) corev1.Event {
		ev := compliance.NewEvent(compliance.Parent{Namespace: "c1", Name: "p", UID: "p-uid"}, compliance.Compliance{
			Template: types.NamespacedName{Namespace: "c1", Name: template}, State: policyv1.Compliant, Message: "ok"}, source, related, false, at(s))
		ev.Annotations = map[string]string{compliance.TemplateVersionAnnotation: version}
		return *ev
	}
	byName := compliance.TemplateRef(configurationPolicy, "c1", "a")
	object := map[string]TemplateObject{"a": {UID: "obj", Version: "h2", PolicyGeneration: 2}}
	for _, tc := range []struct {
		name    string
		policy  *policyv1.Policy
		events  []corev1.Event
		objects map[string]TemplateObject
		want    bool
	}{
		{"no template has nothing to evaluate", newPolicy("c1", "p"), nil, nil, true},
		{"no report yet", p, nil, object, false},
		{"the evaluator's report on the object of this generation", p, []corev1.Event{event("a", about("obj"), "h2", 1)}, object, true},
		{"a report on an earlier version", p, []corev1.Event{event("a", about("obj"), "h1", 1)}, object, false},
		{"an object written for the previous generation", p, []corev1.Event{event("a", about("obj"), "h2", 1)},
			map[string]TemplateObject{"a": {UID: "obj", Version: "h2", PolicyGeneration: 1}}, false},
		{"templatesync's newer report while the object is still there", p,
			[]corev1.Event{event("a", about("obj"), "h2", 1), event("a", byName, replica.TemplateSyncVersion(2), 2)}, object, false},
		{"templatesync's report on this generation, no object", p, []corev1.Event{event("a", byName, replica.TemplateSyncVersion(2), 1)}, nil, true},
		{"templatesync's report on the previous generation", p, []corev1.Event{event("a", byName, replica.TemplateSyncVersion(1), 1)}, nil, false},
		{"a kind statussync does not read needs a report", other, []corev1.Event{event("w", nil, "", 1)}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Evaluated(tc.policy, tc.events, tc.objects)).To(Equal(tc.want))
		})
	}
}
