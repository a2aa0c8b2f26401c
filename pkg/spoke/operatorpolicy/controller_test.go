package operatorpolicy

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/test/olmsim"
)

func TestInstallInform(t *testing.T) {
	f := newFixture(t, "alpha", "v1")
	f.policy(fmt.Sprintf(musthave, "inform", "None", "[]"))

	f.g.Eventually(f.message("install"), eventually, poll).Should(Equal("NonCompliant; the policy spec is valid, " +
		"the OperatorGroup required by the policy was not found, the Subscription required by the policy was not found, " +
		"there are no relevant InstallPlans in the namespace, the ClusterServiceVersion required by the policy was not found, " +
		"no CRDs were found for the operator, there are no relevant deployments because the ClusterServiceVersion is missing, " +
		"CatalogSource was found"))
	f.g.Consistently(f.list(olmsim.SubscriptionGVK), quiet, poll).Should(BeEmpty())
	f.g.Expect(f.list(olmsim.OperatorGroupGVK)(f.g)).To(BeEmpty())
	f.g.Eventually(f.events(), eventually, poll).Should(ConsistOf(HavePrefix("NonCompliant; the policy spec is valid")))
}

func TestInstallEnforce(t *testing.T) {
	f := newFixture(t, "beta", "v1")
	f.policy(fmt.Sprintf(musthave, "enforce", "None", "[]"))

	f.g.Eventually(f.message("install"), eventually, poll).Should(Equal("Compliant; the policy spec is valid, " +
		"the OperatorGroup matches what is required by the policy, the Subscription matches what is required by the policy, " +
		"no InstallPlans requiring approval were found, " +
		"ClusterServiceVersion (beta.v1) - install strategy completed with no errors, " +
		"no CRDs were found for the operator, no existing operator Deployments, CatalogSource was found"))
	sub := f.object(olmsim.SubscriptionGVK, "beta")(f.g)
	f.g.Expect(field(sub, "spec", "installPlanApproval")).To(Equal("Manual"), "upgrades wait for the policy")
	f.g.Expect(field(sub, "metadata", "annotations", ManagedByAnnotation)).To(Equal(f.ns + ".install"))
	f.g.Expect(f.list(olmsim.OperatorGroupGVK)(f.g)).To(ConsistOf(HavePrefix(f.ns + "-")))
	st := f.status("install")(f.g)
	f.g.Expect(st.ResolvedSubscriptionLabel).To(Equal("beta." + f.ns))
	f.g.Eventually(f.events(), eventually, poll).Should(ContainElements(
		HavePrefix("NonCompliant; "), HavePrefix("Compliant; ")))
	f.g.Expect(f.events()(f.g)).NotTo(ContainElement(ContainSubstring("was updated")), "created as the policy wants it")

	// Steady state: no more events, no more status writes.
	events := f.events()(f.g)
	version := func(g Gomega) string {
		p := &policyv1beta1.OperatorPolicy{}
		g.Expect(f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "install"}, p)).To(Succeed())
		return p.ResourceVersion
	}
	f.g.Consistently(version, quiet, poll).Should(Equal(version(f.g)))
	f.g.Expect(f.events()(f.g)).To(Equal(events))
}

func TestUpgradeApproval(t *testing.T) {
	for _, tc := range []struct {
		name, pkg, approval, versions string
		// installed is the CSV installed at the end; message the
		// InstallPlanCompliant condition's.
		installed, message string
	}{
		{name: "allowed", pkg: "gamma", approval: "Automatic", versions: "[gamma.v1, gamma.v2]",
			installed: "gamma.v2", message: "no InstallPlans requiring approval were found"},
		{name: "not in versions", pkg: "delta", approval: "Automatic", versions: "[delta.v1]", installed: "delta.v1",
			message: "an InstallPlan to update to [delta.v2] is available for approval but approval for [delta.v2] is required"},
		{name: "upgradeApproval None", pkg: "epsilon", approval: "None", versions: "[]", installed: "epsilon.v1",
			message: "an InstallPlan to update to [epsilon.v2] is available for approval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.pkg, "v1")
			f.policy(fmt.Sprintf(musthave, "enforce", tc.approval, tc.versions))
			f.g.Eventually(f.message("install"), eventually, poll).Should(HavePrefix("Compliant;"))
			f.g.Expect(sim.Publish(t.Context(), tc.pkg, "stable", tc.pkg+".v2")).To(Succeed())

			f.g.Eventually(f.condition("install", CondInstallPlan), eventually, poll).Should(Equal(tc.message))
			installed := func(g Gomega) string {
				return field(f.object(olmsim.SubscriptionGVK, tc.pkg)(g), "status", "installedCSV")
			}
			f.g.Eventually(installed, eventually, poll).Should(Equal(tc.installed))
			f.g.Consistently(installed, quiet, poll).Should(Equal(tc.installed))
			f.g.Eventually(f.message("install"), eventually, poll).Should(And(HavePrefix("Compliant;"),
				ContainSubstring("ClusterServiceVersion ("+tc.installed+") - install strategy completed with no errors")))
		})
	}
}

func TestFailingCSV(t *testing.T) {
	f := newFixture(t, "zeta", "v1")
	sim.Fail("zeta.v1", "deployment zeta-controller is not available")
	f.policy(fmt.Sprintf(musthave, "enforce", "Automatic", "[]"))

	f.g.Eventually(f.message("install"), eventually, poll).Should(And(HavePrefix("NonCompliant; "), ContainSubstring(
		"ClusterServiceVersion (zeta.v1) - install strategy failed: deployment zeta-controller is not available")))
	st := f.status("install")(f.g)
	c, _ := st.Condition(CondCSV)
	f.g.Expect(c.Reason).To(Equal("InstallComponentFailed"))
	f.g.Eventually(f.events(), eventually, poll).Should(ContainElement(ContainSubstring("install strategy failed")))
}

func TestUnknownCatalog(t *testing.T) {
	f := newFixture(t, "eta", "v1")
	f.policy(`
metadata: {name: install}
spec:
  remediationAction: enforce
  complianceType: musthave
  upgradeApproval: None
  subscription: {namespace: $NS, name: eta, channel: stable, source: nowhere, sourceNamespace: $NS}
`)
	f.g.Eventually(f.condition("install", CondSubscription), eventually, poll).Should(
		Equal("constraints not satisfiable: refer to the Subscription for more details"))
	f.g.Eventually(f.condition("install", CondCatalogSource), eventually, poll).Should(Equal("CatalogSource 'nowhere' was not found"))
	f.g.Expect(f.message("install")(f.g)).To(HavePrefix("NonCompliant; "))
}

// installed installs pkg with an enforced musthave policy, then deletes
// that policy, leaving the operator in place.
func (f *fixture) installed() {
	f.t.Helper()
	p := f.policy(fmt.Sprintf(musthave, "enforce", "None", "[]"))
	f.g.Eventually(f.message("install"), eventually, poll).Should(HavePrefix("Compliant;"))
	f.g.Expect(f.c.Delete(f.t.Context(), p)).To(Succeed())
}

// mustnothave is an OperatorPolicy removing $PKG; %s are the
// remediationAction and the removalBehavior (a YAML map).
const mustnothave = `
metadata: {name: remove}
spec:
  remediationAction: %s
  complianceType: mustnothave
  upgradeApproval: None
  removalBehavior: %s
  subscription:
    namespace: $NS
    name: $PKG
    channel: stable
    source: catalog
    sourceNamespace: $NS
`

func TestMustNotHave(t *testing.T) {
	for _, tc := range []struct {
		name, pkg, action, removal string
		// message is the Compliant condition's at the end; left are the
		// kinds of objects left (Subscription, CSV, OperatorGroup).
		message string
		left    []bool
	}{
		{name: "defaults, enforce", pkg: "theta", action: "enforce", removal: "{}", left: []bool{false, false, false},
			message: "Compliant; the policy spec is valid, the OperatorGroup is not present, the Subscription is not present, " +
				"there are no relevant InstallPlans in the namespace, the ClusterServiceVersion is not present, " +
				"no CRDs were found for the operator, MustNotHave policies ignore kind Deployment, " +
				"MustNotHave policies ignore kind CatalogSource"},
		{name: "keep, enforce", pkg: "iota", action: "enforce", left: []bool{true, true, true},
			removal: "{operatorGroups: Keep, subscriptions: Keep, clusterServiceVersions: Keep}",
			message: "Compliant; the policy spec is valid, the policy specifies to keep the OperatorGroup, " +
				"the policy specifies to keep the Subscription, MustNotHave policies ignore kind InstallPlan, " +
				"the policy specifies to keep the ClusterServiceVersion, no CRDs were found for the operator, " +
				"MustNotHave policies ignore kind Deployment, MustNotHave policies ignore kind CatalogSource"},
		{name: "defaults, inform", pkg: "kappa", action: "inform", removal: "{}", left: []bool{true, true, true},
			message: "NonCompliant; the policy spec is valid, the OperatorGroup is present, the Subscription is present, " +
				"MustNotHave policies ignore kind InstallPlan, the ClusterServiceVersion (kappa.v1) is present, " +
				"no CRDs were found for the operator, MustNotHave policies ignore kind Deployment, " +
				"MustNotHave policies ignore kind CatalogSource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.pkg, "v1")
			f.installed()
			f.policy(fmt.Sprintf(mustnothave, tc.action, tc.removal))

			f.g.Eventually(f.message("remove"), eventually, poll).Should(Equal(tc.message))
			exists := func(g Gomega) []bool {
				return []bool{f.object(olmsim.SubscriptionGVK, tc.pkg)(g) != nil,
					f.object(olmsim.CSVGVK, tc.pkg+".v1")(g) != nil, len(f.list(olmsim.OperatorGroupGVK)(g)) > 0}
			}
			f.g.Consistently(exists, quiet, poll).Should(Equal(tc.left))
		})
	}
}

func TestMustNotHaveKeepsSharedOperatorGroup(t *testing.T) {
	f := newFixture(t, "lambda", "v1")
	f.installed()
	other := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": "other"}}}
	other.SetGroupVersionKind(olmsim.SubscriptionGVK)
	other.SetNamespace(f.ns)
	other.SetName("other")
	f.g.Expect(f.c.Create(t.Context(), other)).To(Succeed())
	f.policy(fmt.Sprintf(mustnothave, "enforce", "{}"))

	f.g.Eventually(f.condition("remove", CondOperatorGroup), eventually, poll).Should(
		Equal("the policy specifies to keep the OperatorGroup"))
	f.g.Eventually(f.object(olmsim.SubscriptionGVK, "lambda"), eventually, poll).Should(BeNil())
	f.g.Expect(f.list(olmsim.OperatorGroupGVK)(f.g)).To(HaveLen(1))
}

// TestDefaultsFromPackageManifest: a Subscription naming only its package
// gets its channel, catalog and namespace from the PackageManifest.
func TestDefaultsFromPackageManifest(t *testing.T) {
	f := newFixture(t, "omicron", "v1")
	f.policy(`
metadata: {name: install}
spec:
  remediationAction: enforce
  complianceType: musthave
  upgradeApproval: None
  subscription: {name: omicron}
`)
	f.g.Eventually(f.message("install"), eventually, poll).Should(HavePrefix("Compliant; the policy spec is valid"))
	sub := f.object(olmsim.SubscriptionGVK, "omicron")(f.g)
	f.g.Expect([]string{field(sub, "spec", "channel"), field(sub, "spec", "source"), field(sub, "spec", "sourceNamespace")}).
		To(Equal([]string{"stable", "catalog", f.ns}))
}

// TestNoPackageManifest: without a PackageManifest, the defaults cannot be
// determined (OCM's message), and nothing is created.
func TestNoPackageManifest(t *testing.T) {
	f := newFixture(t, "pi", "v1")
	f.policy(`
metadata: {name: install}
spec:
  remediationAction: enforce
  complianceType: musthave
  upgradeApproval: None
  subscription: {name: unknown-package, namespace: $NS}
`)
	f.g.Eventually(f.message("install"), eventually, poll).Should(Equal("NonCompliant; " +
		"the subscription defaults could not be determined because the PackageManifest was not found"))
	f.g.Expect(f.list(olmsim.SubscriptionGVK)(f.g)).To(BeEmpty())
}

// TestMustNotHaveDeletesCRDs: customResourceDefinitions Delete removes the
// CRDs OLM labelled as the operator's; the default, Keep, leaves them.
func TestMustNotHaveDeletesCRDs(t *testing.T) {
	f := newFixture(t, "rho", "v1")
	f.installed()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + f.ns + ".example.com",
			Labels: map[string]string{"operators.coreos.com/rho." + f.ns: ""}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: f.ns + ".example.com", Scope: "Namespaced",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}},
	}
	f.g.Expect(f.c.Create(t.Context(), crd)).To(Succeed())
	t.Cleanup(func() { _ = f.c.Delete(context.Background(), crd) })
	f.policy(fmt.Sprintf(mustnothave, "inform", "{}"))
	f.g.Eventually(f.condition("remove", CondCRD), eventually, poll).Should(
		Equal("the policy specifies to keep the CustomResourceDefinition"))

	f.g.Expect(f.c.Delete(t.Context(), &policyv1beta1.OperatorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "remove"}})).To(Succeed())
	f.policy(fmt.Sprintf(mustnothave, "enforce", "{customResourceDefinitions: Delete}"))
	gone := func(g Gomega) bool {
		err := f.c.Get(t.Context(), client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err)
	}
	f.g.Eventually(gone, eventually, poll).Should(BeTrue())
	f.g.Eventually(f.condition("remove", CondCRD), eventually, poll).Should(Equal("no CRDs were found for the operator"))
}
