package specsync_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/clusterns"
	"github.com/canopy-policy/canopy/pkg/spoke/specsync"
)

// suite is one hub and one managed API server. Each test registers its own
// cluster (a new cluster namespace on the hub, with the agent's hub
// identity and RBAC) and runs specsync for it, as the agent does.
var suite = &testenv.Suite{Options: testenv.Options{ManagedClusters: []string{"managed"}}}

func TestMain(m *testing.M) {
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	EnforceDefaultTimeoutsWhenUsingContexts()
	suite.Main(m)
}

// cluster is one test's registered cluster.
type cluster struct {
	t       *testing.T
	env     *testenv.Env
	ns      string        // the cluster namespace, on the hub and on the managed cluster
	hub     client.Client // hub administrator
	managed client.Client // managed administrator

	hubConfig *rest.Config // the agent's hub identity
}

// newCluster registers a cluster named after the test and runs specsync for
// it until the test ends.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	c := registerCluster(t)
	c.startSpecsync(t, c.hubConfig)
	return c
}

// registerCluster registers a cluster named after the test on the hub. Its
// namespace does not exist on the managed cluster: specsync creates it.
func registerCluster(t *testing.T) *cluster {
	t.Helper()
	short := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, strings.ToLower(strings.TrimPrefix(t.Name(), "Test")))
	name := fmt.Sprintf("s%s-%04x", short[:min(len(short), 30)], rand.IntN(1<<16))
	env := suite.Get(t)
	hubCfg, err := env.RegisterCluster(t.Context(), name)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return &cluster{t: t, env: env, ns: name, hub: env.Hub.Client, managed: env.Managed[0].Client, hubConfig: hubCfg}
}

// startSpecsync runs specsync for c as the agent runs it: in a hub manager
// connected with hubConfig (the agent's hub identity), its cache restricted
// to the cluster namespace, with a managed manager's cache for the local
// Policies. Both stop when the test ends.
func (c *cluster) startSpecsync(t *testing.T, hubConfig *rest.Config) {
	t.Helper()
	g := NewWithT(t)
	var managed ctrl.Manager
	stopManaged, err := controlplane.StartManager(c.env.Managed[0].Config, manager.Options{}, func(mgr ctrl.Manager) error {
		managed = mgr
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(stopManaged()).To(Succeed()) })
	stopHub, err := controlplane.StartManager(hubConfig, manager.Options{
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{c.ns: {}}},
	}, func(mgr ctrl.Manager) error {
		r := &specsync.Reconciler{Clients: clusterns.Clients{HubClient: mgr.GetClient(), ManagedClient: managed.GetClient(), ClusterNamespace: c.ns}}
		return r.SetupWithManager(mgr, managed.GetCache())
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(stopHub()).To(Succeed()) })
}

// replica returns a replica of root policy default/name in c's cluster
// namespace, as the propagator writes it.
func (c *cluster) replica(name string) *policyv1.Policy {
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "default." + name,
			Labels: map[string]string{
				policyv1.RootPolicyLabel:       "default." + name,
				policyv1.ClusterNameLabel:      c.ns,
				policyv1.ClusterNamespaceLabel: c.ns,
				"team":                         "payments",
			},
			Annotations: map[string]string{"policy.open-cluster-management.io/standards": "NIST SP 800-53"},
		},
		Spec: policyv1.PolicySpec{RemediationAction: policyv1.Inform, PolicyTemplates: []policyv1.PolicyTemplate{}},
	}
}

// local returns a function that gets the local Policy of the same
// namespace and name as p on the managed cluster, nil when there is none.
func (c *cluster) local(p client.Object) func(Gomega) *policyv1.Policy {
	key := client.ObjectKeyFromObject(p)
	return func(g Gomega) *policyv1.Policy {
		local := &policyv1.Policy{}
		if err := c.managed.Get(c.t.Context(), key, local); err != nil {
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			return nil
		}
		return local
	}
}
