package statussync

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// TestHandedOverEvent: a compliance event written through Writer is
// reported in the Policy's status without its informer: the controller
// runs here with an Event cache that never holds a compliance event, so
// only the hand-over can tell it.
func TestHandedOverEvent(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := suite.Get(t).Managed[0].Client
	ns := controlplane.Namespace(t, c)
	var rec *compliance.Recorder
	opts := manager.Options{}
	opts.Cache.ByObject = map[client.Object]cache.ByObject{
		&corev1.Event{}: {Field: fields.OneTermEqualSelector("reason", "never a compliance event")},
	}
	run(t, suite.Get(t).Managed[0].Config, opts, func(m ctrl.Manager) error {
		r := &Reconciler{ManagedClient: m.GetClient(), Namespace: ns}
		if err := r.SetupWithManager(m); err != nil {
			return err
		}
		rec = compliance.NewRecorder(r.Writer(m.GetClient(), ns), m.GetAPIReader(), source)
		return nil
	})
	p := newPolicy(ns, "p", "a")
	create(t, c, p)
	g.Eventually(status(t, c, p)).Should(HaveField("Details", HaveLen(1)), "the controller runs")

	template := types.NamespacedName{Namespace: ns, Name: "a"}
	_, err := rec.Record(t.Context(), compliance.ParentFromPolicy(p),
		compliance.Compliance{Template: template, State: policyv1.Compliant, Message: "ok"},
		compliance.RecordOptions{Related: compliance.TemplateRef(configurationPolicy, ns, "a")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(status(t, c, p)).Should(HaveField("ComplianceState", policyv1.Compliant))
}

// TestFreshEvents: the events handed over are added to those the informer
// holds until it holds them, or for freshTTL.
func TestFreshEvents(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	ev := func(name string, policy types.UID) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}, InvolvedObject: corev1.ObjectReference{UID: policy}}
	}
	names := func(events []corev1.Event) []string {
		var out []string
		for _, e := range events {
			out = append(out, e.Name)
		}
		return out
	}
	var f freshEvents
	f.add(ev("old", "p"), now.Add(-freshTTL))
	f.add(ev("cached", "p"), now)
	f.add(ev("new", "p"), now)
	f.add(ev("other", "q"), now)

	g.Expect(names(f.with("p", []corev1.Event{*ev("cached", "p")}, now))).To(Equal([]string{"cached", "new"}),
		"the informer's events, and the new one it does not hold yet; not the expired one")
	g.Expect(names(f.with("p", nil, now))).To(Equal([]string{"new"}), "the one the informer held is forgotten")
	g.Expect(names(f.with("p", nil, now.Add(freshTTL)))).To(BeEmpty(), "expired")
	g.Expect(f.byPolicy).To(HaveKey(types.UID("q")), "another Policy's events wait for its reconcile")
	f.add(ev("later", "p"), now.Add(2*freshTTL))
	g.Expect(f.byPolicy).NotTo(HaveKey(types.UID("q")), "swept once expired")
}

// createOnly is a Writer whose Create succeeds and writes nothing.
type createOnly struct{ client.Writer }

func (createOnly) Create(context.Context, client.Object, ...client.CreateOption) error { return nil }

// TestWriterHandsOverItsNamespace: only the compliance events of the
// namespace the informer holds are handed over.
func TestWriterHandsOverItsNamespace(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{handedOver: make(chan ctrlevent.GenericEvent, 10)}
	w := r.Writer(createOnly{}, "cluster")
	p := newPolicy("cluster", "p", "a")
	p.UID = "uid"
	ev := func(namespace string) *corev1.Event {
		e := compliance.NewEvent(compliance.ParentFromPolicy(p), compliance.Compliance{
			Template: types.NamespacedName{Namespace: namespace, Name: "a"}, State: policyv1.Compliant, Message: "ok",
		}, source, nil, false, at(1))
		e.Namespace = namespace
		return e
	}
	g.Expect(w.Create(t.Context(), ev("cluster"))).To(Succeed())
	g.Expect(w.Create(t.Context(), ev("elsewhere"))).To(Succeed())
	g.Expect(w.Create(t.Context(), newPolicy("cluster", "q"))).To(Succeed())
	g.Expect(r.handedOver).To(HaveLen(1))
	g.Expect((<-r.handedOver).Object.GetNamespace()).To(Equal("cluster"))
	g.Expect(r.fresh.byPolicy).To(HaveKeyWithValue(types.UID("uid"), HaveLen(1)))
}
