package addon_test

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
	"github.com/canopy-policy/canopy/pkg/hubrbac"
)

// TestManagerInstallsAgent runs the addon manager on a real hub API server
// and enables the addon on a cluster the way `clusteradm addon enable` and
// OCM's addon-manager would (a ManagedClusterAddOn owned by the
// ClusterManagementAddOn), then checks the end state: registration in the
// ManagedClusterAddOn's status, the agent's hub RBAC, and the ManifestWork
// that installs the agent.
func TestManagerInstallsAgent(t *testing.T) {
	g := NewWithT(t)
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{}})
	ctx, c := t.Context(), env.Hub.Client
	const cluster = "cluster1"
	acceptCluster(t, c, cluster)

	m := &addon.Manager{Config: env.Hub.Config, Options: addon.Options{Image: "example.com/canopy:test"}}
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	t.Cleanup(func() { g.Expect(<-done).To(Succeed()) }) // t.Context() is cancelled before cleanups

	cma := &addonv1beta1.ClusterManagementAddOn{}
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKey{Name: addon.Name}, cma) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(c.Create(ctx, &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{
		Name: addon.Name, Namespace: cluster,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: addonv1beta1.GroupVersion.String(),
			Kind: "ClusterManagementAddOn", Name: cma.Name, UID: cma.UID, Controller: ptr.To(true)}},
	}})).To(Succeed())

	mca := &addonv1beta1.ManagedClusterAddOn{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: addon.Name}, mca)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1beta1.ManagedClusterAddOnRegistrationApplied)).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(mca.Status.Namespace).To(Equal(addon.DefaultInstallNamespace))
	g.Expect(mca.Status.Registrations).To(HaveLen(1))
	reg := mca.Status.Registrations[0]
	g.Expect(reg.Type).To(Equal(addonv1beta1.KubeClient))
	g.Expect(reg.KubeClient.Subject.User).To(Equal(hubrbac.User(cluster)))
	g.Expect(reg.KubeClient.Subject.Groups).To(Equal(hubrbac.Groups(cluster)))

	expectAgentRBAC(t, c, cluster, mca)
	expectManifestWork(t, c, cluster)
}

// acceptCluster creates an accepted, available ManagedCluster and its
// namespace, without the agent RBAC testenv.RegisterCluster would add: the
// addon's permission hook is to create it.
func acceptCluster(t *testing.T, c client.Client, name string) {
	g := NewWithT(t)
	ctx := t.Context()
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	g.Expect(c.Create(ctx, mc)).To(Succeed())
	mc.Status.Conditions = []metav1.Condition{
		{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()},
		{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "Available", LastTransitionTime: metav1.Now()},
	}
	mc.Status.Version.Kubernetes = "v1.37.1"
	g.Expect(c.Status().Update(ctx, mc)).To(Succeed())
}

func expectAgentRBAC(t *testing.T, c client.Client, cluster string, mca *addonv1beta1.ManagedClusterAddOn) {
	g := NewWithT(t)
	ctx := t.Context()
	role, binding := &rbacv1.Role{}, &rbacv1.RoleBinding{}
	key := client.ObjectKey{Namespace: cluster, Name: hubrbac.Name}
	g.Eventually(func() error { return c.Get(ctx, key, role) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(role.Rules).To(Equal(hubrbac.Rules()))
	g.Expect(role.OwnerReferences).To(ConsistOf(HaveField("UID", mca.UID)))
	g.Expect(c.Get(ctx, key, binding)).To(Succeed())
	g.Expect(binding.Subjects).To(ConsistOf(hubrbac.GroupSubject(cluster)))
	g.Expect(binding.RoleRef.Name).To(Equal(role.Name))
}

func expectManifestWork(t *testing.T, c client.Client, cluster string) {
	g := NewWithT(t)
	ctx := t.Context()
	works := &workv1.ManifestWorkList{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.List(ctx, works, client.InNamespace(cluster),
			client.MatchingLabels{addonv1beta1.AddonLabelKey: addon.Name})).To(Succeed())
		g.Expect(works.Items).To(HaveLen(1))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	var kinds []string
	var deployment *appsv1.Deployment
	for _, m := range works.Items[0].Spec.Workload.Manifests {
		obj := &metav1.PartialObjectMetadata{}
		g.Expect(json.Unmarshal(m.Raw, obj)).To(Succeed())
		kinds = append(kinds, obj.Kind+"/"+obj.Name)
		if obj.Kind == "Deployment" {
			deployment = &appsv1.Deployment{}
			g.Expect(json.Unmarshal(m.Raw, deployment)).To(Succeed())
		}
	}
	g.Expect(kinds).To(ContainElements(
		"ClusterRole/canopy-agent", "ServiceAccount/canopy-agent", "ClusterRoleBinding/canopy-agent",
		"ClusterRole/canopy-agent-enforcement", "ClusterRoleBinding/canopy-agent-enforcement",
		"CustomResourceDefinition/policies.policy.open-cluster-management.io", "Deployment/canopy-agent"))
	g.Expect(deployment).NotTo(BeNil())
	container := deployment.Spec.Template.Spec.Containers[0]
	g.Expect(container.Image).To(Equal("example.com/canopy:test"))
	g.Expect(container.Args).To(ContainElements("--cluster-name="+cluster, "--hub-kubeconfig=/var/run/secrets/canopy/hub/kubeconfig"))
	g.Expect(deployment.Spec.Template.Spec.Volumes[0].Secret.SecretName).To(Equal(addon.HubKubeconfigSecret))
}
