package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"

	"github.com/canopy-policy/canopy/internal/test/cmdtest"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
)

func TestParseFlags(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseFlags([]string{"--kubeconfig", "/tmp/hub", "--leader-elect", "--zap-log-level", "debug"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.kubeconfig).To(Equal("/tmp/hub"))
	g.Expect(opts.leaderElect).To(BeTrue())
	g.Expect(opts.serving.HealthAddress).To(Equal(":8081"))

	g.Expect(opts.hub.ConcurrentReconciles).To(Equal(2))
	g.Expect(opts.hub.AddonManager).To(BeTrue())
	g.Expect(opts.hub.Agent.Image).To(Equal(addon.DefaultImage))
	g.Expect(opts.hub.DashboardAddress).To(BeEmpty(), "no dashboard unless asked for")
	g.Expect(opts.hub.HistoryDatabase).To(BeEmpty(), "no history unless asked: deploy/hub asks for the embedded one, on its claim")
	g.Expect(opts.hub.HistoryRetention).To(Equal(365 * 24 * time.Hour))
	g.Expect(opts.hub.HubName).To(Equal("hub"))

	opts, err = parseFlags([]string{"--addon-manager=false", "--agent-image", "example.com/canopy:v1", "--agent-log-level", "debug"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.hub.AddonManager).To(BeFalse())
	g.Expect(opts.hub.Agent).To(Equal(addon.Options{Image: "example.com/canopy:v1", ImagePullPolicy: "IfNotPresent", LogLevel: "debug"}))

	g.Expect(opts.hub.TemplateFuncDenylist).To(BeEmpty(), "only the library's own deny-list unless asked for")
	opts, err = parseFlags([]string{"--template-function-denylist", "lookup, fromSecret", "--template-function-denylist=add,"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.hub.TemplateFuncDenylist).To(Equal([]string{"lookup", "fromSecret", "add"}), "comma-separated and repeatable, as OCM's")

	_, err = parseFlags([]string{"stray"})
	g.Expect(err).To(MatchError(ContainSubstring("unexpected arguments")))
	_, err = parseFlags([]string{"--concurrent-reconciles", "0"})
	g.Expect(err).To(MatchError(ContainSubstring("at least 1")))
	_, err = parseFlags([]string{"--history-retention", "0s"})
	g.Expect(err).To(MatchError(ContainSubstring("--history-retention must be positive")))
}

// TestRun starts the hub against a real API server with leader election, as a
// user holding only the ClusterRole generated from the RBAC markers
// (deploy/hub/rbac), waits until it is ready, checks that every controller
// works and that it shuts down cleanly.
func TestRun(t *testing.T) {
	g := NewWithT(t)
	hub := controlplane.ForTest(t, "hub")
	kubeconfig, err := hub.KubeconfigAs(t.Context(), t.TempDir(), "canopy-hub", "deploy/hub/rbac/role.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	dashboard := cmdtest.FreeAddress(t)

	opts, err := parseFlags([]string{
		"--kubeconfig", kubeconfig,
		"--leader-elect", "--leader-election-namespace", "default",
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", cmdtest.FreeAddress(t),
		"--dashboard-address", dashboard,
		"--history-database", filepath.Join(t.TempDir(), "history.db"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	stop := cmdtest.RunUntilReady(t, opts.serving.HealthAddress, func(ctx context.Context) error { return run(ctx, opts) })
	expectControllersRun(t, hub.Client)
	g.Eventually(func() error { // the addon manager runs, with the generated RBAC
		return hub.Client.Get(t.Context(), client.ObjectKey{Name: addon.Name}, &addonv1beta1.ClusterManagementAddOn{})
	}).Should(Succeed())
	g.Eventually(func() (string, error) { // the dashboard serves what the hub's cache holds, with the same RBAC
		return getBody("http://" + dashboard + "/api/matrix")
	}).Should(ContainSubstring(`"cluster1"`))
	stop()
}

func getBody(url string) (string, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // a test's loopback URL
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// expectControllersRun checks that run started every hub controller: a
// policy bound to a placement gets a replica (propagator), per-cluster
// status (rootstatus), and its policy set a status (policysetstatus).
func expectControllersRun(t *testing.T, c client.Client) {
	g := NewWithT(t)
	ctx := t.Context()
	for _, ns := range []string{"cluster1", "policies"} {
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: "pl-1", Namespace: "policies",
		Labels: map[string]string{clusterv1beta1.PlacementLabel: "pl"}}}
	g.Expect(c.Create(ctx, pd)).To(Succeed())
	pd.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "cluster1"}}
	g.Expect(c.Status().Update(ctx, pd)).To(Succeed())
	set := &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: "set", Namespace: "policies"},
		Spec: policyv1beta1.PolicySetSpec{Policies: []policyv1.NonEmptyString{"pol"}}}
	g.Expect(c.Create(ctx, set)).To(Succeed())
	g.Expect(c.Create(ctx, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: "pol", Namespace: "policies"},
		Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}}})).To(Succeed())
	g.Expect(c.Create(ctx, &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: "pb", Namespace: "policies"},
		PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: "pl"},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: policyv1beta1.PolicySetKind, Name: "set"}}})).To(Succeed())

	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "policies.pol"}, &policyv1.Policy{})
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		root := &policyv1.Policy{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "policies", Name: "pol"}, root)).To(Succeed())
		g.Expect(root.Status.Status).To(HaveLen(1))
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
		g.Expect(set.Status.StatusMessage).NotTo(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
