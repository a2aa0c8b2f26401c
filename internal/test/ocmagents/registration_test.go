package ocmagents_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// TestJoin joins two clusters with OCM's registration agents, one accepted
// as clusteradm accept does and one by the hub's auto-approval, and checks
// what OCM's hub then knows and what each cluster's issued identity is.
func TestJoin(t *testing.T) {
	g := NewWithT(t)
	start := time.Now()
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{"cluster1"}, Unregistered: true})
	logOnFailure(t, env)
	ctx := t.Context()
	g.Expect(ocmagents.StartControllerManager(ctx, env)).To(Succeed())
	g.Expect(ocmagents.StartRegistrationController(ctx, env, ocmagents.RegistrationOptions{})).To(Succeed())
	mc := env.Cluster("cluster1")
	g.Expect(mc.HubConfig).To(BeNil(), "an unregistered cluster has no hub identity")

	k, err := ocmagents.Join(ctx, env, mc, true)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("started a hub and a cluster, and joined it, in %v", time.Since(start).Round(time.Millisecond))

	cluster := &clusterv1.ManagedCluster{}
	g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Name: "cluster1"}, cluster)).To(Succeed())
	g.Expect(cluster.Spec.HubAcceptsClient).To(BeTrue())
	g.Expect(meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)).To(BeTrue())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Name: "cluster1"}, cluster)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)).
			To(BeTrue(), "the agent keeps its lease")
		g.Expect(cluster.Labels).To(HaveKeyWithValue(clusterv1beta2.ClusterSetLabel, "default"), "the hub's default ManagedClusterSet")
	}).WithTimeout(time.Minute).Should(Succeed())
	g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Name: "cluster1"}, &corev1.Namespace{})).To(Succeed(), "the cluster namespace")

	cfg, err := clientcmd.BuildConfigFromFlags("", k.HubKubeconfig())
	g.Expect(err).NotTo(HaveOccurred())
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().
		Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(review.Status.UserInfo.Username).To(HavePrefix("system:open-cluster-management:cluster1:"))
	g.Expect(review.Status.UserInfo.Groups).To(ContainElement("system:open-cluster-management:cluster1"))
	_, err = os.Stat(filepath.Join(env.Dir, "logs", "work-agent-cluster1.log"))
	g.Expect(err).NotTo(HaveOccurred(), "the work agent runs with the issued identity")
}

// TestJoinAutoApproved joins a cluster to a hub that accepts the bootstrap
// identity's requests itself, as the demo's hub does: nobody approves.
func TestJoinAutoApproved(t *testing.T) {
	g := NewWithT(t)
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{"cluster1"}, Unregistered: true})
	logOnFailure(t, env)
	ctx := t.Context()
	g.Expect(ocmagents.StartControllerManager(ctx, env)).To(Succeed())
	g.Expect(ocmagents.StartRegistrationController(ctx, env, ocmagents.RegistrationOptions{AutoApprove: true})).To(Succeed())
	_, err := ocmagents.Join(ctx, env, env.Cluster("cluster1"), false)
	g.Expect(err).NotTo(HaveOccurred())
	cluster := &clusterv1.ManagedCluster{}
	g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Name: "cluster1"}, cluster)).To(Succeed())
	g.Expect(cluster.Spec.HubAcceptsClient).To(BeTrue())
}
