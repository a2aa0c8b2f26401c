package main

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/hub"
	hubhistory "github.com/canopy-policy/canopy/pkg/hub/history"
)

func TestHubDeployment(t *testing.T) {
	for _, tc := range []struct {
		flag, podNamespace string
		want               types.NamespacedName
	}{
		{flag: "canopy-hub", podNamespace: "canopy-system", want: types.NamespacedName{Namespace: "canopy-system", Name: "canopy-hub"}},
		{flag: "canopy-hub", podNamespace: "", want: types.NamespacedName{}},
		{flag: "ns/hub", podNamespace: "", want: types.NamespacedName{Namespace: "ns", Name: "hub"}},
		{flag: "none", podNamespace: "canopy-system", want: types.NamespacedName{}},
		{flag: "", podNamespace: "canopy-system", want: types.NamespacedName{}},
	} {
		g := NewWithT(t)
		g.Expect(hubDeployment(tc.flag, tc.podNamespace)).To(Equal(tc.want), "--hub-deployment=%q in %q", tc.flag, tc.podNamespace)
	}
}

// TestRunBadHistoryDatabase: a history database URL the hub cannot use
// does not stop the hub: every controller runs, and the hub's Deployment
// carries HistoryRecording False with a Warning Event, written with the
// RBAC generated from the markers and never quoting the URL.
func TestRunBadHistoryDatabase(t *testing.T) {
	g := NewWithT(t)
	cp := controlplane.ForTest(t, "hub")
	kubeconfig, err := cp.KubeconfigAs(t.Context(), t.TempDir(), "canopy-hub", "deploy/hub/rbac/role.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	labels := map[string]string{"app": "canopy-hub"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: hubhistory.DeploymentName},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "hub", Image: "canopy"}}},
			},
		},
	}
	g.Expect(cp.Client.Create(t.Context(), deployment)).To(Succeed())

	opts, err := parseFlags([]string{
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", "0",
		"--addon-manager=false",
		"--history-database", "postgres://canopy:s3cret@db:notaport/history",
		"--hub-deployment", "default/" + hubhistory.DeploymentName,
	})
	g.Expect(err).NotTo(HaveOccurred())
	// Note: the hub's manager as run builds it, without the probes and
	// leader election: run registers controller names process-wide, and
	// TestRun runs it.
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	opts.hub.HubDeployment = hubDeployment(opts.hubDeployment, "")
	stop, err := controlplane.StartManager(cfg, hub.ManagerOptions(opts.hub), func(mgr ctrl.Manager) error {
		return hub.Setup(t.Context(), mgr, opts.hub)
	})
	g.Expect(err).NotTo(HaveOccurred(), "a bad history database does not stop the hub")
	expectControllersRun(t, cp.Client)
	g.Eventually(func(g Gomega) {
		g.Expect(cp.Client.Get(t.Context(), client.ObjectKeyFromObject(deployment), deployment)).To(Succeed())
		g.Expect(deployment.Status.Conditions).To(ContainElement(And(
			HaveField("Type", appsv1.DeploymentConditionType(hubhistory.ConditionHistoryRecording)),
			HaveField("Status", corev1.ConditionFalse),
			HaveField("Reason", hubhistory.ReasonInvalidDatabaseURL),
			HaveField("Message", Not(ContainSubstring("s3cret"))))))
	}).Should(Succeed())
	g.Eventually(func() ([]string, error) {
		list := &corev1.EventList{}
		if err := cp.Client.List(t.Context(), list, client.InNamespace("default")); err != nil {
			return nil, err
		}
		var reasons []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Deployment" && e.InvolvedObject.Name == hubhistory.DeploymentName {
				reasons = append(reasons, e.Type+" "+e.Reason)
			}
		}
		return reasons, nil
	}).Should(ConsistOf("Warning " + hubhistory.ReasonInvalidDatabaseURL))
	g.Expect(stop()).To(Succeed())
}
