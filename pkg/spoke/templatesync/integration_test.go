package templatesync_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

func init() {
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	EnforceDefaultTimeoutsWhenUsingContexts()
}

// A 3-step chain inside one policy: t2 waits for t1, t3 for t2. Each becomes
// Compliant only after the one before it.
func TestChainCompliantInOrder(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	t1 := cfgPolicy("chain-1")
	t1.compliance = "NonCompliant"
	t2 := cfgPolicy("chain-2", dep("ConfigurationPolicy", "chain-1", policyv1.Compliant))
	t3 := cfgPolicy("chain-3", dep("ConfigurationPolicy", "chain-2", policyv1.Compliant))
	c.create(t, c.replica("chain", nil, t1, t2, t3))

	g.Eventually(c.hubStatus(t.Context(), "chain")).WithContext(t.Context()).Should(SatisfyAll(
		WithTransform(func(s policyv1.PolicyStatus) policyv1.ComplianceState { return s.ComplianceState }, Equal(policyv1.NonCompliant)),
		WithTransform(func(s policyv1.PolicyStatus) string { return latest(s, "chain-2") }, Equal(
			"Pending; Dependencies were not satisfied: 1 is still pending (ConfigurationPolicy chain-1); ConfigurationPolicy chain-1: want Compliant got NonCompliant")),
		WithTransform(func(s policyv1.PolicyStatus) string { return latest(s, "chain-3") }, Equal(
			"Pending; Dependencies were not satisfied: 1 is still pending (ConfigurationPolicy chain-2); ConfigurationPolicy chain-2: not found")),
	))
	g.Expect(c.templateExists(t.Context(), "chain-2")()).To(BeFalse())

	t1.compliance = ""
	c.setTemplates(t, "chain", t1, t2, t3)
	g.Eventually(c.hubStatus(t.Context(), "chain")).WithContext(t.Context()).Should(
		WithTransform(func(s policyv1.PolicyStatus) policyv1.ComplianceState { return s.ComplianceState }, Equal(policyv1.Compliant)))
	g.Expect(c.evaluator.CompliantOrder()).To(Equal([]string{"chain-1", "chain-2", "chain-3"}))
	s := c.hubStatus(t.Context(), "chain")(g)
	for _, name := range []string{"chain-2", "chain-3"} {
		h := detail(s, name).History
		g.Expect(h[0].Message).To(HavePrefix("Compliant;"), name)
		for _, older := range h[1:] {
			g.Expect(older.Message).To(HavePrefix("Pending;"), name)
		}
	}
	t.Logf("status of chain: %s", dump(s))
}

func compliant(s policyv1.PolicyStatus) policyv1.ComplianceState { return s.ComplianceState }

func latestOf(template string) func(policyv1.PolicyStatus) string {
	return func(s policyv1.PolicyStatus) string { return latest(s, template) }
}

// A dependency that turns NonCompliant again deletes its dependant, which
// goes back to Pending.
func TestDependencyFlipsBack(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	base := cfgPolicy("flip-base")
	top := cfgPolicy("flip-top", dep("ConfigurationPolicy", "flip-base", policyv1.Compliant))
	c.create(t, c.replica("flip", nil, base, top))
	g.Eventually(c.hubStatus(t.Context(), "flip")).WithContext(t.Context()).Should(WithTransform(compliant, Equal(policyv1.Compliant)))
	g.Expect(c.templateExists(t.Context(), "flip-top")()).To(BeTrue())

	base.compliance = "NonCompliant"
	c.setTemplates(t, "flip", base, top)
	g.Eventually(c.templateExists(t.Context(), "flip-top")).WithContext(t.Context()).Should(BeFalse())
	g.Eventually(c.hubStatus(t.Context(), "flip")).WithContext(t.Context()).Should(SatisfyAll(
		WithTransform(compliant, Equal(policyv1.NonCompliant)),
		WithTransform(latestOf("flip-top"), Equal("Pending; Dependencies were not satisfied: 1 is still pending "+
			"(ConfigurationPolicy flip-base); ConfigurationPolicy flip-base: want Compliant got NonCompliant")),
	))
	s := c.hubStatus(t.Context(), "flip")(g)
	g.Expect(detail(s, "flip-top").History[1].Message).To(HavePrefix("Compliant;"))
	t.Logf("status of flip: %s", dump(s))
}

// ignorePending reports a waiting template as Compliant, and still does
// not create it.
func TestIgnorePending(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	waiting := cfgPolicy("ignore-waiting", dep("Policy", "missing", policyv1.Compliant))
	waiting.ignorePending = true
	c.create(t, c.replica("ignore", nil, waiting))
	g.Eventually(c.hubStatus(t.Context(), "ignore")).WithContext(t.Context()).Should(SatisfyAll(
		WithTransform(compliant, Equal(policyv1.Compliant)),
		WithTransform(latestOf("ignore-waiting"), Equal("Compliant; Dependencies were not satisfied: 1 is still pending "+
			"(Policy missing) but ignorePending is true; Policy missing: not found")),
	))
	g.Expect(c.templateExists(t.Context(), "ignore-waiting")()).To(BeFalse())
}

// A Policy's spec.dependencies on another Policy gate all its templates.
func TestCrossPolicyDependency(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	first := cfgPolicy("cross-first")
	first.compliance = "NonCompliant"
	c.create(t, c.replica("first", nil, first))
	c.create(t, c.replica("second", []policyv1.PolicyDependency{dep("Policy", "first", policyv1.Compliant)}, cfgPolicy("cross-second")))
	g.Eventually(c.hubStatus(t.Context(), "second")).WithContext(t.Context()).Should(SatisfyAll(
		WithTransform(compliant, Equal(policyv1.Pending)),
		WithTransform(latestOf("cross-second"), Equal("Pending; Dependencies were not satisfied: 1 is still pending "+
			"(Policy first); Policy first: want Compliant got NonCompliant")),
	))
	g.Expect(c.templateExists(t.Context(), "cross-second")()).To(BeFalse())

	first.compliance = ""
	c.setTemplates(t, "first", first)
	g.Eventually(c.hubStatus(t.Context(), "second")).WithContext(t.Context()).Should(WithTransform(compliant, Equal(policyv1.Compliant)))
	g.Expect(c.evaluator.CompliantOrder()).To(Equal([]string{"cross-first", "cross-second"}))
}

// Cycles are reported by name on every policy of the cycle.
func TestCycles(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	on := func(p string) []policyv1.PolicyDependency {
		return []policyv1.PolicyDependency{dep("Policy", p, policyv1.Compliant)}
	}
	c.create(t, c.replica("a", on("b"), cfgPolicy("cyc-a")))
	c.create(t, c.replica("b", on("a"), cfgPolicy("cyc-b")))
	c.create(t, c.replica("x", on("y"), cfgPolicy("cyc-x")))
	c.create(t, c.replica("y", on("z"), cfgPolicy("cyc-y")))
	c.create(t, c.replica("z", on("x"), cfgPolicy("cyc-z")))
	c.create(t, c.replica("inner", nil,
		cfgPolicy("cyc-t1", dep("ConfigurationPolicy", "cyc-t2", policyv1.Compliant)),
		cfgPolicy("cyc-t2", dep("ConfigurationPolicy", "cyc-t1", policyv1.Compliant))))
	want := map[string]map[string]string{
		"a": {"cyc-a": "dependency cycle: Policy a -> Policy b -> Policy a"},
		"b": {"cyc-b": "dependency cycle: Policy b -> Policy a -> Policy b"},
		"x": {"cyc-x": "dependency cycle: Policy x -> Policy y -> Policy z -> Policy x"},
		"y": {"cyc-y": "dependency cycle: Policy y -> Policy z -> Policy x -> Policy y"},
		"z": {"cyc-z": "dependency cycle: Policy z -> Policy x -> Policy y -> Policy z"},
		"inner": {"cyc-t1": "dependency cycle: ConfigurationPolicy cyc-t1 -> ConfigurationPolicy cyc-t2 -> ConfigurationPolicy cyc-t1",
			"cyc-t2": "dependency cycle: ConfigurationPolicy cyc-t2 -> ConfigurationPolicy cyc-t1 -> ConfigurationPolicy cyc-t2"},
	}
	for policy, templates := range want {
		for template, msg := range templates {
			g.Eventually(c.hubStatus(t.Context(), policy)).WithContext(t.Context()).Should(SatisfyAll(
				WithTransform(compliant, Equal(policyv1.NonCompliant)),
				WithTransform(latestOf(template), Equal("NonCompliant; "+msg)),
			), policy)
		}
	}
	t.Logf("status of a: %s", dump(c.hubStatus(t.Context(), "a")(g)))
}

// A dependency on a kind the cluster does not serve stays Pending and says
// so.
func TestUnknownDependencyKind(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	d := dep("Widget", "w1", policyv1.Compliant)
	d.APIVersion = "example.com/v1"
	c.create(t, c.replica("unknown", nil, cfgPolicy("unknown-kind", d)))
	g.Eventually(c.hubStatus(t.Context(), "unknown")).WithContext(t.Context()).Should(SatisfyAll(
		WithTransform(compliant, Equal(policyv1.Pending)),
		WithTransform(latestOf("unknown-kind"), Equal("Pending; Dependencies were not satisfied: 1 is still pending "+
			"(Widget w1); Widget w1: no API mapping for the kind")),
	))
}

// The rules of template creation: only policy template kinds, unique
// names, strict field validation, the Policy's remediationAction, removed
// templates deleted, and a deleted replica taking its local copy and
// templates with it.
func TestTemplateRules(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	configMap := tmpl{kind: "ConfigMap", name: "rules-cm"}
	typo := cfgPolicy("rules-typo")
	typo.spec = map[string]any{"remediationAction": "inform", "object-templates": []any{}, "remediationActoin": "enforce"}
	owned := c.replica("rules", nil, cfgPolicy("rules-keep"), cfgPolicy("rules-drop"), configMap, typo)
	owned.Spec.RemediationAction = policyv1.Enforce
	c.create(t, owned)
	g.Eventually(c.hubStatus(t.Context(), "rules")).WithContext(t.Context()).Should(SatisfyAll(
		WithTransform(latestOf("rules-cm"), Equal("NonCompliant; "+notSupported("ConfigMap"))),
		WithTransform(latestOf("rules-typo"), SatisfyAll(HavePrefix("NonCompliant; "+templating.TemplateErrorPrefix+"Failed to create policy template: "),
			ContainSubstring("remediationActoin"))),
		WithTransform(latestOf("rules-keep"), Equal("Compliant; fake evaluation")),
	))
	c.create(t, c.replica("thief", nil, cfgPolicy("rules-keep")))
	g.Eventually(c.hubStatus(t.Context(), "thief")).WithContext(t.Context()).Should(WithTransform(latestOf("rules-keep"), Equal(
		"NonCompliant; ConfigurationPolicy rules-keep already exists and belongs to Policy rules: template names must be unique on the cluster; nothing was overwritten")))
	keep := &policyv1.ConfigurationPolicy{}
	g.Expect(c.managed.Get(t.Context(), client.ObjectKey{Namespace: c.ns, Name: "rules-keep"}, keep)).To(Succeed())
	g.Expect(keep.Labels).To(HaveKeyWithValue(policyv1.PolicyLabel, "rules"))
	g.Expect(keep.Spec.RemediationAction).To(Equal(policyv1.Enforce))
	g.Expect(keep.OwnerReferences).To(ConsistOf(HaveField("Name", "rules")))

	c.setTemplates(t, "rules", cfgPolicy("rules-keep"))
	g.Eventually(c.templateExists(t.Context(), "rules-drop")).WithContext(t.Context()).Should(BeFalse())
	g.Expect(c.templateExists(t.Context(), "rules-keep")()).To(BeTrue())

	g.Expect(c.hub.Delete(t.Context(), &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "rules"}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(c.managed.Get(t.Context(), client.ObjectKey{Namespace: c.ns, Name: "rules"}, &policyv1.Policy{}))
	}).WithContext(t.Context()).Should(BeTrue())
	// The name is free again: the policy that wanted it gets it.
	g.Eventually(func() map[string]string {
		_ = c.managed.Get(t.Context(), client.ObjectKey{Namespace: c.ns, Name: "rules-keep"}, keep)
		return keep.Labels
	}).WithContext(t.Context()).Should(HaveKeyWithValue(policyv1.PolicyLabel, "thief"))
	g.Eventually(c.hubStatus(t.Context(), "thief")).WithContext(t.Context()).Should(WithTransform(latestOf("rules-keep"), Equal("Compliant; fake evaluation")))
}

// A template of a kind nothing on the cluster evaluates, or of a version
// its CRD does not serve, is reported NonCompliant with a message naming
// the kind (not the API server's "no matches for kind"); the other
// templates of the Policy are still written.
func TestUnevaluatedKinds(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(t)
	unknown := tmpl{kind: "FooPolicy", name: "unev-foo", apiVersion: "example.com/v1", spec: map[string]any{}}
	// A Gatekeeper constraint where Gatekeeper is not installed, in OCM's
	// words (governance-policy-framework-addon,
	// controllers/templatesync/template_sync.go).
	constraint := tmpl{kind: "K8sRequiredLabels", name: "unev-gk", apiVersion: "constraints.gatekeeper.sh/v1beta1", spec: map[string]any{}}
	wrongVersion := cfgPolicy("unev-version")
	wrongVersion.apiVersion = "policy.open-cluster-management.io/v1beta1"
	c.create(t, c.replica("unev", nil, unknown, constraint, wrongVersion, cfgPolicy("unev-ok")))
	g.Eventually(c.hubStatus(t.Context(), "unev")).WithContext(t.Context()).Should(SatisfyAll(
		WithTransform(compliant, Equal(policyv1.NonCompliant)),
		WithTransform(latestOf("unev-foo"), Equal("NonCompliant; "+notSupported("FooPolicy.example.com"))),
		WithTransform(latestOf("unev-gk"), Equal("NonCompliant; template-error; Mapping not found, check if Gatekeeper is installed: "+
			"the resource version was not found: constraints.gatekeeper.sh/v1beta1, Kind=K8sRequiredLabels")),
		WithTransform(latestOf("unev-version"), Equal("NonCompliant; template-error; Mapping not found, check if you have the CRD deployed: "+
			"no controller on this cluster evaluates ConfigurationPolicy.policy.open-cluster-management.io at version v1beta1: "+
			"its CustomResourceDefinition serves other versions; use one of those")),
		WithTransform(latestOf("unev-ok"), Equal("Compliant; fake evaluation")),
	))
	t.Logf("status: %s", dump(c.hubStatus(t.Context(), "unev")(g)))
}

// notSupported is the message of a template whose kind no controller on the
// cluster evaluates.
func notSupported(kind string) string {
	return "template-error; policy-template kind is not supported: no controller on this cluster evaluates " + kind +
		": the Canopy agent evaluates ConfigurationPolicy, CertificatePolicy, OperatorPolicy, HierarchyPolicy and " +
		"Gatekeeper's ConstraintTemplates and constraints; " +
		"a kind another controller evaluates needs that controller installed, with its CustomResourceDefinition labelled " +
		"policy.open-cluster-management.io/policy-type=template"
}
