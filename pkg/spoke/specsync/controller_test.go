package specsync_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	replicas "github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/clusterns"
	"github.com/canopy-policy/canopy/pkg/spoke/specsync"
)

// TestCopiesReplica: a replica in the hub cluster namespace becomes a
// Policy of the same name in the same-named namespace of the managed
// cluster, with its spec, labels and annotations, and the replica's
// generation; the namespace, missing on the managed cluster, is created.
func TestCopiesReplica(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := newCluster(t)
	replica := c.replica("copy")
	g.Expect(c.hub.Create(t.Context(), replica)).To(Succeed())

	g.Eventually(c.local(replica)).ShouldNot(BeNil())
	local := c.local(replica)(g)
	g.Expect(local.Spec).To(Equal(replica.Spec))
	g.Expect(local.Labels).To(Equal(replica.Labels))
	want := maps.Clone(replica.Annotations)
	want[replicas.GenerationAnnotation] = "1"
	g.Expect(local.Annotations).To(Equal(want))
	g.Expect(c.managed.Get(t.Context(), client.ObjectKey{Name: c.ns}, &corev1.Namespace{})).To(Succeed())
}

// TestFollowsReplica: a change of the replica's spec, labels or annotations
// reaches the local Policy, removals included, with the replica's new
// generation; its deletion deletes the local Policy.
func TestFollowsReplica(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := newCluster(t)
	replica := c.replica("follow")
	g.Expect(c.hub.Create(t.Context(), replica)).To(Succeed())
	g.Eventually(c.local(replica)).ShouldNot(BeNil())

	orig := replica.DeepCopy()
	replica.Spec.RemediationAction, replica.Spec.Disabled = policyv1.Enforce, true
	replica.Labels["team"] = "billing"
	replica.Annotations = nil
	g.Expect(c.hub.Patch(t.Context(), replica, client.MergeFrom(orig))).To(Succeed())
	g.Eventually(c.local(replica)).Should(And(
		HaveField("Spec", Equal(replica.Spec)),
		HaveField("Labels", HaveKeyWithValue("team", "billing")),
		HaveField("Annotations", Equal(map[string]string{replicas.GenerationAnnotation: "2"}))))

	g.Expect(c.hub.Delete(t.Context(), replica)).To(Succeed())
	g.Eventually(c.local(replica)).Should(BeNil())
}

// TestPutsBackLocalChanges: a local Policy changed or deleted by hand is put
// back as the replica says.
func TestPutsBackLocalChanges(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := newCluster(t)
	replica := c.replica("put-back")
	g.Expect(c.hub.Create(t.Context(), replica)).To(Succeed())
	g.Eventually(c.local(replica)).ShouldNot(BeNil())

	local := c.local(replica)(g)
	orig := local.DeepCopy()
	local.Spec.RemediationAction = policyv1.Enforce
	delete(local.Labels, "team")
	g.Expect(c.managed.Patch(t.Context(), local, client.MergeFrom(orig))).To(Succeed())
	g.Eventually(c.local(replica)).Should(And(
		HaveField("Spec.RemediationAction", policyv1.Inform),
		HaveField("Labels", HaveKeyWithValue("team", "payments"))))

	g.Expect(c.managed.Delete(t.Context(), local)).To(Succeed())
	g.Eventually(c.local(replica)).Should(HaveField("UID", Not(Equal(local.UID))))
}

// TestNeverWritesStatus: status flows in neither direction: the local
// status (statussync's) survives a spec change of the replica, and the
// replica's status is neither copied down nor changed.
func TestNeverWritesStatus(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := newCluster(t)
	replica := c.replica("status")
	g.Expect(c.hub.Create(t.Context(), replica)).To(Succeed())
	replica.Status.ComplianceState = policyv1.Compliant
	g.Expect(c.hub.Status().Update(t.Context(), replica)).To(Succeed())
	g.Eventually(c.local(replica)).ShouldNot(BeNil())
	g.Expect(c.local(replica)(g).Status.ComplianceState).To(BeEmpty(), "the replica's status is not copied")

	local := c.local(replica)(g)
	local.Status.ComplianceState = policyv1.NonCompliant
	g.Expect(c.managed.Status().Update(t.Context(), local)).To(Succeed())
	orig := replica.DeepCopy()
	replica.Spec.RemediationAction = policyv1.Enforce
	g.Expect(c.hub.Patch(t.Context(), replica, client.MergeFrom(orig))).To(Succeed())
	g.Eventually(c.local(replica)).Should(HaveField("Spec.RemediationAction", policyv1.Enforce))
	g.Expect(c.local(replica)(g).Status.ComplianceState).To(Equal(policyv1.NonCompliant))

	got := &policyv1.Policy{}
	g.Expect(c.hub.Get(t.Context(), client.ObjectKeyFromObject(replica), got)).To(Succeed())
	g.Expect(got.Status.ComplianceState).To(Equal(policyv1.Compliant))
}

// TestLeavesOtherPolicies: a local Policy that did not come from the hub
// (no root-policy label) is never deleted, and a hub Policy that is not a
// replica is never copied.
func TestLeavesOtherPolicies(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := newCluster(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}
	g.Expect(client.IgnoreAlreadyExists(c.managed.Create(t.Context(), ns))).To(Succeed())
	handMade := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "hand-made"},
		Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}}}
	g.Expect(c.managed.Create(t.Context(), handMade)).To(Succeed())
	notReplica := c.replica("not-a-replica")
	delete(notReplica.Labels, policyv1.RootPolicyLabel)
	g.Expect(c.hub.Create(t.Context(), notReplica)).To(Succeed())

	// a replica created after them is copied: specsync has seen them
	sentinel := c.replica("sentinel")
	g.Expect(c.hub.Create(t.Context(), sentinel)).To(Succeed())
	g.Eventually(c.local(sentinel)).ShouldNot(BeNil())
	g.Consistently(c.local(handMade)).ShouldNot(BeNil())
	g.Expect(c.local(notReplica)(g)).To(BeNil())
}

// TestHubErrorsDeleteNothing: when the hub cannot be read, Reconcile
// returns the error and keeps the local Policy, which it deletes once the
// hub says the replica is gone.
func TestHubErrorsDeleteNothing(t *testing.T) {
	t.Parallel()
	c := registerCluster(t) // and no specsync running: the test calls Reconcile
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}
	g.Expect(c.managed.Create(t.Context(), ns)).To(Succeed())
	local := c.replica("kept") // a local copy whose replica is not on the hub
	g.Expect(c.managed.Create(t.Context(), local)).To(Succeed())
	hub, err := client.NewWithWatch(c.env.Hub.Config, client.Options{Scheme: controlplane.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(local)}

	policies := schema.GroupResource{Group: policyv1.GroupVersion.Group, Resource: "policies"}
	for _, hubErr := range []error{
		apierrors.NewServiceUnavailable("the hub is away"),
		apierrors.NewForbidden(policies, local.Name, errors.New("the agent's hub role is gone")),
		context.DeadlineExceeded,
	} {
		failing := interceptor.NewClient(hub, interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return hubErr
			},
		})
		r := &specsync.Reconciler{Clients: clusterns.Clients{HubClient: failing, ManagedClient: c.managed, ClusterNamespace: c.ns}}
		_, err := r.Reconcile(t.Context(), req)
		g.Expect(err).To(MatchError(hubErr))
		g.Expect(c.local(local)(g)).NotTo(BeNil(), "after %v", hubErr)
	}

	r := &specsync.Reconciler{Clients: clusterns.Clients{HubClient: hub, ManagedClient: c.managed, ClusterNamespace: c.ns}}
	_, err = r.Reconcile(t.Context(), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.local(local)(g)).To(BeNil(), "the hub says the replica is gone")
}

// TestHubOutageKeepsLocalPolicies: while the hub is unreachable, the local
// Policies stay, and one deleted by hand is put back from the replicas last
// listed; once the hub is back, its changes reach the managed cluster again.
func TestHubOutageKeepsLocalPolicies(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := registerCluster(t)
	hubConfig, hub := startProxy(t, c.hubConfig)
	c.startSpecsync(t, hubConfig)
	replica := c.replica("outage")
	g.Expect(c.hub.Create(t.Context(), replica)).To(Succeed())
	g.Eventually(c.local(replica)).ShouldNot(BeNil())

	hub.setCut(true)
	proxied, err := client.New(hubConfig, client.Options{Scheme: controlplane.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(proxied.Get(t.Context(), client.ObjectKeyFromObject(replica), &policyv1.Policy{})).NotTo(Succeed(), "the hub is unreachable")
	local := c.local(replica)(g)
	g.Expect(c.managed.Delete(t.Context(), local)).To(Succeed())
	g.Eventually(c.local(replica)).Should(HaveField("UID", Not(Equal(local.UID))))
	g.Consistently(c.local(replica)).ShouldNot(BeNil())

	hub.setCut(false)
	g.Expect(c.hub.Delete(t.Context(), replica)).To(Succeed())
	g.Eventually(c.local(replica)).Should(BeNil())
}
