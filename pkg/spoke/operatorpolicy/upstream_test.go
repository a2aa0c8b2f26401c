package operatorpolicy

// The tests of this file check what OperatorPolicy does as
// config-policy-controller v0.19 (and its main branch, August 2026) does
// it. Condition types, reasons and messages are written out as strings,
// copied from upstream's controllers/operatorpolicy_status.go and
// controllers/operatorpolicy_controller.go (the file is named at each).

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/olmsim"
)

// withConfig is an enforced musthave OperatorPolicy installing $PKG from
// channel %s of the test's catalog, with upgradeApproval %s and the
// complianceConfig %s (a YAML map).
const withConfig = `
metadata: {name: install}
spec:
  remediationAction: enforce
  complianceType: musthave
  upgradeApproval: %s
  complianceConfig: %s
  subscription:
    namespace: $NS
    name: $PKG
    channel: %s
    source: catalog
    sourceNamespace: $NS
`

// conditionOf returns a function that gets one condition of OperatorPolicy
// name, without its time.
func (f *fixture) conditionOf(name, condType string) func(Gomega) metav1.Condition {
	return func(g Gomega) metav1.Condition {
		st := f.status(name)(g)
		c, ok := st.Condition(condType)
		g.Expect(ok).To(BeTrue(), "condition %s", condType)
		c.LastTransitionTime = metav1.Time{}
		return c
	}
}

// TestDeprecations: the NoDeprecations condition reports a deprecated
// package, channel or installed bundle, and counts in the compliance only
// with complianceConfig.deprecationsPresent NonCompliant. Messages:
// operatorpolicy_status.go (deprecationCond, and the Recommended
// condition in operatorpolicy_controller.go, updateDeprecationStatus).
func TestDeprecations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pkg    olmsim.Package
		config string
		want   metav1.Condition
		// compliant is the state the policy settles in.
		compliant policyv1.ComplianceState
	}{
		{name: "package, NonCompliant", config: "{deprecationsPresent: NonCompliant}",
			pkg: olmsim.Package{Name: "dalet", Deprecation: "dalet is end of life."},
			want: metav1.Condition{Type: "NoDeprecations", Status: "False", Reason: "PackageDeprecated",
				Message: "the requested dalet Package was deprecated. dalet is end of life."},
			compliant: policyv1.NonCompliant},
		{name: "channel, Compliant by default", config: "{}",
			pkg: olmsim.Package{Name: "he", ChannelDeprecations: map[string]string{"stable": "use fast."}},
			want: metav1.Condition{Type: "NoDeprecations", Status: "False", Reason: "ChannelDeprecated",
				Message: "the requested stable Channel was deprecated. use fast."},
			compliant: policyv1.Compliant},
		{name: "bundle, NonCompliant", config: "{deprecationsPresent: NonCompliant}",
			pkg: olmsim.Package{Name: "vav", BundleDeprecations: map[string]string{"vav.v1": "vav.v1 has a CVE."}},
			want: metav1.Condition{Type: "NoDeprecations", Status: "False", Reason: "BundleDeprecated",
				Message: "the requested vav.v1 Bundle was deprecated. vav.v1 has a CVE."},
			compliant: policyv1.NonCompliant},
		{name: "none", config: "{deprecationsPresent: NonCompliant}", pkg: olmsim.Package{Name: "zayin"},
			want: metav1.Condition{Type: "NoDeprecations", Status: "True", Reason: "Recommended",
				Message: "The requested package, channel, and bundle are all at the recommended versions"},
			compliant: policyv1.Compliant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.pkg.Channels = map[string][]string{"stable": csvNames(tc.pkg.Name, "v1")}
			f := newFixtureWith(t, tc.pkg)
			f.policy(fmt.Sprintf(withConfig, "None", tc.config, "stable"))

			f.g.Eventually(f.conditionOf("install", "NoDeprecations"), eventually, poll).Should(Equal(tc.want))
			f.g.Eventually(f.message("install"), eventually, poll).Should(ContainSubstring(
				"ClusterServiceVersion (" + tc.pkg.Name + ".v1) - install strategy completed with no errors"))
			st := f.status("install")(f.g)
			f.g.Expect(st.ComplianceState).To(Equal(tc.compliant))
			if tc.config != "{}" { // calculateComplianceCondition sums it up last
				f.g.Expect(f.message("install")(f.g)).To(HaveSuffix(", " + tc.want.Message))
			} else {
				f.g.Expect(f.message("install")(f.g)).NotTo(ContainSubstring(tc.want.Message))
			}
		})
	}
}

// TestMinorChannelUpgrade: MinorChannelUpgradeAvailable names the newer
// minor-version channels when upgrades are approved automatically, and
// makes the policy NonCompliant only with
// complianceConfig.minorChannelUpgradeAvailable NonCompliant. Messages:
// operatorpolicy_controller.go (updateMinorChannelUpgradeStatus) and
// operatorpolicy_status.go (minorChannelOKCond).
func TestMinorChannelUpgrade(t *testing.T) {
	channels := func(pkg string) map[string][]string {
		return map[string][]string{"stable-1.0": {pkg + ".v1.0.0"}, "stable-1.1": {pkg + ".v1.1.0"},
			"stable-1.2": {pkg + ".v1.2.0"}, "fast-1.3": {pkg + ".v1.3.0"}}
	}
	for _, tc := range []struct {
		name, pkg, approval, config string
		want                        metav1.Condition
		// summed is whether the Compliant message ends with the
		// condition's.
		summed bool
	}{
		{name: "NonCompliant", pkg: "chet", approval: "Automatic", config: "{minorChannelUpgradeAvailable: NonCompliant}",
			want: metav1.Condition{Type: "MinorChannelUpgradeAvailable", Status: "False", Reason: "UpgradeAvailable",
				Message: "a newer version of the operator is available in channel(s): stable-1.1, stable-1.2"}, summed: true},
		{name: "Compliant by default", pkg: "tet", approval: "Automatic", config: "{}",
			want: metav1.Condition{Type: "MinorChannelUpgradeAvailable", Status: "True", Reason: "UpgradeAvailable",
				Message: "a newer version of the operator is available in channel(s): stable-1.1, stable-1.2"}},
		{name: "skipped without automatic upgrades", pkg: "yod", approval: "None",
			config: "{minorChannelUpgradeAvailable: NonCompliant}",
			want: metav1.Condition{Type: "MinorChannelUpgradeAvailable", Status: "True", Reason: "Skipped",
				Message: "skipping check for minor channel upgrades"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureWith(t, olmsim.Package{Name: tc.pkg, DefaultChannel: "stable-1.0", Channels: channels(tc.pkg)})
			f.policy(fmt.Sprintf(withConfig, tc.approval, tc.config, "stable-1.0"))

			f.g.Eventually(f.conditionOf("install", "MinorChannelUpgradeAvailable"), eventually, poll).Should(Equal(tc.want))
			f.g.Eventually(f.message("install"), eventually, poll).Should(ContainSubstring(
				"ClusterServiceVersion (" + tc.pkg + ".v1.0.0) - install strategy completed with no errors"))
			if tc.summed {
				f.g.Expect(f.message("install")(f.g)).To(And(HavePrefix("NonCompliant; "), HaveSuffix(", "+tc.want.Message)))
				return
			}
			f.g.Expect(f.message("install")(f.g)).To(And(HavePrefix("Compliant; "), Not(ContainSubstring(tc.want.Message))))
		})
	}
}

// TestTemplatedVersions: versions are managed-cluster templates, resolved
// on the cluster, and may name several versions separated by commas;
// what the templates read is watched. The error is
// operatorpolicy_controller.go's (buildResources, resolveVersionsTemplates).
func TestTemplatedVersions(t *testing.T) {
	f := newFixture(t, "kaf", "v1")
	allowed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "allowed"},
		Data: map[string]string{"versions": "kaf.v1"}}
	f.g.Expect(f.c.Create(t.Context(), allowed)).To(Succeed())
	f.policy(fmt.Sprintf(musthave, "enforce", "Automatic",
		`['{{ (lookup "v1" "ConfigMap" "$NS" "allowed").data.versions }}', " "]`))
	f.g.Eventually(f.message("install"), eventually, poll).Should(
		ContainSubstring("ClusterServiceVersion (kaf.v1) - install strategy completed with no errors"))

	f.g.Expect(sim.Publish(t.Context(), "kaf", "stable", "kaf.v2")).To(Succeed())
	f.g.Eventually(f.condition("install", CondInstallPlan), eventually, poll).Should(
		Equal("an InstallPlan to update to [kaf.v2] is available for approval but approval for [kaf.v2] is required"))

	allowed.Data["versions"] = "kaf.v1, kaf.v2"
	f.g.Expect(f.c.Update(t.Context(), allowed)).To(Succeed())
	f.g.Eventually(f.message("install"), eventually, poll).Should(And(HavePrefix("Compliant; "),
		ContainSubstring("ClusterServiceVersion (kaf.v2) - install strategy completed with no errors")))
}

// TestVersionsTemplateError: a version template that does not resolve
// makes the policy invalid, with OCM's words, and nothing is created.
func TestVersionsTemplateError(t *testing.T) {
	f := newFixture(t, "lamed", "v1")
	f.policy(fmt.Sprintf(musthave, "enforce", "Automatic", `['{{ lookup "v1" "ConfigMap" }']`))
	f.g.Eventually(f.message("install"), eventually, poll).Should(MatchRegexp(
		`^NonCompliant; unable to create template resolver: could not resolve the version template: .*template`))
	f.g.Consistently(f.list(olmsim.SubscriptionGVK), quiet, poll).Should(BeEmpty())
}

// TestHistory: status.history holds the Compliant messages, the newest
// first, each once per change, as many as the agent's
// --operator-policy-status-history-length (the suite's historyLength).
// operatorpolicy_controller.go (Reconcile) writes them.
func TestHistory(t *testing.T) {
	f := newFixture(t, "mem", "v1")
	p := f.policy(fmt.Sprintf(musthave, "enforce", "None", "[mem.v1]"))
	f.g.Eventually(f.message("install"), eventually, poll).Should(HavePrefix("Compliant; "))
	for _, versions := range [][]string{{"mem.v9"}, {"mem.v1"}, {"mem.v9"}, {"mem.v1"}} {
		f.g.Eventually(func(g Gomega) {
			g.Expect(f.c.Get(t.Context(), client.ObjectKeyFromObject(p), p)).To(Succeed())
			p.Spec.Versions = versions
			g.Expect(f.c.Update(t.Context(), p)).To(Succeed())
		}, eventually, poll).Should(Succeed())
		f.g.Eventually(f.message("install"), eventually, poll).Should(ContainSubstring(
			map[bool]string{true: "ClusterServiceVersion (mem.v1) is not an approved version",
				false: "ClusterServiceVersion (mem.v1) - install strategy completed"}[versions[0] == "mem.v9"]))
	}
	st := f.status("install")(f.g)
	compliant, _ := st.Condition(CondCompliant)
	f.g.Expect(st.History).To(HaveLen(historyLength))
	f.g.Expect(st.History[0].Message).To(Equal(compliant.Message))
	f.g.Expect(st.History[1].Message).To(ContainSubstring("ClusterServiceVersion (mem.v1) is not an approved version"))
	f.g.Expect(st.History[2].Message).To(Equal(compliant.Message))
	for _, h := range st.History {
		f.g.Expect(h.LastTimestamp.IsZero()).To(BeFalse())
	}
	f.g.Expect(st.History[0].LastTimestamp.Before(&st.History[1].LastTimestamp)).To(BeFalse(), "newest first")
}

// TestExistingAllNamespacesInstallation: an operator installed in
// AllNamespaces mode in another namespace, whose CSV OLM copied into the
// policy's, is reported as installed there and no Subscription is
// created. Messages: operatorpolicy_status.go (existingInstallCond, main
// branch after v0.19).
func TestExistingAllNamespacesInstallation(t *testing.T) {
	f := newFixture(t, "nun", "v1")
	f.installed()
	other := controlplane.Namespace(t, f.c)
	f.g.Expect(sim.Copy(t.Context(), f.ns, "nun.v1", other)).To(Succeed())
	f.policy(fmt.Sprintf(`
metadata: {name: elsewhere}
spec:
  remediationAction: enforce
  complianceType: musthave
  upgradeApproval: None
  subscription: {namespace: %s, name: nun, channel: stable, source: catalog, sourceNamespace: $NS}
`, other))

	existing := "the operator is installed in namespace " + f.ns + " and is available via AllNamespaces mode"
	f.g.Eventually(f.message("elsewhere"), eventually, poll).Should(Equal("Compliant; the policy spec is valid, " +
		existing + ", " + existing + ", " + existing + ", " +
		"ClusterServiceVersion (nun.v1) - The operator is running in " + f.ns + " but is managing this namespace, " +
		existing + ", " + existing + ", " + existing))
	f.g.Expect(f.conditionOf("elsewhere", CondCatalogSource)(f.g)).To(Equal(metav1.Condition{
		Type: "CatalogSourcesUnhealthy", Status: "False", Reason: "ExistingInstallation", Message: existing}))
	subs := func(g Gomega) []string { return f.listIn(g, olmsim.SubscriptionGVK, other) }
	f.g.Consistently(subs, quiet, poll).Should(BeEmpty())
	f.g.Expect(f.listIn(f.g, olmsim.OperatorGroupGVK, other)).To(BeEmpty())
}

// TestDependencies: the CSVs of the packages an operator requires are
// approved with it, as operatorpolicy_controller.go (getBundleDependencies)
// approves them; without, the InstallPlan waits on them.
func TestDependencies(t *testing.T) {
	f := newFixtureWith(t, olmsim.Package{Name: "samekh", Dependencies: []string{"ayin"},
		Channels: map[string][]string{"stable": {"samekh.v1"}}})
	f.addPackage(olmsim.Package{Name: "ayin", Dependencies: []string{"pe"}, Channels: map[string][]string{"stable": {"ayin.v1"}}})
	f.addPackage(olmsim.Package{Name: "pe", Channels: map[string][]string{"stable": {"pe.v1"}}})
	f.policy(fmt.Sprintf(musthave, "enforce", "None", "[]"))

	f.g.Eventually(f.message("install"), eventually, poll).Should(And(HavePrefix("Compliant; "),
		ContainSubstring("ClusterServiceVersion (samekh.v1) - install strategy completed with no errors")))
	installed := func(g Gomega) []string {
		var names []string
		for _, n := range f.list(olmsim.CSVGVK)(g) {
			if phase := field(f.object(olmsim.CSVGVK, n)(g), "status", "phase"); phase == "Succeeded" {
				names = append(names, n)
			}
		}
		return names
	}
	f.g.Eventually(installed, eventually, poll).Should(ConsistOf("samekh.v1", "ayin.v1", "pe.v1"))
}

// TestInapplicable: the placeholders of kinds of which nothing is
// relevant are stored as upstream writes them (operatorpolicy_status.go,
// noExistingCRDObj, noExistingDeploymentObj): compliant Inapplicable.
func TestInapplicable(t *testing.T) {
	f := newFixture(t, "qof", "v1")
	f.policy(fmt.Sprintf(musthave, "inform", "None", "[]"))
	related := func(g Gomega) []policyv1.RelatedObject { return f.status("install")(g).RelatedObjects }
	placeholder := func(kind, apiVersion, reason string) policyv1.RelatedObject {
		return policyv1.RelatedObject{Object: policyv1.ObjectResource{Kind: kind, APIVersion: apiVersion,
			Metadata: policyv1.ObjectMetadata{Name: "-"}}, Compliant: "Inapplicable", Reason: reason}
	}
	f.g.Eventually(related, eventually, poll).Should(ContainElements(
		placeholder("CustomResourceDefinition", "apiextensions.k8s.io/v1", "No relevant CustomResourceDefinitions found"),
		placeholder("Deployment", "apps/v1", "No relevant deployments found")))
}

// listIn lists the names of the objects of gvk in namespace ns.
func (f *fixture) listIn(g Gomega, gvk schema.GroupVersionKind, ns string) []string {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	g.Expect(f.c.List(f.t.Context(), list, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, o := range list.Items {
		names = append(names, o.GetName())
	}
	return names
}

// TestOverlappingPolicies: two enforced policies managing one
// Subscription are both invalid and list each other in
// status.overlappingPolicies; when one goes, the other recovers. The
// message is operatorpolicy_controller.go's (checkSubOverlap).
func TestOverlappingPolicies(t *testing.T) {
	f := newFixture(t, "tsadi", "v1")
	first := f.policy(fmt.Sprintf(musthave, "enforce", "None", "[]"))
	f.g.Eventually(f.message("install"), eventually, poll).Should(HavePrefix("Compliant; "))
	f.policy(`
metadata: {name: again}
spec:
  remediationAction: enforce
  complianceType: musthave
  upgradeApproval: None
  subscription: {namespace: $NS, name: $PKG, channel: stable, source: catalog, sourceNamespace: $NS}
`)
	both := []string{"again." + f.ns, "install." + f.ns}
	want := "NonCompliant; the specified operator is managed by multiple enforced policies (" +
		both[0] + ", " + both[1] + ")"
	for _, name := range []string{"install", "again"} {
		f.g.Eventually(f.message(name), eventually, poll).Should(Equal(want), name)
		f.g.Eventually(func(g Gomega) []string { return f.status(name)(g).OverlappingPolicies },
			eventually, poll).Should(Equal(both), name)
	}
	f.g.Expect(f.c.Delete(t.Context(), first)).To(Succeed())
	f.g.Eventually(f.message("again"), eventually, poll).Should(HavePrefix("Compliant; "))
	f.g.Expect(f.status("again")(f.g).OverlappingPolicies).To(BeEmpty())
}

// TestTemplatedSubscription: subscription and operatorGroup are
// managed-cluster templates too, as operatorpolicy_controller.go
// (buildSubscription, buildOperatorGroup) resolves them; with the
// disable-templates annotation they are taken literally.
func TestTemplatedSubscription(t *testing.T) {
	f := newFixture(t, "resh", "v1")
	values := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "values"},
		Data: map[string]string{"channel": "stable", "og": "templated-og"}}
	f.g.Expect(f.c.Create(t.Context(), values)).To(Succeed())
	f.policy(`
metadata: {name: install}
spec:
  remediationAction: enforce
  complianceType: musthave
  upgradeApproval: None
  operatorGroup:
    name: '{{ (lookup "v1" "ConfigMap" "$NS" "values").data.og }}'
    namespace: $NS
    targetNamespaces: [$NS]
  subscription:
    namespace: $NS
    name: $PKG
    channel: '{{ (lookup "v1" "ConfigMap" "$NS" "values").data.channel }}'
    source: catalog
    sourceNamespace: $NS
`)
	f.g.Eventually(f.message("install"), eventually, poll).Should(And(HavePrefix("Compliant; "),
		ContainSubstring("ClusterServiceVersion (resh.v1) - install strategy completed with no errors")))
	f.g.Expect(f.list(olmsim.OperatorGroupGVK)(f.g)).To(ConsistOf("templated-og"))
	f.g.Expect(field(f.object(olmsim.SubscriptionGVK, "resh")(f.g), "spec", "channel")).To(Equal("stable"))

	f.policy(`
metadata:
  name: literal
  annotations: {policy.open-cluster-management.io/disable-templates: "true"}
spec:
  remediationAction: inform
  complianceType: musthave
  upgradeApproval: None
  subscription:
    namespace: $NS
    name: $PKG
    channel: '{{ (lookup "v1" "ConfigMap" "$NS" "values").data.channel }}'
    source: catalog
    sourceNamespace: $NS
`)
	f.g.Eventually(f.condition("literal", CondSubscription), eventually, poll).Should(
		Equal("the Subscription found on the cluster does not match the policy"))
}
