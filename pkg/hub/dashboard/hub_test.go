package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/cmdutil/cmdtest"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/internal/testenv"
	"github.com/canopy-policy/canopy/pkg/hub/dashboard"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hub/rootstatus"
)

// startHub starts a hub control plane and, as the identity bound only to
// the hub's generated ClusterRole (deploy/hub/rbac), a manager running the
// propagator, the status controller and the dashboard, as cmd/hub does. It
// returns the admin client and the dashboard's base URL; the manager stops
// (and must stop cleanly) when the test ends.
func startHub(t *testing.T) (client.Client, string) {
	t.Helper()
	g := NewWithT(t)
	hub, err := testenv.StartControlPlane(t.Context(), "hub")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = hub.Stop() })
	kubeconfig, err := hub.KubeconfigAs(t.Context(), t.TempDir(), "canopy-hub", "deploy/hub/rbac/role.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := cmdutil.RESTConfig(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	mgr, err := cmdutil.NewManager(cfg, manager.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&policyv1.Policy{}: {Transform: propagator.TrimPolicy}, // as cmd/hub: no replica history in the cache
		}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	address := cmdtest.FreeAddress(t)
	ctx, cancel := context.WithCancel(t.Context())
	for _, r := range []interface {
		SetupWithManager(context.Context, ctrl.Manager) error
	}{
		&propagator.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("canopy-propagator")},
		&rootstatus.Reconciler{Client: mgr.GetClient(), CoalesceWindow: 100 * time.Millisecond},
		&dashboard.Server{Address: address, RefreshInterval: 300 * time.Millisecond},
	} {
		g.Expect(r.SetupWithManager(ctx, mgr)).To(Succeed())
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		NewWithT(t).Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()), "the manager and the dashboard stop cleanly")
	})
	base := "http://" + address
	g.Eventually(func() error { return get(base + "/api/matrix") }).WithTimeout(time.Minute).Should(Succeed())
	return hub.Client, base
}

func get(url string) error {
	resp, err := http.Get(url) //nolint:gosec,noctx // a test's loopback URL
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// fleet is the test's hub content: cluster namespaces, placements and
// policies, some depending on others.
type fleet struct {
	clusters []string
	// placements maps a placement name to its clusters.
	placements map[string][]string
	policies   []fleetPolicy
}

type fleetPolicy struct {
	name, placement, template string
	dependsOn                 string
}

const policyNS = "policies"

// create writes f on the hub as a user would (the propagator then makes the
// replicas).
func (f fleet) create(t *testing.T, c client.Client) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	for _, ns := range append([]string{policyNS}, f.clusters...) {
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	for name, clusters := range f.placements {
		pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: policyNS,
			Labels: map[string]string{clusterv1beta1.PlacementLabel: name}}}
		g.Expect(c.Create(ctx, pd)).To(Succeed())
		for _, cl := range clusters {
			pd.Status.Decisions = append(pd.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: cl})
		}
		g.Expect(c.Status().Update(ctx, pd)).To(Succeed())
	}
	for _, p := range f.policies {
		g.Expect(c.Create(ctx, p.object())).To(Succeed())
		g.Expect(c.Create(ctx, &policyv1.PlacementBinding{
			ObjectMeta:   metav1.ObjectMeta{Name: p.name, Namespace: policyNS},
			PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: p.placement},
			Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: policyv1.PolicyKind, Name: p.name}},
		})).To(Succeed())
	}
}

func (p fleetPolicy) object() *policyv1.Policy {
	def := fmt.Sprintf(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",`+
		`"metadata":{"name":%q},"spec":{"remediationAction":"inform","object-templates":[]}}`, p.template)
	policy := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: policyNS},
		Spec: policyv1.PolicySpec{RemediationAction: "inform", PolicyTemplates: []policyv1.PolicyTemplate{
			{ObjectDefinition: runtime.RawExtension{Raw: []byte(def)}},
		}},
	}
	if p.dependsOn != "" {
		policy.Spec.Dependencies = []policyv1.PolicyDependency{{
			TypeMeta: metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: policyv1.PolicyKind},
			Name:     p.dependsOn, Compliance: policyv1.Compliant,
		}}
	}
	return policy
}

// report writes the compliance of policy's replica on cluster, as that
// cluster's agent would: the replica's status.compliant and its template's
// details with one history entry carrying message.
func report(t *testing.T, c client.Client, cluster string, p fleetPolicy, state policyv1.ComplianceState, message string) {
	t.Helper()
	replica := &policyv1.Policy{}
	key := client.ObjectKey{Namespace: cluster, Name: policyNS + "." + p.name}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(c.Get(t.Context(), key, replica)).To(Succeed())
		var history []policyv1.ComplianceHistory
		if len(replica.Status.Details) > 0 {
			history = replica.Status.Details[0].History
		}
		replica.Status.ComplianceState = state
		replica.Status.Details = []policyv1.DetailsPerTemplate{{
			TemplateMeta:    metav1.ObjectMeta{Name: p.template},
			ComplianceState: state,
			History: append([]policyv1.ComplianceHistory{{
				LastTimestamp: metav1.Now(), Message: string(state) + "; " + message, EventName: p.name + "." + cluster,
			}}, history...),
		}}
		g.Expect(c.Status().Update(t.Context(), replica)).To(Succeed())
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
