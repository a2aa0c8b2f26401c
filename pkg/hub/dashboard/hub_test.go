package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/hub"
)

// suite is a hub control plane with, as the identity bound only to the
// hub's generated ClusterRole (deploy/hub/rbac), a manager running the hub's
// controllers and the dashboard, as cmd/hub does (pkg/hub). The manager must
// stop cleanly when the suite ends: Main fails the run otherwise.
var suite = &controlplane.Suite{Name: "hub", Start: runHub}

// dashboardBase is the dashboard's base URL, set when the suite starts.
var dashboardBase string

func TestMain(m *testing.M) { suite.Main(m) }

// startHub returns the hub's admin client and the dashboard's base URL,
// starting the suite if it is not running.
func startHub(t *testing.T) (client.Client, string) {
	t.Helper()
	return suite.Get(t).Client, dashboardBase
}

// runHub runs the hub with the dashboard on cp until the returned stop, and
// waits for the dashboard to answer.
func runHub(cp *controlplane.ControlPlane) (func() error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kubeconfig, err := cp.KubeconfigAs(ctx, filepath.Dir(cp.KubeconfigPath), "canopy-hub", "deploy/hub/rbac/role.yaml")
	if err != nil {
		return nil, err
	}
	cfg, err := cmdutil.RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	address, err := freeAddress()
	if err != nil {
		return nil, err
	}
	opts := hub.Options{DashboardAddress: address, DashboardRefresh: 300 * time.Millisecond, CoalesceWindow: 100 * time.Millisecond}
	stop, err := controlplane.StartManager(cfg, hub.ManagerOptions(opts), func(mgr ctrl.Manager) error {
		return hub.Setup(context.Background(), mgr, opts)
	})
	if err != nil {
		return nil, err
	}
	dashboardBase = "http://" + address
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return get(dashboardBase+"/api/matrix") == nil, nil
	}); err != nil {
		return nil, errors.Join(fmt.Errorf("waiting for the dashboard: %w", err), stop())
	}
	return stop, nil
}

// freeAddress returns a loopback address with a port nobody listens on.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
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
	// sets maps a PolicySet name to its members; each is bound to the
	// placement "all".
	sets map[string][]string
}

// fleetPolicy is a root policy: its template, or with chain, templates
// each of which waits (extraDependencies) for the one before, as in
// examples/ordered-install.
type fleetPolicy struct {
	name, placement, template string
	chain                     []string
	dependsOn                 string
	// progressive gives the policy a Progressive rollout strategy, all
	// clusters at once, so that the hub writes its status.rollout.
	progressive bool
}

// templates are the names of p's templates.
func (p fleetPolicy) templates() []string {
	if p.chain != nil {
		return p.chain
	}
	return []string{p.template}
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
		g.Expect(c.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: policyNS}})).To(Succeed())
		pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: policyNS,
			Labels: map[string]string{clusterv1beta1.PlacementLabel: name, clusterv1beta1.DecisionGroupIndexLabel: "0"}}}
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
	for name, members := range f.sets {
		set := &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: policyNS}}
		for _, m := range members {
			set.Spec.Policies = append(set.Spec.Policies, policyv1.NonEmptyString(m))
		}
		g.Expect(c.Create(ctx, set)).To(Succeed())
		// Note: a set's compliance counts the clusters its own binding selects.
		g.Expect(c.Create(ctx, &policyv1.PlacementBinding{
			ObjectMeta:   metav1.ObjectMeta{Name: "set-" + name, Namespace: policyNS},
			PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: "all"},
			Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: policyv1beta1.PolicySetKind, Name: name}},
		})).To(Succeed())
	}
}

func (p fleetPolicy) object() *policyv1.Policy {
	policy := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: policyNS},
		Spec:       policyv1.PolicySpec{RemediationAction: "inform"},
	}
	for i, name := range p.templates() {
		def := fmt.Sprintf(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",`+
			`"metadata":{"name":%q},"spec":{"remediationAction":"inform","object-templates":[]}}`, name)
		t := policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: []byte(def)}}
		if i > 0 {
			t.ExtraDependencies = []policyv1.PolicyDependency{{
				TypeMeta: metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: "ConfigurationPolicy"},
				Name:     p.templates()[i-1], Compliance: policyv1.Compliant,
			}}
		}
		policy.Spec.PolicyTemplates = append(policy.Spec.PolicyTemplates, t)
	}
	if p.progressive {
		policy.Spec.RolloutStrategy = &clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive,
			Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromString("100%")}}
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
// cluster's agent would: the replica's status.compliant and each
// template's details with one more history entry carrying message.
func report(t *testing.T, c client.Client, cluster string, p fleetPolicy, state policyv1.ComplianceState, message string) {
	t.Helper()
	replica := &policyv1.Policy{}
	key := client.ObjectKey{Namespace: cluster, Name: policyNS + "." + p.name}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(c.Get(t.Context(), key, replica)).To(Succeed())
		old := replica.Status.Details
		replica.Status.ComplianceState = state
		replica.Status.Details = nil
		for i, name := range p.templates() {
			var history []policyv1.ComplianceHistory
			if i < len(old) {
				history = old[i].History
			}
			replica.Status.Details = append(replica.Status.Details, policyv1.DetailsPerTemplate{
				TemplateMeta:    metav1.ObjectMeta{Name: name},
				ComplianceState: state,
				History: append([]policyv1.ComplianceHistory{{
					LastTimestamp: metav1.Now(), Message: string(state) + "; " + message, EventName: p.name + "." + cluster,
				}}, history...),
			})
		}
		g.Expect(c.Status().Update(t.Context(), replica)).To(Succeed())
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
