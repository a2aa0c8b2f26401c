package templatesync_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/spoke/statussync"
	"github.com/canopy-policy/canopy/pkg/spoke/templatesync"
)

// TestRecreatedDependencyGates: a dependency deleted and recreated under
// the same name while statussync computes the old one's status (Compliant)
// gates its dependants as a dependency never evaluated: the dependant's
// template is not created until the new dependency reports Compliant.
func TestRecreatedDependencyGates(t *testing.T) {
	g := NewWithT(t)
	managed := suite.Get(t).Cluster("managed")
	c := managed.Client
	ns := controlplane.Namespace(t, c)
	var recreate atomic.Pointer[func()] // run once, inside the events List that sees the trigger
	stop, err := controlplane.StartManager(managed.Config, manager.Options{}, func(m ctrl.Manager) error {
		rec := compliance.NewRecorder(m.GetClient(), m.GetAPIReader(), compliance.EventSource{Component: "canopy-agent", Instance: "test"})
		if err := (&templatesync.Reconciler{ManagedClient: m.GetClient(), Recorder: rec, Namespace: ns}).SetupWithManager(m); err != nil {
			return err
		}
		hooked := interceptor.NewClient(noWatch{m.GetClient()}, interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if err := c.List(ctx, list, opts...); err != nil {
					return err
				}
				if events, ok := list.(*corev1.EventList); ok && slices.ContainsFunc(events.Items, isTrigger) {
					if f := recreate.Swap(nil); f != nil {
						(*f)()
					}
				}
				return nil
			},
		})
		return (&statussync.Reconciler{ManagedClient: hooked, Namespace: ns}).SetupWithManager(m)
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(stop()).To(Succeed()) })

	dependency := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dep"}}
	dependency.Spec.PolicyTemplates = []policyv1.PolicyTemplate{cfgPolicy("dep-t").entry()}
	g.Expect(c.Create(t.Context(), dependency)).To(Succeed())
	report(t, c, dependency, "dep-t", "ok", 1)
	g.Eventually(policyCompliance(t, c, ns, "dep")).Should(Equal(policyv1.Compliant))

	recreated := make(chan error, 1)
	f := func() {
		successor := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dep"}, Spec: dependency.Spec}
		err := c.Delete(t.Context(), dependency)
		if err == nil {
			err = c.Create(t.Context(), successor)
		}
		recreated <- err
	}
	recreate.Store(&f)
	// statussync reads dep, lists its events, finds this one: dep is
	// recreated then, before statussync writes the status it computes.
	report(t, c, dependency, "dep-t", "trigger", 2)
	g.Eventually(recreated).Should(Receive(Succeed()), "the recreation, inside statussync's reconcile")

	dependant := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "top"}}
	dependant.Spec.Dependencies = []policyv1.PolicyDependency{dep("Policy", "dep", policyv1.Compliant)}
	dependant.Spec.PolicyTemplates = []policyv1.PolicyTemplate{cfgPolicy("top-t").entry()}
	g.Expect(c.Create(t.Context(), dependant)).To(Succeed())
	exists := func() (bool, error) {
		err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "top-t"}, &policyv1.ConfigurationPolicy{})
		return err == nil, client.IgnoreNotFound(err)
	}
	g.Consistently(exists).WithTimeout(5*time.Second).Should(BeFalse(),
		"the dependant's template, before its recreated dependency reported anything")

	successor := &policyv1.Policy{}
	g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(dependency), successor)).To(Succeed())
	report(t, c, successor, "dep-t", "ok again", 3)
	g.Eventually(exists).WithTimeout(time.Minute).Should(BeTrue(), "the dependant's template, once the dependency is Compliant")
}

// isTrigger tells the event TestRecreatedDependencyGates recreates its
// dependency on.
func isTrigger(ev corev1.Event) bool { return ev.Message == "Compliant; trigger" }

// report records, with c, that template of Policy p is Compliant with msg,
// at second s of the test's fixed past time.
func report(t *testing.T, c client.Client, p *policyv1.Policy, template, msg string, s int) {
	t.Helper()
	kind := policyv1.GroupVersion.WithKind("ConfigurationPolicy")
	ev := compliance.NewEvent(compliance.ParentFromPolicy(p), compliance.Compliance{
		Template: types.NamespacedName{Namespace: p.Namespace, Name: template}, State: policyv1.Compliant, Message: msg,
	}, compliance.EventSource{Component: "canopy-agent", Instance: "test"}, compliance.TemplateRef(kind, p.Namespace, template), false,
		time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC))
	NewWithT(t).Expect(c.Create(t.Context(), ev)).To(Succeed())
}

// policyCompliance reads the compliance of Policy ns/name.
func policyCompliance(t *testing.T, c client.Client, ns, name string) func(Gomega) policyv1.ComplianceState {
	return func(g Gomega) policyv1.ComplianceState {
		p := &policyv1.Policy{}
		g.Expect(c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, p)).To(Succeed())
		return p.Status.ComplianceState
	}
}

// noWatch is a client.Client as interceptor wants it, a client.WithWatch:
// the controller never watches through its client.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, context.Canceled
}
