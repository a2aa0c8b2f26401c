package statussync

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// TestLocalRecreatedWhileComputing: a Policy deleted and recreated under
// the same name while statussync computes a status for the old one (it
// has read the old Policy and lists its events when the recreation
// happens) never gets that status: the write is refused (the UID is
// another) and the successor's status is its own, with no history.
func TestLocalRecreatedWhileComputing(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := suite.Get(t).Managed[0].Client
	ns := controlplane.Namespace(t, c)
	var recreate atomic.Pointer[func()] // run once, inside the next events List
	run(t, suite.Get(t).Managed[0].Config, manager.Options{}, func(m ctrl.Manager) error {
		managed := intercept(m.GetClient(), interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if err := c.List(ctx, list, opts...); err != nil {
					return err
				}
				if events, ok := list.(*corev1.EventList); ok && slices.ContainsFunc(events.Items, isOK) {
					if f := recreate.Swap(nil); f != nil {
						(*f)()
					}
				}
				return nil
			},
		})
		return (&Reconciler{ManagedClient: managed, Namespace: ns}).SetupWithManager(m)
	})

	p := newPolicy(ns, "p", "a")
	create(t, c, p)
	record(t, c, p, "a", policyv1.NonCompliant, "bad", at(1))
	g.Eventually(status(t, c, p)).Should(HaveField("ComplianceState", policyv1.NonCompliant))

	seen := watchStatuses(t, ns)
	recreated := make(chan error, 1)
	f := func() { recreated <- recreatePolicy(t.Context(), c, p) }
	recreate.Store(&f)
	// statussync reads p, lists its events, finds this one: p is recreated
	// then, before statussync writes the status it computes for p.
	record(t, c, p, "a", policyv1.Compliant, "ok", at(2))
	g.Eventually(recreated).Should(Receive(Succeed()), "the recreation, inside statussync's reconcile")

	want := policyv1.PolicyStatus{Details: []policyv1.DetailsPerTemplate{detail("a", "")}}
	g.Eventually(status(t, c, p)).Should(BeComparableTo(want))
	g.Consistently(status(t, c, p)).Should(BeComparableTo(want))
	successor := &policyv1.Policy{}
	g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(p), successor)).To(Succeed())
	g.Expect(seen(successor.UID)).To(HaveEach(SatisfyAll(HaveField("ComplianceState", BeEmpty()), WithTransform(history, BeEmpty()))),
		"every status the successor had: no compliance, no history")
}

// watchStatuses watches the Policies of namespace ns until the test ends;
// the function it returns lists every status the Policy with a UID had,
// in order.
func watchStatuses(t *testing.T, ns string) func(types.UID) []policyv1.PolicyStatus {
	t.Helper()
	g := NewWithT(t)
	c, err := client.NewWithWatch(suite.Get(t).Managed[0].Config, client.Options{Scheme: controlplane.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := c.Watch(t.Context(), &policyv1.PolicyList{}, client.InNamespace(ns))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	seen := map[types.UID][]policyv1.PolicyStatus{}
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*policyv1.Policy); ok {
				mu.Lock()
				seen[p.UID] = append(seen[p.UID], p.Status)
				mu.Unlock()
			}
		}
	}()
	return func(uid types.UID) []policyv1.PolicyStatus {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen[uid])
	}
}

// history is every history entry of s.
func history(s policyv1.PolicyStatus) []policyv1.ComplianceHistory {
	var h []policyv1.ComplianceHistory
	for _, d := range s.Details {
		h = append(h, d.History...)
	}
	return h
}

// isOK tells the test's second event.
func isOK(ev corev1.Event) bool { return ev.Message == "Compliant; ok" }

// recreatePolicy deletes p and creates a Policy of the same name and spec.
func recreatePolicy(ctx context.Context, c client.Client, p *policyv1.Policy) error {
	if err := c.Delete(ctx, p); err != nil {
		return err
	}
	successor := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels}, Spec: p.Spec}
	return c.Create(ctx, successor) // no finalizer: the predecessor is gone when Delete returns
}

// TestHubRecreatedReplica: a replica deleted and recreated under the same
// name after the hub controller read it never gets the status sent for
// its predecessor.
func TestHubRecreatedReplica(t *testing.T) {
	h := newHubTest(t)
	h.createReplica()
	h.createLocal(nonCompliant)
	recreateAfterRead := func(c client.Client) client.Client {
		var once sync.Once
		return intercept(c, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if err := c.Get(ctx, key, obj, opts...); err != nil {
					return err
				}
				once.Do(func() { h.g.Expect(recreatePolicy(ctx, h.hub, h.replica)).To(Succeed()) })
				return nil
			},
		})
	}
	h.g.Expect(h.reconcile(h.reconciler(t, recreateAfterRead))).To(Equal(ctrl.Result{}))
	h.g.Expect(status(t, h.hub, h.replica)(h.g)).To(BeZero(), "the successor's status")
}
