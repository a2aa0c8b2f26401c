package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/history"
	"github.com/canopy-policy/canopy/pkg/historyview"
	"github.com/canopy-policy/canopy/pkg/hub"
	"github.com/canopy-policy/canopy/pkg/hub/dashboard"
	hubhistory "github.com/canopy-policy/canopy/pkg/hub/history"
)

// TestHistory runs the hub's history recorder with the embedded store and
// its dashboard, reports compliance on a replica as an agent does, and
// reads the history back with `kubectl canopy history` through the
// dashboard, for the policy and for a policy set holding it. The
// propagator does not run: it would delete the test's replica, whose root
// is placed on no cluster.
func TestHistory(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	cp := controlplane.ForTest(t, "hub")
	c := cp.Client
	ctx := t.Context()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	address := l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
	opts := hub.Options{DashboardAddress: address, HistoryDatabase: filepath.Join(t.TempDir(), "history.db"), HubName: "hub-a"}
	stop, err := controlplane.StartManager(cp.Config, hub.ManagerOptions(opts), func(mgr ctrl.Manager) error {
		recorder := &hubhistory.Recorder{Database: opts.HistoryDatabase, HubName: opts.HubName, Retention: history.DefaultRetention}
		server := &dashboard.Server{Address: opts.DashboardAddress, History: dashboard.NewHistoryReader(opts.HistoryDatabase)}
		return errors.Join(recorder.SetupWithManager(context.Background(), mgr), server.SetupWithManager(context.Background(), mgr))
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(stop()).To(Succeed()) })

	createNamespace(t, c, "policies")
	createNamespace(t, c, "cluster-a")
	root := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: "baseline"},
		Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}}}
	g.Expect(c.Create(ctx, root)).To(Succeed())
	set := &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: "security"},
		Spec: policyv1beta1.PolicySetSpec{Policies: []policyv1.NonEmptyString{"baseline"}}}
	g.Expect(c.Create(ctx, set)).To(Succeed())
	replica := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster-a", Name: "policies.baseline", Labels: map[string]string{
		policyv1.RootPolicyLabel: "policies.baseline", policyv1.ClusterNameLabel: "cluster-a", policyv1.ClusterNamespaceLabel: "cluster-a",
	}}, Spec: policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}}}
	g.Expect(c.Create(ctx, replica)).To(Succeed())
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	replica.Status.Details = []policyv1.DetailsPerTemplate{{TemplateMeta: metav1.ObjectMeta{Name: "cfg"}, ComplianceState: policyv1.Compliant,
		History: []policyv1.ComplianceHistory{
			{LastTimestamp: metav1.NewTime(t0.Add(time.Minute)), Message: "Compliant; notification - pods found as specified", EventName: "e2"},
			{LastTimestamp: metav1.NewTime(t0), Message: "Pending; Dependencies were not satisfied: 1 is still pending (Policy other)", EventName: "e1"},
		}}}
	replica.Status.ComplianceState = policyv1.Compliant
	g.Expect(c.Status().Update(ctx, replica)).To(Succeed())

	dashboard := "http://" + address
	csv := strings.Join([]string{
		"time,hub,cluster,policy,template,state,message",
		t0.Format(time.RFC3339) + ",hub-a,cluster-a,policies/baseline,cfg,Pending,Dependencies were not satisfied: 1 is still pending (Policy other)",
		t0.Add(time.Minute).Format(time.RFC3339) + ",hub-a,cluster-a,policies/baseline,cfg,Compliant,notification - pods found as specified",
	}, "\n") + "\n"
	for _, name := range []string{"baseline", "security"} {
		g.Eventually(func() (string, error) {
			return runHistory(t, cp, name, "-n", "policies", "--dashboard", dashboard, "-o", "csv")
		}).Should(Equal(csv), name)
	}

	out, err := runHistory(t, cp, "policies/baseline", "--dashboard", dashboard, "-o", "json", "--cluster", "cluster-b")
	g.Expect(err).NotTo(HaveOccurred())
	var answer historyview.HistoryView
	g.Expect(json.Unmarshal([]byte(out), &answer)).To(Succeed())
	g.Expect(answer.Transitions).To(BeEmpty(), "another cluster")

	out, err = runHistory(t, cp, "baseline", "-n", "policies", "--dashboard", dashboard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("TIME"))
	g.Expect(out).To(ContainSubstring("Pending"))

	_, err = runHistory(t, cp, "baseline", "-n", "policies", "--dashboard", dashboard, "--since", "yesterday")
	g.Expect(err).To(MatchError(ContainSubstring("400 Bad Request: since:")))
}

func createNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func runHistory(t *testing.T, cp *controlplane.ControlPlane, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCommand(&out, &out)
	root.SetArgs(append([]string{"--kubeconfig", cp.KubeconfigPath, "history"}, args...))
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}
