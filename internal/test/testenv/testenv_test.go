package testenv_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

func TestEnv(t *testing.T) {
	start := time.Now()
	env := testenv.ForTest(t, testenv.Options{})
	t.Logf("started a hub and %d managed clusters in %v", len(env.Managed), time.Since(start).Round(time.Millisecond))

	t.Run("kubeconfigs", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Managed).To(HaveLen(2))
		for _, kc := range []struct {
			file  string
			agent bool // restricted to its cluster namespace on the hub
		}{
			{"hub.kubeconfig", false},
			{"cluster1.kubeconfig", false},
			{"cluster2.kubeconfig", false},
			{"cluster1-hub.kubeconfig", true},
			{"cluster2-hub.kubeconfig", true},
		} {
			cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(env.Dir, kc.file))
			g.Expect(err).NotTo(HaveOccurred(), kc.file)
			c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
			g.Expect(err).NotTo(HaveOccurred())
			if kc.agent {
				ns := strings.TrimSuffix(kc.file, "-hub.kubeconfig")
				g.Expect(c.List(t.Context(), &policyv1.PolicyList{}, client.InNamespace(ns))).To(Succeed(), kc.file)
			} else {
				g.Expect(c.List(t.Context(), &corev1.NamespaceList{})).To(Succeed(), kc.file)
			}
		}
		g.Expect(env.Hub.KubeconfigPath).To(Equal(filepath.Join(env.Dir, "hub.kubeconfig")))
		g.Expect(env.Cluster("cluster2").HubKubeconfigPath).To(Equal(filepath.Join(env.Dir, "cluster2-hub.kubeconfig")))
	})

	t.Run("every control plane serves the CRDs", func(t *testing.T) {
		g := NewWithT(t)
		for _, c := range []client.Client{env.Hub.Client, env.Managed[0].Client, env.Managed[1].Client} {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(c.Get(t.Context(), client.ObjectKey{Name: "policies.policy.open-cluster-management.io"}, crd)).To(Succeed())
			g.Expect(c.Get(t.Context(), client.ObjectKey{Name: "placementdecisions.cluster.open-cluster-management.io"}, crd)).To(Succeed())
			g.Expect(c.List(t.Context(), &policyv1.PolicyList{})).To(Succeed())
		}
	})

	t.Run("clusters are registered", func(t *testing.T) {
		g := NewWithT(t)
		for _, name := range []string{"cluster1", "cluster2"} {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKey{Name: name}, mc)).To(Succeed())
			g.Expect(mc.Spec.HubAcceptsClient).To(BeTrue())
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)).To(BeTrue())
			g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKey{Name: name}, &corev1.Namespace{})).To(Succeed())
		}
	})

	t.Run("agents are confined to their cluster namespace", func(t *testing.T) {
		g := NewWithT(t)
		agent := env.Cluster("cluster1").HubClient
		g.Expect(agent.List(t.Context(), &policyv1.PolicyList{}, client.InNamespace("cluster1"))).To(Succeed())
		err := agent.List(t.Context(), &policyv1.PolicyList{}, client.InNamespace("cluster2"))
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		err = agent.List(t.Context(), &corev1.SecretList{}, client.InNamespace("cluster1"))
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	})

	t.Run("SetPlacementDecisions", func(t *testing.T) {
		g := NewWithT(t)
		ns := controlplane.Namespace(t, env.Hub.Client)
		g.Expect(env.SetPlacementDecisions(t.Context(), ns, "p", "cluster1", "cluster2")).To(Succeed())
		g.Expect(env.SetPlacementDecisions(t.Context(), ns, "p", "cluster2")).To(Succeed())
		list := &clusterv1beta1.PlacementDecisionList{}
		g.Expect(env.Hub.Client.List(t.Context(), list, client.InNamespace(ns),
			client.MatchingLabels{clusterv1beta1.PlacementLabel: "p"})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		g.Expect(list.Items[0].Status.Decisions).To(Equal([]clusterv1beta1.ClusterDecision{{ClusterName: "cluster2", Reason: testenv.DecisionReason}}))
		g.Expect(env.SetPlacementDecisions(t.Context(), ns, "p")).To(Succeed())
		g.Expect(env.Hub.Client.List(t.Context(), list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items[0].Status.Decisions).To(BeEmpty())
	})

	t.Run("FromKubeconfigs", func(t *testing.T) {
		g := NewWithT(t)
		// Remove a CRD from cluster1 so that FromKubeconfigs has one to install.
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "subnamespaces.hierarchy.canopy.io"}}
		c1 := env.Cluster("cluster1").Client
		g.Expect(c1.Delete(t.Context(), crd)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(c1.Get(t.Context(), client.ObjectKeyFromObject(crd), crd))
		}).WithTimeout(30 * time.Second).Should(BeTrue())

		existing, err := testenv.FromKubeconfigs(t.Context(), env.Hub.KubeconfigPath,
			map[string]string{"cluster3": env.Cluster("cluster1").KubeconfigPath})
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { g.Expect(existing.Stop()).To(Succeed()) }()

		g.Expect(c1.Get(t.Context(), client.ObjectKeyFromObject(crd), crd)).To(Succeed())
		mc := existing.Cluster("cluster3")
		g.Expect(mc).NotTo(BeNil())
		g.Expect(mc.HubConfig.BearerToken).NotTo(BeEmpty()) // a ServiceAccount token, not a certificate
		g.Expect(mc.HubClient.List(t.Context(), &policyv1.PolicyList{}, client.InNamespace("cluster3"))).To(Succeed())
		err = mc.HubClient.List(t.Context(), &policyv1.PolicyList{}, client.InNamespace("cluster1"))
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		g.Expect(mc.HubKubeconfigPath).To(BeAnExistingFile())
	})

	t.Run("Background runs until Stop, which ends it before the control planes", func(t *testing.T) {
		g := NewWithT(t)
		bctx, goRun := env.Background(t.Context())
		hubAtEnd := make(chan error, 1)
		goRun(func() {
			<-bctx.Done()
			hubAtEnd <- env.Hub.Client.List(context.Background(), &corev1.NamespaceList{})
		})
		g.Consistently(bctx.Done()).WithTimeout(100 * time.Millisecond).ShouldNot(BeClosed())
		g.Expect(env.Stop()).To(Succeed())
		g.Expect(hubAtEnd).To(Receive(BeNil()), "the hub serves until the background has returned")
		late, _ := env.Background(t.Context())
		g.Expect(late.Done()).To(BeClosed(), "after Stop, a background ends at once")
	})

	t.Run("Stop removes everything", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Stop()).To(Succeed())
		g.Expect(env.Stop()).To(Succeed()) // idempotent
		_, err := os.Stat(env.Dir)
		g.Expect(os.IsNotExist(err)).To(BeTrue(), "%s remains", env.Dir)
	})
}

func TestStartRejectsBadNames(t *testing.T) {
	for _, names := range [][]string{{"hub"}, {"a", "a"}, {"Not_A_Label"}} {
		_, err := testenv.Start(t.Context(), testenv.Options{ManagedClusters: names})
		NewWithT(t).Expect(err).To(HaveOccurred(), "%v", names)
	}
}
