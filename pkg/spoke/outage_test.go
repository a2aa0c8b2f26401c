package spoke_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/spoke"
	"github.com/canopy-policy/canopy/pkg/spoke/lease"
	"github.com/canopy-policy/canopy/test/inproc"
)

func init() {
	w := io.Discard // CANOPY_TEST_LOG=1 shows the agents' logs
	if os.Getenv("CANOPY_TEST_LOG") != "" {
		w = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(w)))
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	EnforceDefaultTimeoutsWhenUsingContexts()
}

const cluster = "cluster1"

// fixture is a hub and one managed cluster for one test.
type fixture struct {
	env *testenv.Env
	hub client.Client
	mc  *testenv.ManagedCluster
}

func newFixture(t *testing.T) *fixture {
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{cluster}})
	return &fixture{env: env, hub: env.Hub.Client, mc: env.Cluster(cluster)}
}

func (f *fixture) startAgent(t *testing.T) *inproc.Running {
	t.Helper()
	a, err := inproc.RunAgent(context.Background(), f.mc.Config, spoke.Options{
		HubConfig: f.mc.HubConfig, ClusterName: cluster, ClusterNamespaceOnly: true,
		Evaluators: (&inproc.FakeEvaluator{}).Setup,
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = a.Stop() })
	return a
}

// template returns a ConfigurationPolicy template entry.
func template(name string, deps ...policyv1.PolicyDependency) policyv1.PolicyTemplate {
	raw, _ := json.Marshal(map[string]any{
		"apiVersion": policyv1.GroupVersion.String(), "kind": "ConfigurationPolicy",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"remediationAction": "inform", "object-templates": []any{}},
	})
	return policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: raw}, ExtraDependencies: deps}
}

func replica(name string, templates ...policyv1.PolicyTemplate) *policyv1.Policy {
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name, Labels: map[string]string{
			policyv1.RootPolicyLabel: "root." + name, policyv1.ClusterNameLabel: cluster, policyv1.ClusterNamespaceLabel: cluster,
		}},
		Spec: policyv1.PolicySpec{PolicyTemplates: templates},
	}
}

func status(ctx context.Context, c client.Client, name string) func(g Gomega) policyv1.PolicyStatus {
	return func(g Gomega) policyv1.PolicyStatus {
		p := &policyv1.Policy{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, p)).To(Succeed())
		return p.Status
	}
}

func historyOf(template string) func(policyv1.PolicyStatus) []string {
	return func(s policyv1.PolicyStatus) []string {
		var out []string
		for _, d := range s.Details {
			if d.TemplateMeta.Name == template {
				for _, h := range d.History {
					state, _, _ := strings2(h.Message)
					out = append(out, state)
				}
			}
		}
		return out
	}
}

func strings2(msg string) (string, string, bool) {
	for i := range msg {
		if msg[i] == ';' {
			return msg[:i], msg[i+1:], true
		}
	}
	return msg, "", false
}

// The agent started while the hub API server is down keeps enforcing the
// policies it synced before: their templates are created and evaluated,
// and the status reaches the hub when it is back.
func TestAgentStartsWhileHubIsDown(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	ctx := t.Context()
	g.Expect(f.hub.Create(ctx, replica("steady", template("steady-1")))).To(Succeed())
	first := f.startAgent(t)
	g.Eventually(status(ctx, f.hub, "steady")).WithContext(ctx).Should(HaveField("ComplianceState", policyv1.Compliant))
	g.Eventually(func() error {
		return f.hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: lease.DefaultName}, &coordinationv1.Lease{})
	}).WithContext(ctx).Should(Succeed())
	g.Expect(first.Stop()).To(Succeed())

	g.Expect(f.env.Hub.Pause()).To(Succeed())
	// While nobody runs, the template is lost on the managed cluster.
	cp := &policyv1.ConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "steady-1"}}
	g.Expect(f.mc.Client.Delete(ctx, cp)).To(Succeed())
	f.startAgent(t)
	g.Eventually(func() error {
		return f.mc.Client.Get(ctx, client.ObjectKeyFromObject(cp), cp)
	}).WithContext(ctx).Should(Succeed(), "templatesync must run while the hub is down")
	g.Eventually(func() policyv1.ComplianceState {
		_ = f.mc.Client.Get(ctx, client.ObjectKeyFromObject(cp), cp)
		return cp.Status.ComplianceState
	}).WithContext(ctx).Should(Equal(policyv1.Compliant), "the template must be evaluated while the hub is down")
	g.Expect(f.mc.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "steady"}, &policyv1.Policy{})).To(Succeed())

	g.Expect(f.env.Hub.Resume(ctx)).To(Succeed())
	g.Eventually(status(ctx, f.hub, "steady")).WithContext(ctx).Should(HaveField("ComplianceState", policyv1.Compliant))
}

// Transitions that happen while the hub is down all reach the hub replica's
// history when it returns.
func TestHubRestartedMidFlow(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	ctx := t.Context()
	gate := &policyv1.ConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "gate"}}
	gateObj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": policyv1.GroupVersion.String(), "kind": "ConfigurationPolicy",
		"metadata": map[string]any{"namespace": cluster, "name": "gate"},
		"spec":     map[string]any{"remediationAction": "inform", "object-templates": []any{}},
	}}
	g.Expect(f.mc.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}})).To(Or(Succeed(), WithTransform(apierrors.IsAlreadyExists, BeTrue())))
	g.Expect(f.mc.Client.Create(ctx, gateObj)).To(Succeed())
	setGate := func(state policyv1.ComplianceState) {
		g.Eventually(func() error {
			if err := f.mc.Client.Get(ctx, client.ObjectKeyFromObject(gate), gate); err != nil {
				return err
			}
			gate.Status.ComplianceState = state
			return f.mc.Client.Status().Update(ctx, gate)
		}).WithContext(ctx).Should(Succeed())
	}
	setGate(policyv1.NonCompliant)
	gated := policyv1.PolicyDependency{Name: "gate", Compliance: policyv1.Compliant}
	gated.Kind = "ConfigurationPolicy"
	g.Expect(f.hub.Create(ctx, replica("mid", template("mid-1"), template("mid-2", gated)))).To(Succeed())
	f.startAgent(t)
	g.Eventually(status(ctx, f.hub, "mid")).WithContext(ctx).Should(WithTransform(historyOf("mid-2"), Equal([]string{"Pending"})))

	g.Expect(f.env.Hub.Pause()).To(Succeed())
	want := []string{"Pending"}
	for _, step := range []struct {
		gate policyv1.ComplianceState
		mid2 string
	}{{policyv1.Compliant, "Compliant"}, {policyv1.NonCompliant, "Pending"}, {policyv1.Compliant, "Compliant"}} {
		setGate(step.gate)
		want = append([]string{step.mid2}, want...)
		g.Eventually(status(ctx, f.mc.Client, "mid")).WithContext(ctx).Should(WithTransform(historyOf("mid-2"), Equal(want)))
	}
	g.Expect(f.env.Hub.Resume(ctx)).To(Succeed())
	g.Eventually(status(ctx, f.hub, "mid")).WithContext(ctx).Should(SatisfyAll(
		WithTransform(historyOf("mid-2"), Equal([]string{"Compliant", "Pending", "Compliant", "Pending"})),
		HaveField("ComplianceState", policyv1.Compliant),
	))
	s := status(ctx, f.hub, "mid")(g)
	out, _ := json.MarshalIndent(s, "", "  ")
	t.Logf("hub status of mid after the outage: %s", out)
}
