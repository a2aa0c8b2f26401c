package faults

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/cmdtest"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

func init() {
	ctrl.SetLogger(logr.Discard()) // the binaries log to their own files
	SetDefaultEventuallyTimeout(3 * time.Minute)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
}

// soak reports whether the long variant runs (CANOPY_SOAK=1).
func soak() bool { return os.Getenv("CANOPY_SOAK") != "" && os.Getenv("CANOPY_SOAK") != "0" }

// scale returns normal, or long in the soak variant.
func scale(normal, long int) int {
	if soak() {
		return long
	}
	return normal
}

// newRand returns a random source seeded from CANOPY_FAULTS_SEED or the
// clock, and logs the seed so that a failing run can be replayed.
func newRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CANOPY_FAULTS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "CANOPY_FAULTS_SEED")
		seed = v
	}
	t.Logf("random seed %d (replay with CANOPY_FAULTS_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x5eed)) //nolint:gosec // reproducible fault injection, not security
}

// randomDelay returns a duration in [lo, hi).
func randomDelay(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)))
}

// raw marshals obj for an objectDefinition or a HierarchyPolicy resource.
func raw(obj map[string]any) runtime.RawExtension {
	data, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return runtime.RawExtension{Raw: data}
}

// configMap returns a ConfigMap as a map.
func configMap(namespace, name string, data map[string]any) map[string]any {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
}

// configurationPolicy returns a policy template: a ConfigurationPolicy that
// must have obj, with action inform or enforce.
func configurationPolicy(name, action string, obj map[string]any, deps ...policyv1.PolicyDependency) policyv1.PolicyTemplate {
	return policyv1.PolicyTemplate{ObjectDefinition: raw(map[string]any{
		"apiVersion": policyv1.GroupVersion.String(), "kind": "ConfigurationPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"remediationAction": action, "object-templates": []any{
			map[string]any{"complianceType": "musthave", "objectDefinition": obj},
		}},
	}), ExtraDependencies: deps}
}

// dependency names a dependency on a policy kind, in the cluster namespace.
func dependency(kind, name string) policyv1.PolicyDependency {
	d := policyv1.PolicyDependency{Name: name, Compliance: policyv1.Compliant}
	d.APIVersion, d.Kind = policyv1.GroupVersion.String(), kind
	return d
}

// replica returns a replica as the hub's propagator writes it, in the
// cluster namespace of cluster.
func replica(cluster, name string, templates ...policyv1.PolicyTemplate) *policyv1.Policy {
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name, Labels: map[string]string{
			policyv1.RootPolicyLabel: "faults." + name, policyv1.ClusterNameLabel: cluster, policyv1.ClusterNamespaceLabel: cluster,
		}},
		Spec: policyv1.PolicySpec{PolicyTemplates: templates},
	}
}

// agentUser is the agent's identity on its managed cluster, which the
// deletion audit attributes requests to.
const agentUser = "canopy-agent"

// newAgent prepares the agent binary for cluster, as the user agentUser
// holding the agent's generated ClusterRoles (deploy/spoke/rbac: its
// machinery, and the default, broad enforcement role).
func newAgent(t *testing.T, mc *testenv.ManagedCluster) (*process, string) {
	t.Helper()
	kubeconfig, err := mc.KubeconfigAs(t.Context(), t.TempDir(), agentUser,
		"deploy/spoke/rbac/role.yaml", "deploy/spoke/rbac/enforcement/role.yaml")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	health := cmdtest.FreeAddress(t)
	return newProcess(t, "canopy-agent",
		"--kubeconfig", kubeconfig,
		"--hub-kubeconfig", mc.HubKubeconfigPath,
		"--cluster-name", mc.Name,
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", health,
	), health
}

// hubUser is the hub controller's identity on the hub.
const hubUser = "canopy-hub"

// newHub prepares the hub binary as the user hubUser holding the hub's
// generated ClusterRole (deploy/hub/rbac), without the addon manager (no
// agent is installed through OCM here). It returns the process and its
// health and metrics addresses.
func newHub(t *testing.T, env *testenv.Env) (p *process, health, metrics string) {
	t.Helper()
	kubeconfig, err := env.Hub.KubeconfigAs(t.Context(), t.TempDir(), hubUser, "deploy/hub/rbac/role.yaml")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	health, metrics = cmdtest.FreeAddress(t), cmdtest.FreeAddress(t)
	return newProcess(t, "canopy-hub",
		"--kubeconfig", kubeconfig,
		"--addon-manager=false",
		"--metrics-bind-address", metrics,
		"--health-probe-bind-address", health,
	), health, metrics
}
