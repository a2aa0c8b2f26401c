package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
	"github.com/canopy-policy/canopy/test/inproc"
)

// AddonInstallSpecInput is the input of AddonInstallSpec.
type AddonInstallSpecInput struct {
	// HubConfig is an administrator's connection to the hub, on which the
	// spec runs the hub as cmd/hub does, with its addon manager.
	HubConfig *rest.Config
	// HubClient is an administrator's client of the hub.
	HubClient client.Client
	// ManagedClient is an administrator's client of ClusterName, where an OCM
	// work agent applies the ManifestWorks of its cluster namespace.
	ManagedClient client.Client
	// ClusterName is the registered cluster to enable the addon on.
	ClusterName string
	// Env is the hub and the managed clusters: the spec also runs the
	// delivered agent (as a local process, with the cluster's hub identity;
	// no kubelet runs the Deployment) and follows an authored policy to
	// compliance on the hub.
	Env *testenv.Env
}

// AddonInstallSpec is the user story "install Canopy's agent on a cluster
// the OCM way": with the hub's addon manager running, enabling the addon on
// a cluster (a ManagedClusterAddOn, as `clusteradm addon enable` creates)
// delivers the agent's manifests to the managed cluster through a
// ManifestWork and OCM's work agent. No kubelet runs the Deployment.
//
// Note: the spec leaves the addon enabled, so that the agent it delivered
// stays installed for later specs.
func AddonInstallSpec(inputGetter func() AddonInstallSpecInput) {
	var input AddonInstallSpecInput

	BeforeEach(func() {
		input = inputGetter()
		Expect(input.HubConfig).NotTo(BeNil(), "AddonInstallSpec needs a HubConfig")
		Expect(input.HubClient).NotTo(BeNil(), "AddonInstallSpec needs a HubClient")
		Expect(input.ManagedClient).NotTo(BeNil(), "AddonInstallSpec needs a ManagedClient")
		Expect(input.ClusterName).NotTo(BeEmpty(), "AddonInstallSpec needs a ClusterName")
		Expect(input.Env).NotTo(BeNil(), "AddonInstallSpec needs an Env")
		runHub(input.HubConfig, false) // the suite runs the addon manager (StartEnvironment)
	})

	It("delivers the agent's manifests to the managed cluster", func(ctx SpecContext) {
		Expect(input.Env.EnableAddon(ctx, input.ClusterName, addon.Name)).To(Succeed())

		ns := addon.DefaultInstallNamespace
		for _, obj := range []client.Object{
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: addon.AgentName}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: addon.AgentName}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: addon.AgentName}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: addon.AgentName}},
		} {
			Eventually(func() error { return input.ManagedClient.Get(ctx, client.ObjectKeyFromObject(obj), obj) }).
				WithTimeout(time.Minute).Should(Succeed(), "%T %s on %s", obj, client.ObjectKeyFromObject(obj), input.ClusterName)
		}

		work := addonWork(ctx, input.HubClient, input.ClusterName)
		Expect(meta.IsStatusConditionTrue(work.Status.Conditions, workv1.WorkApplied)).To(BeTrue())
		var crds []string
		for _, m := range work.Status.ResourceStatus.Manifests {
			if m.ResourceMeta.Kind == "CustomResourceDefinition" &&
				meta.IsStatusConditionTrue(m.Conditions, workv1.ManifestApplied) {
				crds = append(crds, m.ResourceMeta.Name)
			}
		}
		Expect(crds).To(ContainElement("policies.policy.open-cluster-management.io"))
		for _, name := range crds {
			Expect(input.ManagedClient.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
		}
	})

	It("runs the delivered agent, which reports an authored policy's compliance to the hub", func(ctx SpecContext) {
		expectAgentReportsCompliance(ctx, input)
	})
}

// expectAgentReportsCompliance enables the addon, runs the agent it
// delivered (as a local process would, with the cluster's hub identity) and
// follows an authored policy to Compliant on the hub.
func expectAgentReportsCompliance(ctx context.Context, input AddonInstallSpecInput) {
	GinkgoHelper()
	Expect(input.Env.EnableAddon(ctx, input.ClusterName, addon.Name)).To(Succeed())
	addonWork(ctx, input.HubClient, input.ClusterName) // the agent is installed
	startAgent(input.Env.Cluster(input.ClusterName))

	ns := CreateNamespace(ctx, input.HubClient, "addon-flow")
	wanted := ns + "-created-by-policy"
	Expect(input.HubClient.Create(ctx, namespacePolicy(ns, "team-namespace", wanted))).To(Succeed())
	Expect(input.HubClient.Create(ctx, &policyv1.PlacementBinding{
		ObjectMeta:   metav1.ObjectMeta{Namespace: ns, Name: "team-namespace"},
		PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "team-namespace"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: "team-namespace"}},
	})).To(Succeed())
	Expect(input.Env.SetPlacementDecisions(ctx, ns, "team-namespace", input.ClusterName)).To(Succeed())

	Eventually(func(g Gomega) map[string]policyv1.ComplianceState {
		p := &policyv1.Policy{}
		g.Expect(input.HubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-namespace"}, p)).To(Succeed())
		return perCluster(p)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).
		Should(Equal(allOf([]string{input.ClusterName}, policyv1.Compliant)))
	Expect(input.ManagedClient.Get(ctx, client.ObjectKey{Name: wanted}, &corev1.Namespace{})).To(Succeed())
}

// namespacePolicy is a Policy whose one template enforces that namespace
// wanted exists.
func namespacePolicy(ns, name, wanted string) *policyv1.Policy {
	template := `{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",` +
		`"metadata":{"name":"` + name + `-` + ns + `"},"spec":{"remediationAction":"enforce","object-templates":[` +
		`{"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + wanted + `"}}}]}}`
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{
			{ObjectDefinition: runtime.RawExtension{Raw: []byte(template)}},
		}},
	}
}

// runHub runs the hub as cmd/hub assembles it, with its addon manager when
// addonManager is set, until the spec (or the ordered container) ends.
func runHub(cfg *rest.Config, addonManager bool) {
	GinkgoHelper()
	opts := inproc.HubOptions()
	opts.AddonManager, opts.Agent = addonManager, addon.Options{Image: "example.com/canopy:e2e"}
	running, err := inproc.RunHub(context.Background(), cfg, opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(running.Stop()).To(Succeed()) })
}

// addonWork returns the addon's ManifestWork in the cluster namespace once
// the work agent reports every manifest applied.
func addonWork(ctx context.Context, c client.Client, cluster string) *workv1.ManifestWork {
	GinkgoHelper()
	works := &workv1.ManifestWorkList{}
	Eventually(func(g Gomega) {
		g.Expect(c.List(ctx, works, client.InNamespace(cluster),
			client.MatchingLabels{addonv1beta1.AddonLabelKey: addon.Name})).To(Succeed())
		g.Expect(works.Items).To(HaveLen(1))
		g.Expect(works.Items[0].Status.ResourceStatus.Manifests).To(HaveLen(len(works.Items[0].Spec.Workload.Manifests)))
		g.Expect(works.Items[0].Status.ResourceStatus.Manifests).To(HaveEach(
			HaveField("Conditions", ContainElement(SatisfyAll(
				HaveField("Type", workv1.ManifestApplied), HaveField("Status", metav1.ConditionTrue))))))
	}).WithTimeout(time.Minute).Should(Succeed())
	return &works.Items[0]
}
