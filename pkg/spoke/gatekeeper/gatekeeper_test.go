package gatekeeper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	gkenv "github.com/canopy-policy/canopy/internal/test/gatekeeper"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/spoke"
	"github.com/canopy-policy/canopy/test/inproc"
)

// suite is one hub and one managed API server; the test runs the agent
// that ships for its cluster, and real Gatekeeper (internal/test/gatekeeper)
// on the managed API server once it has seen Canopy without it.
var suite = &testenv.Suite{Options: testenv.Options{ManagedClusters: []string{"managed"}}}

func TestMain(m *testing.M) { suite.Main(m) }

func init() {
	// Set CANOPY_TEST_LOG=1 to see the agent's logs.
	w := io.Discard
	if os.Getenv("CANOPY_TEST_LOG") != "" {
		w = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(w)))
}

const (
	eventually = 3 * time.Minute // Gatekeeper starts, makes a CRD, audits
	poll       = 200 * time.Millisecond
)

// constraintName is the constraint of examples/gatekeeper/policy.yaml.
const constraintName = "team-namespaces-have-owner"

// TestGatekeeperTemplates runs the Policy of examples/gatekeeper, a
// ConstraintTemplate and a constraint, through the agent: first without Gatekeeper, then with real
// Gatekeeper auditing, and checks what the hub replica reports against
// OCM's messages (open-cluster-management-io/governance-policy-framework-addon:
// controllers/templatesync/template_sync.go for "Mapping not found, check if
// Gatekeeper is installed: ..." and "ConstraintTemplate %s was created
// successfully", controllers/gatekeepersync/gatekeeper_constraint_sync.go
// for "%s - %s (on %s %s)", "The constraint has no violations" and "The
// Gatekeeper validating webhook is disabled but ...").
func TestGatekeeperTemplates(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := suite.Get(t)
	managed := env.Managed[0]
	name := fmt.Sprintf("gk-%04x", rand.IntN(1<<16))
	hubCfg, err := env.RegisterCluster(ctx, name)
	g.Expect(err).NotTo(HaveOccurred())
	running, err := inproc.RunAgent(context.Background(), managed.Config, spoke.Options{
		HubConfig: hubCfg, ClusterName: name, ClusterNamespaceOnly: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(running.Stop()).To(Succeed()) })

	replica := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "root.gatekeeper", Labels: map[string]string{
		policyv1.RootPolicyLabel: "root.gatekeeper", policyv1.ClusterNameLabel: name, policyv1.ClusterNamespaceLabel: name,
	}}}
	replica.Spec.RemediationAction = policyv1.Inform // as the example: the constraint's enforcementAction is warn
	replica.Spec.PolicyTemplates = templates(t, "owner")
	g.Expect(env.Hub.Client.Create(ctx, replica)).To(Succeed())
	status := hubStatus(ctx, env.Hub.Client, replica)

	t.Log("Without Gatekeeper: NonCompliant, in OCM's words")
	g.Eventually(status).WithTimeout(eventually).WithPolling(poll).Should(And(
		HaveKeyWithValue("k8srequiredlabels", "NonCompliant; template-error; Mapping not found, check if Gatekeeper is installed: "+
			"the resource version was not found: templates.gatekeeper.sh/v1, Kind=ConstraintTemplate"),
		HaveKeyWithValue(constraintName, "NonCompliant; template-error; Mapping not found, check if Gatekeeper is installed: "+
			"the resource version was not found: constraints.gatekeeper.sh/v1beta1, Kind=K8sRequiredLabels"),
	))

	t.Log("With Gatekeeper: the template created, the audit's violation reported")
	audited := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name + "-app", Labels: map[string]string{"example.canopy.io/team": "true"}}}
	g.Expect(managed.Client.Create(ctx, audited)).To(Succeed())
	gkenv.Start(t, managed.ControlPlane, gkenv.Options{AuditInterval: 3 * time.Second})
	g.Eventually(status).WithTimeout(eventually).WithPolling(poll).Should(And(
		HaveKeyWithValue("k8srequiredlabels", "Compliant; ConstraintTemplate k8srequiredlabels was created successfully"),
		HaveKeyWithValue(constraintName, fmt.Sprintf(`NonCompliant; warn - you must provide labels: {"owner"} (on Namespace %s)`, audited.Name)),
	))
	g.Eventually(compliant(ctx, env.Hub.Client, replica)).WithTimeout(eventually).Should(Equal(policyv1.NonCompliant))

	t.Log("The namespace fixed: Compliant at the next audit")
	audited.Labels["owner"] = "team-a"
	g.Expect(managed.Client.Update(ctx, audited)).To(Succeed())
	g.Eventually(status).WithTimeout(eventually).WithPolling(poll).Should(
		HaveKeyWithValue(constraintName, "Compliant; The constraint has no violations"))
	g.Eventually(compliant(ctx, env.Hub.Client, replica)).WithTimeout(eventually).Should(Equal(policyv1.Compliant))

	t.Log("Audits that change nothing write neither the templates nor an event")
	owner := constraintObject()
	before := read(t, managed.Client, owner)
	ct := read(t, managed.Client, constraintTemplateObject())
	eventsBefore := len(events(t, managed.Client, name))
	waitAudits(t, managed.Client, owner, 2)
	after := read(t, managed.Client, owner)
	g.Expect(after.GetGeneration()).To(Equal(before.GetGeneration()))
	g.Expect(canopyWrite(after)).To(Equal(canopyWrite(before)), "the agent rewrote the constraint")
	g.Expect(read(t, managed.Client, constraintTemplateObject()).GetGeneration()).To(Equal(ct.GetGeneration()))
	g.Expect(events(t, managed.Client, name)).To(HaveLen(eventsBefore), "an audit that found the same wrote an event")

	t.Log("A new spec: never Compliant from the audit of the old one")
	setTemplates(t, env.Hub.Client, replica, templates(t, "team"))
	g.Eventually(status).WithTimeout(eventually).WithPolling(poll).Should(
		HaveKeyWithValue(constraintName, fmt.Sprintf(`NonCompliant; warn - you must provide labels: {"team"} (on Namespace %s)`, audited.Name)))
	version := read(t, managed.Client, owner).GetAnnotations()[compliance.TemplateHashAnnotation]
	var onNewSpec []string
	for _, ev := range events(t, managed.Client, name) {
		if ev.Reason == "policy: "+name+"/"+constraintName && ev.Annotations[compliance.TemplateVersionAnnotation] == version {
			onNewSpec = append(onNewSpec, ev.Message)
		}
	}
	t.Logf("Reports on the new spec: %q", onNewSpec)
	g.Expect(onNewSpec).NotTo(BeEmpty())
	g.Expect(onNewSpec).NotTo(ContainElement(HavePrefix("Compliant")), "a Compliant report on the new spec came from the old audit")
	g.Expect(onNewSpec[len(onNewSpec)-1]).To(HavePrefix("NonCompliant"))

	t.Log("enforce: deny, and no webhook to deny with")
	g.Eventually(func(g Gomega) {
		p := &policyv1.Policy{}
		g.Expect(env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(replica), p)).To(Succeed())
		p.Spec.RemediationAction = policyv1.Enforce
		g.Expect(env.Hub.Client.Update(ctx, p)).To(Succeed())
	}).WithTimeout(eventually).Should(Succeed())
	g.Eventually(status).WithTimeout(eventually).WithPolling(poll).Should(HaveKeyWithValue(constraintName, fmt.Sprintf(
		`NonCompliant; The Gatekeeper validating webhook is disabled but the constraint's spec.enforcementAction is deny. `+
			`deny - you must provide labels: {"team"} (on Namespace %s)`, audited.Name)))

	t.Log("The policy deleted: its cluster-scoped templates too")
	g.Expect(env.Hub.Client.Delete(ctx, replica)).To(Succeed())
	g.Eventually(func() bool {
		return exists(t, managed.Client, owner) || exists(t, managed.Client, constraintTemplateObject())
	}).
		WithTimeout(eventually).Should(BeFalse())
}

// templates returns the policy templates of examples/gatekeeper/policy.yaml,
// its constraint requiring label.
func templates(t *testing.T, label string) []policyv1.PolicyTemplate {
	t.Helper()
	g := NewWithT(t)
	root, err := controlplane.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := controlplane.ReadObjects(filepath.Join(root, "examples", "gatekeeper", "policy.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	p := &policyv1.Policy{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, p)).To(Succeed())
	g.Expect(p.Spec.PolicyTemplates).To(HaveLen(2))
	c := &unstructured.Unstructured{}
	g.Expect(c.UnmarshalJSON(p.Spec.PolicyTemplates[1].ObjectDefinition.Raw)).To(Succeed())
	g.Expect(c.GetName()).To(Equal(constraintName))
	g.Expect(unstructured.SetNestedStringSlice(c.Object, []string{label}, "spec", "parameters", "labels")).To(Succeed())
	raw, err := c.MarshalJSON()
	g.Expect(err).NotTo(HaveOccurred())
	p.Spec.PolicyTemplates[1].ObjectDefinition.Raw = raw
	return p.Spec.PolicyTemplates
}

// setTemplates replaces the templates of the hub replica p.
func setTemplates(t *testing.T, hub client.Client, p *policyv1.Policy, templates []policyv1.PolicyTemplate) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cur := &policyv1.Policy{}
		g.Expect(hub.Get(t.Context(), client.ObjectKeyFromObject(p), cur)).To(Succeed())
		cur.Spec.PolicyTemplates = templates
		g.Expect(hub.Update(t.Context(), cur)).To(Succeed())
	}).WithTimeout(eventually).Should(Succeed())
}

// hubStatus returns a function that reads the newest history message of
// each template of the hub replica p, by template name.
func hubStatus(ctx context.Context, hub client.Client, p *policyv1.Policy) func(Gomega) map[string]string {
	return func(g Gomega) map[string]string {
		cur := &policyv1.Policy{}
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(p), cur)).To(Succeed())
		out := map[string]string{}
		for _, d := range cur.Status.Details {
			if len(d.History) > 0 {
				out[d.TemplateMeta.Name] = d.History[0].Message
			}
		}
		return out
	}
}

func compliant(ctx context.Context, hub client.Client, p *policyv1.Policy) func(Gomega) policyv1.ComplianceState {
	return func(g Gomega) policyv1.ComplianceState {
		cur := &policyv1.Policy{}
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(p), cur)).To(Succeed())
		return cur.Status.ComplianceState
	}
}

func constraintObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "constraints.gatekeeper.sh", Version: "v1beta1", Kind: "K8sRequiredLabels"})
	u.SetName(constraintName)
	return u
}

func constraintTemplateObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "templates.gatekeeper.sh", Version: "v1", Kind: "ConstraintTemplate"})
	u.SetName("k8srequiredlabels")
	return u
}

// read returns the API server's copy of obj.
func read(t *testing.T, c client.Client, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out := obj.DeepCopy()
	NewWithT(t).Expect(c.Get(t.Context(), client.ObjectKeyFromObject(obj), out)).To(Succeed())
	return out
}

func exists(t *testing.T, c client.Client, obj *unstructured.Unstructured) bool {
	t.Helper()
	err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj.DeepCopy())
	NewWithT(t).Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

// waitAudits waits until Gatekeeper's audit has written n new results on
// the constraint obj (n new status.auditTimestamp values).
func waitAudits(t *testing.T, c client.Client, obj *unstructured.Unstructured, n int) {
	t.Helper()
	seen := []string{}
	NewWithT(t).Eventually(func() int {
		at, _, _ := unstructured.NestedString(read(t, c, obj).Object, "status", "auditTimestamp")
		if len(seen) == 0 || seen[len(seen)-1] != at {
			seen = append(seen, at)
		}
		return len(seen)
	}).WithTimeout(eventually).WithPolling(poll).Should(BeNumerically(">", n))
}

// canopyWrite returns the managedFields entries of obj not about its
// status, as JSON: what the agent (and anyone but Gatekeeper's audit) wrote.
func canopyWrite(obj *unstructured.Unstructured) string {
	var out []metav1.ManagedFieldsEntry
	for _, f := range obj.GetManagedFields() {
		if f.Subresource != "status" {
			out = append(out, f)
		}
	}
	raw, _ := json.Marshal(out)
	return string(raw)
}

// events returns the compliance events of namespace, oldest first.
func events(t *testing.T, c client.Client, namespace string) []corev1.Event {
	t.Helper()
	list := &corev1.EventList{}
	NewWithT(t).Expect(c.List(t.Context(), list, client.InNamespace(namespace))).To(Succeed())
	out := slices.DeleteFunc(list.Items, func(ev corev1.Event) bool { _, err := compliance.Parse(&ev); return err != nil })
	slices.SortFunc(out, func(a, b corev1.Event) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// TestOrphanedTemplatesAreDeleted: a Policy deleted while no agent ran
// leaves its cluster-scoped templates, which no garbage collector deletes
// (they have no owner reference); the agent deletes them when it starts.
func TestOrphanedTemplatesAreDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := suite.Get(t)
	managed := env.Managed[0]
	g.Expect(gkenv.InstallCRDs(ctx, managed.Client)).To(Succeed())
	name := fmt.Sprintf("gk-%04x", rand.IntN(1<<16))
	hubCfg, err := env.RegisterCluster(ctx, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(managed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())

	kind := fmt.Sprintf("K8sOrphan%04x", rand.IntN(1<<16))
	orphan := constraintTemplateObject()
	orphan.SetName(strings.ToLower(kind))
	orphan.SetLabels(map[string]string{policyv1.PolicyLabel: "deleted-meanwhile", policyv1.ClusterNamespaceLabel: name})
	g.Expect(unstructured.SetNestedField(orphan.Object, kind, "spec", "crd", "spec", "names", "kind")).To(Succeed())
	g.Expect(managed.Client.Create(ctx, orphan)).To(Succeed())
	other := orphan.DeepCopy() // the same policy name in another cluster namespace: not this agent's
	other.SetName(strings.ToLower(kind) + "x")
	other.SetResourceVersion("")
	other.SetLabels(map[string]string{policyv1.PolicyLabel: "deleted-meanwhile", policyv1.ClusterNamespaceLabel: name + "-other"})
	g.Expect(managed.Client.Create(ctx, other)).To(Succeed())
	t.Cleanup(func() { _ = managed.Client.Delete(context.Background(), other) })

	running, err := inproc.RunAgent(context.Background(), managed.Config, spoke.Options{
		HubConfig: hubCfg, ClusterName: name, ClusterNamespaceOnly: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(running.Stop()).To(Succeed()) })
	g.Eventually(func() bool { return exists(t, managed.Client, orphan) }).WithTimeout(eventually).WithPolling(poll).Should(BeFalse())
	g.Expect(exists(t, managed.Client, other)).To(BeTrue())
}
