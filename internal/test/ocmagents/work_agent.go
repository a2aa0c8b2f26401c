package ocmagents

import (
	"context"
	"fmt"
	"path/filepath"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// workRBACFiles are the hub RBAC that OCM's registration controller gives
// every accepted cluster's work agent: a ClusterRole for ManifestWorks and
// events, bound in the cluster namespace to the cluster's agent group.
var workRBACFiles = []string{
	"pkg/registration/hub/manifests/rbac/managedcluster-work-clusterrole.yaml",
	"pkg/registration/hub/manifests/rbac/managedcluster-work-rolebinding.yaml",
}

// AddonNamespace is the namespace the klusterlet creates on every managed
// cluster for addon agents (OCM's DefaultAddonNamespace); StartWorkAgent
// creates it too.
const AddonNamespace = "open-cluster-management-agent-addon"

// WorkAgentUser returns the hub user of the work agent of cluster, as OCM
// registration names its agents (the work agent shares the klusterlet's
// hub identity on a real hub).
func WorkAgentUser(cluster string) string {
	return fmt.Sprintf("system:open-cluster-management:%s:work-agent", cluster)
}

// workAgentGroups are the hub groups OCM registration gives the agents of
// cluster.
func workAgentGroups(cluster string) []string {
	return []string{"system:open-cluster-management:" + cluster, "system:open-cluster-management:managed-clusters"}
}

// StartWorkAgent runs OCM's work agent (bin/ocm/<Version>/work, see
// AssetsEnv) for the managed cluster mc of env until env.Stop: it applies
// the ManifestWorks of the hub's cluster namespace to mc, and reports their
// status, as the klusterlet's work agent does. Its hub identity is a client
// certificate in the groups OCM registration gives the cluster's agents,
// with the RBAC OCM gives them (kubeconfig:
// env.Dir/<name>-work-hub.kubeconfig). Like the klusterlet, it creates
// AddonNamespace on mc. The agent logs to env.Dir/work-agent-<name>.log.
//
// A cluster that joined with Join has its work agent already, with the
// identity OCM issued.
func StartWorkAgent(ctx context.Context, env *testenv.Env, mc *testenv.ManagedCluster) error {
	if err := ensureWorkRBAC(ctx, env.Hub.Client, mc.Name); err != nil {
		return err
	}
	hubCfg, err := env.Hub.AddUser(WorkAgentUser(mc.Name), workAgentGroups(mc.Name)...)
	if err != nil {
		return fmt.Errorf("issuing the work agent identity of %s: %w", mc.Name, err)
	}
	workClient, err := client.New(hubCfg, client.Options{Scheme: controlplane.Scheme()})
	if err != nil {
		return err
	}
	if err := testenv.WaitForAccess(ctx, workClient, mc.Name, &workv1.ManifestWorkList{}); err != nil {
		return fmt.Errorf("waiting for the work agent RBAC of %s: %w", mc.Name, err)
	}
	hubKubeconfig := filepath.Join(env.Dir, mc.Name+"-work-hub.kubeconfig")
	if err := controlplane.WriteKubeconfig(hubKubeconfig, mc.Name+"-work-agent", hubCfg); err != nil {
		return err
	}
	return startWorkAgent(ctx, env, mc, hubKubeconfig)
}

// startWorkAgent creates AddonNamespace on mc, as the klusterlet does, and
// runs the work agent of mc with hubKubeconfig.
func startWorkAgent(ctx context.Context, env *testenv.Env, mc *testenv.ManagedCluster, hubKubeconfig string) error {
	addonNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: AddonNamespace}}
	if err := controlplane.CreateAll(ctx, mc.Client, []client.Object{addonNS}); err != nil {
		return err
	}
	return workAgent(mc, hubKubeconfig).start(ctx, env)
}

// workAgent is the work agent process of mc, with hubKubeconfig as its hub
// identity and source of ManifestWorks.
func workAgent(mc *testenv.ManagedCluster, hubKubeconfig string) process {
	return process{
		name: "work-agent-" + mc.Name,
		bin:  "work",
		args: []string{
			"agent",
			"--spoke-cluster-name=" + mc.Name,
			"--kubeconfig=" + mc.KubeconfigPath,
			"--hub-kubeconfig=" + hubKubeconfig,
			"--workload-source-config=" + hubKubeconfig,
			"--namespace=" + AddonNamespace, // for its events on mc
			"--disable-leader-election",
			"--status-sync-interval=1s", // status is what tests wait on
			// Note: a ManifestWork deleted before the agent's cache holds the
			// AppliedManifestWork it has just created loses its finalizer
			// without its resources being deleted (OCM v1.2.0: the finalizer
			// finds no AppliedManifestWork to delete). The agent then evicts
			// the orphaned AppliedManifestWork, and deletes what it applied,
			// only after this grace period (60 minutes by default). Tests
			// delete ManifestWorks within milliseconds of their apply.
			"--appliedmanifestwork-eviction-grace-period=15s",
			"--hub-kube-api-qps=100", "--hub-kube-api-burst=200",
			"--kube-api-qps=100", "--kube-api-burst=200",
		},
		ready: `"Starting worker of controller ..." logger="ManifestWorkController"`,
	}
}

// ensureWorkRBAC writes OCM registration's work RBAC for cluster, rendered
// from the ocm module's own manifests (see readManifest).
func ensureWorkRBAC(ctx context.Context, c client.Client, cluster string) error {
	data := struct {
		ManagedClusterName string
		Labels             map[string]string
	}{ManagedClusterName: cluster}
	objs := []client.Object{&rbacv1.ClusterRole{}, &rbacv1.RoleBinding{}}
	for i, file := range workRBACFiles {
		if err := renderManifest(file, data, objs[i]); err != nil {
			return err
		}
		// Note: the finalizer is for OCM's registration controller, which
		// does not run here; it would keep the binding forever.
		objs[i].SetFinalizers(nil)
	}
	if err := controlplane.CreateAll(ctx, c, objs); err != nil {
		return fmt.Errorf("writing the work agent RBAC of %s: %w", cluster, err)
	}
	return nil
}

// StartWorkAgents starts the work agent of every managed cluster of env at
// once (see StartWorkAgent).
func StartWorkAgents(ctx context.Context, env *testenv.Env) error {
	var g errgroup.Group
	for _, mc := range env.Managed {
		g.Go(func() error { return StartWorkAgent(ctx, env, mc) })
	}
	return g.Wait()
}
