package templatesync_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/spoke"
	"github.com/canopy-policy/canopy/test/inproc"
)

// stillPending is how long a Pending policy must stay Pending after stale
// events: statussync reacts within a second, so a stale event that won
// would show long before.
const stillPending = 15 * time.Second

// newRestartableCluster registers a cluster named after the test on the
// hub, and returns it with start, which runs its agent (with the fake
// evaluator) until the returned stop is called or the test ends.
func newRestartableCluster(t *testing.T) (c *cluster, start func() (stop func())) {
	t.Helper()
	g := NewWithT(t)
	name := fmt.Sprintf("c%s-%04x", strings.ToLower(shortName(t.Name())), rand.IntN(1<<16))
	env := suite.Get(t)
	hubCfg, err := env.RegisterCluster(t.Context(), name)
	g.Expect(err).NotTo(HaveOccurred())
	managed := env.Managed[0]
	c = &cluster{ns: name, hub: env.Hub.Client, managed: managed.Client}
	start = func() func() {
		c.evaluator = &inproc.FakeEvaluator{}
		running, err := inproc.RunAgent(context.Background(), managed.Config, spoke.Options{
			HubConfig: hubCfg, ClusterName: name, ClusterNamespaceOnly: true, Evaluators: c.evaluator.Setup,
		})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { g.Expect(running.Stop()).To(Succeed()) })
		return func() { g.Expect(running.Stop()).To(Succeed()) }
	}
	return c, start
}

// localStatus returns the status of the local Policy name.
func (c *cluster) localStatus(ctx context.Context, name string) func(g Gomega) policyv1.PolicyStatus {
	return func(g Gomega) policyv1.PolicyStatus {
		p := &policyv1.Policy{}
		g.Expect(c.managed.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: name}, p)).To(Succeed())
		return p.Status
	}
}

// bothStatuses returns the status of the local Policy name and of its hub
// replica.
func (c *cluster) bothStatuses(ctx context.Context, name string) func(g Gomega) []policyv1.PolicyStatus {
	return func(g Gomega) []policyv1.PolicyStatus {
		return []policyv1.PolicyStatus{c.localStatus(ctx, name)(g), c.hubStatus(ctx, name)(g)}
	}
}

// pendingOn says that template of a Policy's status is Pending, and so is
// the Policy.
func pendingOn(template string) OmegaMatcher {
	return SatisfyAll(
		WithTransform(compliant, Equal(policyv1.Pending)),
		WithTransform(func(s policyv1.PolicyStatus) policyv1.ComplianceState { return detail(s, template).ComplianceState }, Equal(policyv1.Pending)),
		WithTransform(latestOf(template), Equal("Pending; Dependencies were not satisfied: 1 is still pending (Policy stale-base); "+
			"Policy stale-base: want Compliant got NonCompliant")),
	)
}

// writeStaleEvents writes three late Compliant events for template of the
// local Policy name, as an evaluator would: one about the object deleted
// (with UID deleted), one about a foreign object, and one that names no
// object; they are the template's newest events.
func (c *cluster) writeStaleEvents(t *testing.T, name, template string, deleted types.UID) []*corev1.Event {
	t.Helper()
	g := NewWithT(t)
	local := &policyv1.Policy{}
	g.Expect(c.managed.Get(t.Context(), client.ObjectKey{Namespace: c.ns, Name: name}, local)).To(Succeed())
	src := compliance.EventSource{Component: spoke.Component, Instance: c.ns} // the evaluators' source
	report := compliance.Compliance{Template: types.NamespacedName{Namespace: c.ns, Name: template},
		State: policyv1.Compliant, Message: "No violation detected"}
	object := func(uid types.UID) *corev1.ObjectReference {
		return &corev1.ObjectReference{APIVersion: policyv1.GroupVersion.String(), Kind: "ConfigurationPolicy",
			Namespace: c.ns, Name: template, UID: uid}
	}
	var out []*corev1.Event
	for _, related := range []*corev1.ObjectReference{object(deleted), object("foreign-uid"), nil} {
		ev := compliance.NewEvent(compliance.ParentFromPolicy(local), report, src, related, false, time.Now())
		g.Expect(c.managed.Create(t.Context(), ev)).To(Succeed())
		out = append(out, ev)
	}
	return out
}

// TestStaleEventsLeavePending: a template is Pending (its object deleted
// when its dependency turned NonCompliant). Late Compliant events for it
// (about the deleted object, about a foreign object, about no object)
// leave the policy Pending on the cluster and on the hub; so does an agent
// restart, also over a status that shows a stale event (written by an
// older agent): templatesync records Pending again.
func TestStaleEventsLeavePending(t *testing.T) {
	g := NewWithT(t)
	c, start := newRestartableCluster(t)
	stop := start()
	base := cfgPolicy("stale-base-t")
	c.create(t, c.replica("stale-base", nil, base))
	c.create(t, c.replica("stale-top", []policyv1.PolicyDependency{dep("Policy", "stale-base", policyv1.Compliant)}, cfgPolicy("stale-top-t")))
	g.Eventually(c.hubStatus(t.Context(), "stale-top")).WithContext(t.Context()).Should(WithTransform(compliant, Equal(policyv1.Compliant)))
	obj := &policyv1.ConfigurationPolicy{}
	g.Expect(c.managed.Get(t.Context(), client.ObjectKey{Namespace: c.ns, Name: "stale-top-t"}, obj)).To(Succeed())

	base.compliance = "NonCompliant"
	c.setTemplates(t, "stale-base", base)
	g.Eventually(c.templateExists(t.Context(), "stale-top-t")).WithContext(t.Context()).Should(BeFalse())
	g.Eventually(c.hubStatus(t.Context(), "stale-top")).WithContext(t.Context()).Should(pendingOn("stale-top-t"))

	stale := c.writeStaleEvents(t, "stale-top", "stale-top-t", obj.UID)
	g.Consistently(c.bothStatuses(t.Context(), "stale-top")).WithContext(t.Context()).WithTimeout(stillPending).
		WithPolling(100 * time.Millisecond).Should(HaveEach(pendingOn("stale-top-t")))

	stop()
	c.showStale(t, "stale-top", "stale-top-t", stale[0])
	c.writeStaleEvents(t, "stale-top", "stale-top-t", obj.UID)
	start()
	g.Eventually(c.bothStatuses(t.Context(), "stale-top")).WithContext(t.Context()).Should(HaveEach(pendingOn("stale-top-t")))
	g.Consistently(c.bothStatuses(t.Context(), "stale-top")).WithContext(t.Context()).WithTimeout(stillPending).
		WithPolling(100 * time.Millisecond).Should(HaveEach(pendingOn("stale-top-t")))
	g.Expect(c.templateExists(t.Context(), "stale-top-t")()).To(BeFalse())
	t.Logf("status of stale-top: %s", dump(c.localStatus(t.Context(), "stale-top")(g)))
}

// showStale makes the status of the local Policy name show ev as the
// newest event of template, as an agent that counted stale events wrote
// it.
func (c *cluster) showStale(t *testing.T, name, template string, ev *corev1.Event) {
	t.Helper()
	g := NewWithT(t)
	p := &policyv1.Policy{}
	g.Expect(c.managed.Get(t.Context(), client.ObjectKey{Namespace: c.ns, Name: name}, p)).To(Succeed())
	orig := p.DeepCopy()
	for i := range p.Status.Details {
		if d := &p.Status.Details[i]; d.TemplateMeta.Name == template {
			d.ComplianceState = policyv1.Compliant
			d.History = append([]policyv1.ComplianceHistory{{LastTimestamp: metav1.Now(), Message: ev.Message, EventName: ev.Name}}, d.History...)
		}
	}
	p.Status.ComplianceState = policyv1.Compliant
	g.Expect(c.managed.Status().Patch(t.Context(), p, client.MergeFrom(orig))).To(Succeed())
}

// TestStaleStatusPutRight: a status that shows a stale event over a Pending
// template, written while the agent runs, turns Pending again: templatesync
// sees the template's compliance change in status and records Pending again.
func TestStaleStatusPutRight(t *testing.T) {
	g := NewWithT(t)
	c, start := newRestartableCluster(t)
	start()
	base := cfgPolicy("stale-base-t")
	base.compliance = "NonCompliant"
	c.create(t, c.replica("stale-base", nil, base))
	c.create(t, c.replica("stale-top", []policyv1.PolicyDependency{dep("Policy", "stale-base", policyv1.Compliant)}, cfgPolicy("stale-top-t")))
	g.Eventually(c.bothStatuses(t.Context(), "stale-top")).WithContext(t.Context()).Should(HaveEach(pendingOn("stale-top-t")))

	stale := c.writeStaleEvents(t, "stale-top", "stale-top-t", "deleted-uid")
	c.showStale(t, "stale-top", "stale-top-t", stale[0])
	g.Eventually(c.bothStatuses(t.Context(), "stale-top")).WithContext(t.Context()).Should(HaveEach(SatisfyAll(
		pendingOn("stale-top-t"),
		WithTransform(func(s policyv1.PolicyStatus) string { return detail(s, "stale-top-t").History[1].Message }, Equal(stale[0].Message)),
	)))
	g.Expect(c.templateExists(t.Context(), "stale-top-t")()).To(BeFalse())
}
