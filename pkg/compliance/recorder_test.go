package compliance

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

func newPolicy(t *testing.T, c client.Client, ns, name string) *policyv1.Policy {
	t.Helper()
	p := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}},
	}
	if err := c.Create(t.Context(), p); err != nil {
		t.Fatalf("creating policy: %v", err)
	}
	return p
}

func eventsOf(t *testing.T, g Gomega, c client.Client, p *policyv1.Policy) []corev1.Event {
	list := &corev1.EventList{}
	g.Expect(c.List(t.Context(), list, client.InNamespace(p.Namespace))).To(Succeed())
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.UID == p.UID {
			out = append(out, ev)
		}
	}
	return out
}

// TestRecorder records a sequence of compliance states through recorders
// that restart, and checks that each change is recorded once.
func TestRecorder(t *testing.T) {
	g := NewWithT(t)
	cp := suite.Get(t)
	ns := controlplane.Namespace(t, cp.Client)
	policy := newPolicy(t, cp.Client, ns, "parent")
	parent := ParentFromPolicy(policy)
	template := types.NamespacedName{Namespace: ns, Name: "cfg"}
	related := &corev1.ObjectReference{Kind: "ConfigurationPolicy", Namespace: ns, Name: "cfg"}
	src := EventSource{Component: "canopy-agent", Instance: "test"}
	nonCompliant := Compliance{Template: template, State: policyv1.NonCompliant, Message: "violation - missing"}
	created := Compliance{Template: template, State: policyv1.Compliant, Message: "notification - created"}
	found := Compliance{Template: template, State: policyv1.Compliant, Message: "notification - found"}

	steps := []struct {
		c          Compliance
		remediated bool
		restart    bool
		want       bool
	}{
		{c: nonCompliant, want: true},
		{c: nonCompliant, want: false},
		{c: nonCompliant, restart: true, want: false}, // learnt from the API server
		{c: created, remediated: true, want: true},
		{c: found, restart: true, want: true},  // the fix settling, as OCM reports it
		{c: found, restart: true, want: false}, // learnt after a restart
		{c: found, want: false},
		{c: nonCompliant, want: true},
	}
	r := NewRecorder(cp.Client, cp.Client, src)
	for i, step := range steps {
		if step.restart {
			r = NewRecorder(cp.Client, cp.Client, src)
		}
		got, err := r.Record(t.Context(), parent, step.c, RecordOptions{Related: related, Remediated: step.remediated})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(step.want), "step %d", i)
	}

	events := eventsOf(t, g, cp.Client, policy)
	g.Expect(events).To(HaveLen(4))
	for _, ev := range events {
		g.Expect(ev.Reason).To(Equal("policy: " + ns + "/cfg"))
		g.Expect(ev.InvolvedObject.Name).To(Equal("parent"))
		g.Expect(ev.Related).To(Equal(related))
		g.Expect(ev.Source.Component).To(Equal("canopy-agent"))
		c, err := Parse(&ev)
		g.Expect(err).NotTo(HaveOccurred())
		switch c {
		case nonCompliant:
			g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
			g.Expect(ev.Action).To(Equal(ActionComplianceStateUpdate))
		case created:
			g.Expect(ev.Type).To(Equal(corev1.EventTypeNormal))
			g.Expect(ev.Action).To(Equal(ActionRemediate))
		case found:
			g.Expect(ev.Type).To(Equal(corev1.EventTypeNormal))
			g.Expect(ev.Action).To(Equal(ActionComplianceStateUpdate))
		default:
			t.Errorf("unexpected event %s: %q", ev.Name, ev.Message)
		}
	}
}

// TestRecorderVersions records the same compliance on successive versions
// of a template object: a new version is news, also after a restart (the
// version is read back from the event), and an event of unknown version (an
// older agent's) is not news by version alone.
func TestRecorderVersions(t *testing.T) {
	g := NewWithT(t)
	cp := suite.Get(t)
	ns := controlplane.Namespace(t, cp.Client)
	policy := newPolicy(t, cp.Client, ns, "parent")
	parent := ParentFromPolicy(policy)
	related := &corev1.ObjectReference{Kind: "ConfigurationPolicy", Namespace: ns, Name: "cfg", UID: "cfg-uid"}
	found := Compliance{Template: types.NamespacedName{Namespace: ns, Name: "cfg"}, State: policyv1.Compliant, Message: "notification - found"}
	src := EventSource{Component: "canopy-agent", Instance: "test"}

	steps := []struct {
		version string
		restart bool
		want    bool
	}{
		{version: "", want: true}, // the first event, of an agent that knew no versions
		{version: "v1", restart: true, want: false},
		{version: "v1", want: false},
		{version: "v2", want: true},
		{version: "v2", restart: true, want: false},
		{version: "v3", restart: true, want: true},
		{version: "", want: false},
	}
	r := NewRecorder(cp.Client, cp.Client, src)
	for i, step := range steps {
		if step.restart {
			r = NewRecorder(cp.Client, cp.Client, src)
		}
		got, err := r.Record(t.Context(), parent, found, RecordOptions{Related: related, Version: step.version})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(step.want), "step %d", i)
	}
	var versions []string
	for _, ev := range eventsOf(t, g, cp.Client, policy) {
		versions = append(versions, ev.Annotations[TemplateVersionAnnotation])
	}
	g.Expect(versions).To(ConsistOf("", "v2", "v3"))
}

func TestParentOf(t *testing.T) {
	cp := suite.Get(t)
	ns := controlplane.Namespace(t, cp.Client)
	policy := newPolicy(t, cp.Client, ns, "parent")
	owner := metav1.OwnerReference{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Name: "owner", UID: "owner-uid"}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "Policy", Name: "x", UID: "x"}
	tests := []struct {
		name string
		meta metav1.ObjectMeta
		want *Parent
	}{
		{name: "owner reference", meta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{other, owner}},
			want: &Parent{Namespace: ns, Name: "owner", UID: "owner-uid"}},
		{name: "label", meta: metav1.ObjectMeta{Labels: map[string]string{policyv1.PolicyLabel: "parent"}},
			want: &Parent{Namespace: ns, Name: "parent", UID: policy.UID}},
		{name: "label of a missing policy", meta: metav1.ObjectMeta{Labels: map[string]string{policyv1.PolicyLabel: "gone"}}},
		{name: "no parent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := &policyv1.ConfigurationPolicy{ObjectMeta: tt.meta}
			tmpl.Namespace = ns
			got, err := ParentOf(t.Context(), cp.Client, tmpl)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// TestRecorderStaleEvents: a Recorder restarted after a stale event (about
// an object deleted since) goes on from templatesync's last event, and
// records it again only when the status shows the stale one.
func TestRecorderStaleEvents(t *testing.T) {
	g := NewWithT(t)
	cp := suite.Get(t)
	ns := controlplane.Namespace(t, cp.Client)
	parent := ParentFromPolicy(newPolicy(t, cp.Client, ns, "parent"))
	template := types.NamespacedName{Namespace: ns, Name: "cfg"}
	src := EventSource{Component: "canopy-agent", Instance: "test"}
	pending := Compliance{Template: template, State: policyv1.Pending, Message: "Dependencies were not satisfied: 1 is still pending (Policy a)"}
	ref := TemplateRef(policyv1.GroupVersion.WithKind("ConfigurationPolicy"), ns, "cfg")

	r := NewRecorder(cp.Client, cp.Client, src)
	g.Expect(r.Record(t.Context(), parent, pending, RecordOptions{Related: ref})).To(BeTrue())
	events := &corev1.EventList{}
	g.Expect(cp.Client.List(t.Context(), events, client.InNamespace(ns))).To(Succeed())
	g.Expect(events.Items).To(HaveLen(1))
	own := events.Items[0]
	stale := NewEvent(parent, Compliance{Template: template, State: policyv1.Compliant, Message: "ok"}, src,
		&corev1.ObjectReference{Kind: "ConfigurationPolicy", Namespace: ns, Name: "cfg", UID: "deleted"}, false, own.LastTimestamp.Add(time.Second))
	g.Expect(cp.Client.Create(t.Context(), stale)).To(Succeed())

	shown := func(ev *corev1.Event) *policyv1.ComplianceHistory {
		return &policyv1.ComplianceHistory{LastTimestamp: ev.LastTimestamp, Message: ev.Message, EventName: ev.Name}
	}
	r = NewRecorder(cp.Client, cp.Client, src)
	r.now = func() time.Time { return own.LastTimestamp.Add(2 * time.Second) } // the stale event arrived late
	g.Expect(r.Record(t.Context(), parent, pending, RecordOptions{Related: ref, Visible: shown(&own)})).To(BeFalse(),
		"the last event that counts is the Pending one, which the status shows")
	g.Expect(r.Record(t.Context(), parent, pending, RecordOptions{Related: ref, Visible: shown(stale)})).To(BeTrue(),
		"the status shows the stale event")
	g.Expect(r.Record(t.Context(), parent, pending, RecordOptions{Related: ref, Visible: shown(stale)})).To(BeFalse(),
		"the status lags behind the Pending event just written")
}

// listCounter counts the lists that reach the API server through it.
type listCounter struct {
	client.Reader
	lists atomic.Int32
}

func (c *listCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists.Add(1)
	return c.Reader.List(ctx, list, opts...)
}

// TestRecorderLearnsANamespaceOnce restarts a Recorder over a namespace
// with many templates' events and checks that it reads them with one list
// (not one per template), concurrently, and still goes on from each
// template's last event: only the templates whose state changed get one.
func TestRecorderLearnsANamespaceOnce(t *testing.T) {
	g := NewWithT(t)
	cp := suite.Get(t)
	ns := controlplane.Namespace(t, cp.Client)
	parent := ParentFromPolicy(newPolicy(t, cp.Client, ns, "parent"))
	src := EventSource{Component: "canopy-agent", Instance: "test"}
	const templates = 40
	state := func(i int, s policyv1.ComplianceState) Compliance {
		return Compliance{Template: types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("cfg-%d", i)}, State: s, Message: "m"}
	}
	related := func(i int) RecordOptions {
		ref := TemplateRef(policyv1.GroupVersion.WithKind("ConfigurationPolicy"), ns, fmt.Sprintf("cfg-%d", i))
		ref.UID = types.UID(fmt.Sprintf("uid-%d", i))
		return RecordOptions{Related: ref}
	}
	first := NewRecorder(cp.Client, cp.Client, src)
	for i := range templates {
		g.Expect(first.Record(t.Context(), parent, state(i, policyv1.NonCompliant), related(i))).To(BeTrue())
	}

	reader := &listCounter{Reader: cp.Client}
	restarted := NewRecorder(cp.Client, reader, src)
	var wg sync.WaitGroup
	wrote := make([]bool, templates)
	for i := range templates {
		wg.Go(func() {
			next := policyv1.NonCompliant
			if i%2 == 0 {
				next = policyv1.Compliant
			}
			var err error
			wrote[i], err = restarted.Record(t.Context(), parent, state(i, next), related(i))
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
	wg.Wait()
	g.Expect(reader.lists.Load()).To(BeEquivalentTo(1), "one list for the namespace")
	for i := range templates {
		g.Expect(wrote[i]).To(Equal(i%2 == 0), "template %d: an event only when its state changed", i)
	}
	g.Expect(eventsOf(t, g, cp.Client, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, UID: parent.UID}})).
		To(HaveLen(templates + templates/2))

	// A forgotten stream (its template deleted) is read again from the API
	// server: the same state again is no news.
	restarted.Forget(state(0, "").Template)
	g.Expect(restarted.Record(t.Context(), parent, state(0, policyv1.Compliant), related(0))).To(BeFalse())
	g.Expect(reader.lists.Load()).To(BeEquivalentTo(2))
}
