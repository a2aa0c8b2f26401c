package statussync

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
)

// hubTest is one hub controller test: its registered cluster and the local
// Policy and hub replica it works on.
type hubTest struct {
	*cluster
	t       *testing.T
	g       Gomega
	local   *policyv1.Policy // on the managed cluster
	replica *policyv1.Policy // on the hub
}

// newHubTest runs the test in parallel on a new registered cluster, with
// the local Policy and the replica of root policy default/p, neither
// created yet.
func newHubTest(t *testing.T) *hubTest {
	t.Parallel()
	c := newCluster(t)
	h := &hubTest{cluster: c, t: t, g: NewWithT(t), replica: c.replica("p", "a")}
	h.local = h.replica.DeepCopy()
	h.local.Spec.RemediationAction = policyv1.Enforce // the local spec is not the hub's business
	return h
}

// setStatus writes the status of obj (its namespace and name) with c.
func (h *hubTest) setStatus(c client.Client, obj *policyv1.Policy, status policyv1.PolicyStatus) {
	h.t.Helper()
	p := &policyv1.Policy{}
	h.g.Expect(c.Get(h.t.Context(), client.ObjectKeyFromObject(obj), p)).To(Succeed())
	p.Status = status
	h.g.Expect(c.Status().Update(h.t.Context(), p)).To(Succeed())
}

// createLocal creates the local Policy with status.
func (h *hubTest) createLocal(status policyv1.PolicyStatus) {
	h.t.Helper()
	create(h.t, h.managed, h.local)
	h.setStatus(h.managed, h.local, status)
}

// createReplica creates the replica, with a condition the hub sets.
func (h *hubTest) createReplica() {
	h.t.Helper()
	create(h.t, h.hub, h.replica)
	h.setStatus(h.hub, h.replica, policyv1.PolicyStatus{Conditions: []metav1.Condition{propagated}})
}

// propagated is a condition of the hub's on the replica, not the agent's.
var propagated = metav1.Condition{
	Type: "Propagated", Status: metav1.ConditionTrue, Reason: "Propagated", Message: "set by the hub",
	LastTransitionTime: metav1.NewTime(at(0)),
}

// sent is the replica status once status has been sent: the local
// compliance and details, the hub's own fields untouched.
func sent(status policyv1.PolicyStatus) policyv1.PolicyStatus {
	return policyv1.PolicyStatus{ComplianceState: status.ComplianceState, Details: status.Details, Conditions: []metav1.Condition{propagated}}
}

// intercept returns c with funcs intercepting its calls.
func intercept(c client.Client, funcs interceptor.Funcs) client.Client {
	return interceptor.NewClient(noWatch{c}, funcs)
}

// noWatch is a client.Client as interceptor wants it, a client.WithWatch:
// the controller never watches through its client.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("not watching through a controller's client")
}

// reconcile calls Reconcile of r for the test's Policy.
func (h *hubTest) reconcile(r *HubReconciler) (ctrl.Result, error) {
	return r.Reconcile(h.t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(h.replica)})
}

// nonCompliant and compliant are local statuses of a Policy with template a.
var (
	nonCompliant = policyv1.PolicyStatus{ComplianceState: policyv1.NonCompliant, Details: []policyv1.DetailsPerTemplate{{
		TemplateMeta: metav1.ObjectMeta{Name: "a"}, ComplianceState: policyv1.NonCompliant,
		History: []policyv1.ComplianceHistory{{LastTimestamp: metav1.NewTime(at(1)), Message: "NonCompliant; bad", EventName: "p.1"}},
	}}}
	compliant = policyv1.PolicyStatus{ComplianceState: policyv1.Compliant, Details: []policyv1.DetailsPerTemplate{{
		TemplateMeta: metav1.ObjectMeta{Name: "a"}, ComplianceState: policyv1.Compliant,
		History: []policyv1.ComplianceHistory{
			{LastTimestamp: metav1.NewTime(at(2)), Message: "Compliant; ok", EventName: "p.2"},
			{LastTimestamp: metav1.NewTime(at(1)), Message: "NonCompliant; bad", EventName: "p.1"},
		},
	}}}
)

// TestHubCopiesLocalStatus: the replica's status.compliant and
// status.details follow the local Policy's, also when the local status
// empties; the replica's spec and the hub's own status fields stay as they
// are.
func TestHubCopiesLocalStatus(t *testing.T) {
	h := newHubTest(t)
	h.createReplica()
	h.createLocal(nonCompliant)
	before := &policyv1.Policy{}
	h.g.Expect(h.hub.Get(t.Context(), client.ObjectKeyFromObject(h.replica), before)).To(Succeed())
	h.startHub(t, startLocal(t, h.ns, false), nil)

	h.g.Eventually(status(t, h.hub, h.replica)).Should(BeComparableTo(sent(nonCompliant)))
	h.setStatus(h.managed, h.local, compliant)
	h.g.Eventually(status(t, h.hub, h.replica)).Should(BeComparableTo(sent(compliant)), "a local change is sent")
	unknown := policyv1.PolicyStatus{Details: []policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "a"}}}}
	h.setStatus(h.managed, h.local, unknown)
	h.g.Eventually(status(t, h.hub, h.replica)).Should(BeComparableTo(sent(unknown)), "a reset is sent too")

	after := &policyv1.Policy{}
	h.g.Expect(h.hub.Get(t.Context(), client.ObjectKeyFromObject(h.replica), after)).To(Succeed())
	h.g.Expect(after.Spec).To(Equal(before.Spec), "never the spec")
	h.g.Expect(after.Generation).To(Equal(before.Generation))
	h.g.Expect(after.Labels).To(Equal(before.Labels))
}

// TestHubMissingCounterpart: without a replica the controller does nothing
// (it never creates one: the propagator does) and fails nothing; once the
// replica appears it gets the local status. Without a local Policy the
// replica's status is left as it is.
func TestHubMissingCounterpart(t *testing.T) {
	h := newHubTest(t)
	h.createLocal(nonCompliant)
	r := h.reconciler(t, nil)
	h.g.Expect(h.reconcile(r)).To(Equal(ctrl.Result{}))
	err := h.hub.Get(t.Context(), client.ObjectKeyFromObject(h.replica), &policyv1.Policy{})
	h.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no replica created: %v", err)

	h.startHub(t, startLocal(t, h.ns, false), nil)
	h.createReplica()
	h.g.Eventually(status(t, h.hub, h.replica)).Should(BeComparableTo(sent(nonCompliant)))

	h.g.Expect(h.managed.Delete(t.Context(), h.local)).To(Succeed())
	h.g.Expect(h.reconcile(r)).To(Equal(ctrl.Result{}))
	h.g.Consistently(status(t, h.hub, h.replica)).Should(BeComparableTo(sent(nonCompliant)))
}

// TestHubLeavesNonReplicas: a Policy of the cluster namespace without the
// root-policy label is not a replica, and a replica being deleted is let
// go: the controller writes neither's status.
func TestHubLeavesNonReplicas(t *testing.T) {
	h := newHubTest(t)
	h.createLocal(nonCompliant)
	r := h.reconciler(t, nil)

	h.replica.Labels = nil
	h.createReplica()
	h.g.Expect(h.reconcile(r)).To(Equal(ctrl.Result{}))
	h.g.Expect(status(t, h.hub, h.replica)(h.g)).To(BeComparableTo(sent(policyv1.PolicyStatus{})), "not a replica")

	h.g.Expect(h.hub.Delete(t.Context(), h.replica)).To(Succeed())
	h.g.Eventually(status(t, h.hub, h.replica)).Should(BeZero())
	h.replica = h.cluster.replica("p", "a")
	h.replica.Finalizers = []string{"test.canopy.io/keep"}
	h.createReplica()
	t.Cleanup(func() { // let the replica go
		p := &policyv1.Policy{}
		if h.hub.Get(context.Background(), client.ObjectKeyFromObject(h.replica), p) == nil {
			p.Finalizers = nil
			_ = h.hub.Update(context.Background(), p)
		}
	})
	h.g.Expect(h.hub.Delete(t.Context(), h.replica)).To(Succeed())
	h.g.Expect(h.reconcile(r)).To(Equal(ctrl.Result{}))
	h.g.Expect(status(t, h.hub, h.replica)(h.g)).To(BeComparableTo(sent(policyv1.PolicyStatus{})), "being deleted")
}

// TestHubWriteFailures: a replica deleted between the read and the write
// is no failure; any other failure to write is returned, to be retried.
func TestHubWriteFailures(t *testing.T) {
	h := newHubTest(t)
	h.createReplica()
	h.createLocal(nonCompliant)
	failWith := func(err error) func(client.Client) client.Client {
		return func(c client.Client) client.Client {
			return intercept(c, interceptor.Funcs{
				SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
					return err
				},
			})
		}
	}
	gr := schema.GroupResource{Group: policyv1.GroupName, Resource: "policies"}

	_, err := h.reconcile(h.reconciler(t, failWith(apierrors.NewNotFound(gr, h.replica.Name))))
	h.g.Expect(err).NotTo(HaveOccurred())
	_, err = h.reconcile(h.reconciler(t, failWith(apierrors.NewServiceUnavailable("hub away"))))
	h.g.Expect(apierrors.IsServiceUnavailable(err)).To(BeTrue(), "%v", err)
	h.g.Expect(err).To(MatchError(ContainSubstring("patching the status of replica " + h.ns + "/" + h.replica.Name)))
}

// TestHubWriterBackoff: failed writes are retried with HubWriterOptions'
// backoff: from HubRetryBaseDelay, doubling, not the agent's evaluators'
// one-second backoff nor controller-runtime's milliseconds.
func TestHubWriterBackoff(t *testing.T) {
	h := newHubTest(t)
	h.createReplica()
	h.createLocal(nonCompliant)
	managed := startLocal(t, h.ns, false)
	// The controller must start with both sides in its caches: a later
	// event would trigger a retry at once.
	h.g.Eventually(status(t, managed.GetClient(), h.local)).Should(BeComparableTo(nonCompliant))

	const failures = 4
	var mu sync.Mutex
	var attempts []time.Time
	h.startHub(t, managed, func(c client.Client) client.Client {
		return intercept(c, interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				mu.Lock()
				attempts = append(attempts, time.Now())
				n := len(attempts)
				mu.Unlock()
				if n <= failures {
					return apierrors.NewServiceUnavailable("hub away")
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		})
	})
	h.g.Eventually(status(t, h.hub, h.replica)).Should(BeComparableTo(sent(nonCompliant)))

	mu.Lock()
	defer mu.Unlock()
	h.g.Expect(attempts).To(HaveLen(failures + 1))
	for i := 1; i <= failures; i++ {
		delay := controllerdefaults.HubRetryBaseDelay << (i - 1)
		h.g.Expect(attempts[i].Sub(attempts[i-1])).To(And(
			BeNumerically(">=", delay), BeNumerically("<", delay+time.Second)), "retry %d", i)
	}
}

// TestHubSendsLatestAfterOutage: while the hub is away, compliance keeps
// being recorded locally; once it is back, the replica gets the latest
// status, whose history holds every transition recorded meanwhile.
func TestHubSendsLatestAfterOutage(t *testing.T) {
	h := newHubTest(t)
	h.createReplica()
	create(t, h.managed, h.local)
	managed := startLocal(t, h.ns, true)
	stop := h.startHub(t, managed, nil)
	e1 := record(t, h.managed, h.local, "a", policyv1.NonCompliant, "bad", at(1))
	h.g.Eventually(status(t, h.hub, h.replica)).Should(BeComparableTo(sent(policyv1.PolicyStatus{
		ComplianceState: policyv1.NonCompliant, Details: []policyv1.DetailsPerTemplate{detail("a", policyv1.NonCompliant, e1)},
	})))

	stop()
	e2 := record(t, h.managed, h.local, "a", policyv1.Compliant, "ok", at(2))
	e3 := record(t, h.managed, h.local, "a", policyv1.NonCompliant, "drifted", at(3))
	e4 := record(t, h.managed, h.local, "a", policyv1.Compliant, "fixed", at(4))
	latest := policyv1.PolicyStatus{
		ComplianceState: policyv1.Compliant, Details: []policyv1.DetailsPerTemplate{detail("a", policyv1.Compliant, e4, e3, e2, e1)},
	}
	h.g.Eventually(status(t, h.managed, h.local)).Should(BeComparableTo(latest), "recorded locally")
	h.g.Expect(status(t, h.hub, h.replica)(h.g)).To(HaveField("ComplianceState", policyv1.NonCompliant), "not sent")

	h.startHub(t, managed, nil)
	h.g.Eventually(status(t, h.hub, h.replica)).Should(BeComparableTo(sent(latest)))
}
