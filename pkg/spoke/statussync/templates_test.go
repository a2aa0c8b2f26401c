package statussync

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// about returns the related object of an evaluator's report on the
// template object with uid.
func about(uid types.UID) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: configurationPolicy.GroupVersion().String(), Kind: configurationPolicy.Kind, Name: "t1", UID: uid}
}

// TestCurrentEvents: an evaluator's event counts while its object is
// the template's now, templatesync's always, one that names no object only
// while an object exists; the others are ignored.
func TestCurrentEvents(t *testing.T) {
	with := func(ev corev1.Event, related *corev1.ObjectReference) corev1.Event {
		ev.Related = related
		return ev
	}
	pending := with(event("a", "t1", "Pending; waiting", 1), compliance.TemplateRef(configurationPolicy, "c1", "t1"))
	deleted := with(event("a", "t1", "Compliant; deleted object", 2), about("w"))
	foreign := with(event("a", "t1", "Compliant; foreign object", 3), about("foreign"))
	anonymous := with(event("a", "t1", "Compliant; no object named", 4), nil)
	current := with(event("a", "t1", "Compliant; current object", 5), about("x"))
	events := []corev1.Event{pending, deleted, foreign, anonymous, current}
	messages := func(events []corev1.Event) []string {
		var out []string
		for _, ev := range events {
			out = append(out, ev.Message)
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		objects     map[string]types.UID
		want        []string
		wantIgnored int
	}{
		{"the template absent", nil, []string{"Pending; waiting"}, 4},
		{"the template recreated", map[string]types.UID{"t1": "x"},
			[]string{"Pending; waiting", "Compliant; no object named", "Compliant; current object"}, 2},
		{"another template's object", map[string]types.UID{"t2": "w"}, []string{"Pending; waiting"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			current, ignored := CurrentEvents("uid-a", append(events, event("b", "t1", "Compliant; another policy's", 6)), tc.objects)
			g.Expect(messages(current)).To(Equal(tc.want))
			g.Expect(ignored).To(HaveLen(tc.wantIgnored))
		})
	}
}

// TestContradicted: the templates whose events the objects read contradict,
// once each, leaving out UIDs known gone.
func TestContradicted(t *testing.T) {
	g := NewWithT(t)
	ev := func(template string, related *corev1.ObjectReference, s int) corev1.Event {
		e := event("a", template, "Compliant; ok", s)
		e.Related = related
		return e
	}
	events := []corev1.Event{
		ev("t1", about("w"), 1), ev("t1", about("v"), 2), ev("t2", about("x"), 3), ev("t3", nil, 4),
		ev("t4", compliance.TemplateRef(configurationPolicy, "c1", "t4"), 5), event("b", "t5", "Compliant; another policy's", 6),
	}
	objects := map[string]types.UID{"t2": "x"}
	none := func(types.UID) bool { return false }
	g.Expect(Contradicted("uid-a", events, objects, none)).To(Equal([]string{"t1", "t3"}))
	g.Expect(Contradicted("uid-a", events, objects, func(uid types.UID) bool { return uid == "w" || uid == "v" })).To(Equal([]string{"t3"}))
	g.Expect(staleUIDs("uid-a", events, "t1", "v")).To(Equal([]types.UID{"w"}))
}

// newTemplate creates the ConfigurationPolicy name of Policy owner (by the
// policy label) in ns, and returns it.
func newTemplate(t *testing.T, c client.Client, ns, name, owner string) *policyv1.ConfigurationPolicy {
	t.Helper()
	cp := &policyv1.ConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{policyv1.PolicyLabel: owner}}}
	cp.Spec.RemediationAction = policyv1.Inform
	cp.Spec.ObjectTemplates = []policyv1.ObjectTemplate{{ComplianceType: policyv1.MustHave,
		ObjectDefinition: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)}}}
	create(t, c, cp)
	return cp
}

// TestLocalStaleEvents: once a template is Pending (its object deleted), a
// late Compliant report on the deleted object, one on a foreign object and
// one that names no object leave it Pending; a report on the recreated
// object counts.
func TestLocalStaleEvents(t *testing.T) {
	l := newLocal(t)
	p := l.policy("p", "a")
	obj := newTemplate(t, l.c, l.ns, "a", "p")
	ok := recordAbout(t, l.c, p, "a", about(obj.UID), policyv1.Compliant, "ok", at(1))
	l.g.Eventually(l.status(p)).Should(HaveField("ComplianceState", policyv1.Compliant))

	l.g.Expect(l.c.Delete(t.Context(), obj)).To(Succeed())
	waiting := l.record(p, "a", policyv1.Pending, "waiting", 2)
	want := policyv1.PolicyStatus{
		ComplianceState: policyv1.Pending,
		Details:         []policyv1.DetailsPerTemplate{detail("a", policyv1.Pending, waiting, ok)},
	}
	l.g.Eventually(l.status(p)).Should(BeComparableTo(want))
	recordAbout(t, l.c, p, "a", about(obj.UID), policyv1.Compliant, "late, about the deleted object", at(3))
	recordAbout(t, l.c, p, "a", about("foreign"), policyv1.Compliant, "about a foreign object", at(4))
	recordAbout(t, l.c, p, "a", nil, policyv1.Compliant, "about no object", at(5))
	l.g.Consistently(l.status(p)).WithTimeout(3 * time.Second).Should(BeComparableTo(want))

	again := newTemplate(t, l.c, l.ns, "a", "p")
	recreated := recordAbout(t, l.c, p, "a", about(again.UID), policyv1.Compliant, "ok again", at(6))
	l.g.Eventually(l.status(p)).Should(HaveField("Details", HaveExactElements(HaveField("History", HaveExactElements(
		entry(recreated), HaveField("Message", "Compliant; about no object"), entry(waiting), entry(ok))))))
}

// TestLocalTemplateOfAnotherPolicy: an object of the template's name that
// belongs to another Policy is not the template's object.
func TestLocalTemplateOfAnotherPolicy(t *testing.T) {
	l := newLocal(t)
	p := l.policy("p", "a")
	obj := newTemplate(t, l.c, l.ns, "a", "other")
	waiting := l.record(p, "a", policyv1.NonCompliant, "the name is taken", 1)
	recordAbout(t, l.c, p, "a", about(obj.UID), policyv1.Compliant, "about the other policy's object", at(2))
	want := policyv1.PolicyStatus{
		ComplianceState: policyv1.NonCompliant,
		Details:         []policyv1.DetailsPerTemplate{detail("a", policyv1.NonCompliant, waiting)},
	}
	l.g.Eventually(l.status(p)).Should(BeComparableTo(want))
	l.g.Consistently(l.status(p)).Should(BeComparableTo(want))
}

// laggingCache is a cache that has not seen any template object yet.
type laggingCache struct{ client.Reader }

func (laggingCache) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: policyv1.GroupName, Resource: "configurationpolicies"}, key.Name)
}

// countingReader counts the reads of the API server of objects named b.
type countingReader struct {
	client.Reader
	readsOfB atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key.Name == "b" {
		c.readsOfB.Add(1)
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestLocalCacheLagging: a report on a template object the cache does not
// hold yet counts once the API server shows the object; a stale report
// costs one API read, not one per reconcile.
func TestLocalCacheLagging(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := suite.Get(t).Managed[0].Client
	ns := controlplane.Namespace(t, c)
	p := newPolicy(ns, "p", "a", "b")
	create(t, c, p)
	obj := newTemplate(t, c, ns, "a", "p")
	api := &countingReader{Reader: c}
	r := &Reconciler{ManagedClient: c, ManagedReader: api, templates: laggingCache{}, scheme: c.Scheme()}
	reconcile := func() policyv1.PolicyStatus {
		_, err := r.Reconcile(ctrl.LoggerInto(t.Context(), ctrl.Log), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
		g.Expect(err).NotTo(HaveOccurred())
		return status(t, c, p)(g)
	}

	fresh := recordAbout(t, c, p, "a", about(obj.UID), policyv1.Compliant, "ok", at(1))
	recordAbout(t, c, p, "b", about("deleted"), policyv1.Compliant, "stale", at(2))
	g.Eventually(func() []policyv1.ComplianceHistory { return detailOf(reconcile(), "a").History }).
		Should(HaveExactElements(entry(fresh)))
	g.Expect(detailOf(reconcile(), "b").History).To(BeEmpty())
	reads := api.readsOfB.Load()
	g.Expect(reads).To(BeNumerically(">", 0))
	reconcile()
	g.Expect(api.readsOfB.Load()).To(Equal(reads), "the API server showed the UID gone: no second look")
}

// detailOf returns the detail of template in s.
func detailOf(s policyv1.PolicyStatus, template string) policyv1.DetailsPerTemplate {
	for _, d := range s.Details {
		if d.TemplateMeta.Name == template {
			return d
		}
	}
	return policyv1.DetailsPerTemplate{}
}
