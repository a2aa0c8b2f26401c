package ocmagents

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// AgentNamespace is the namespace of OCM's agents on a managed cluster (the
// klusterlet's), where the registration agent keeps its hub credential.
const AgentNamespace = "open-cluster-management-agent"

// joinTimeout bounds a join: the registration agent's start, its request,
// the acceptance and the signature.
const joinTimeout = 2 * time.Minute

// RegistrationOptions configures StartRegistrationController.
type RegistrationOptions struct {
	// AutoApprove makes the hub accept every cluster that asks to join with
	// the bootstrap identity (OCM's ManagedClusterAutoApproval feature, with
	// BootstrapUser as the auto-approved user), as a demo hub may. Without
	// it, Accept does what `clusteradm accept` does.
	AutoApprove bool
}

// StartRegistrationController runs OCM's registration controller on env's
// hub until env.Stop, after creating the hub's bootstrap identity (see
// BootstrapUser). For accepted clusters it creates the cluster namespace and
// the agents' hub RBAC, and watches their leases; it creates the default
// and global ManagedClusterSets. Clusters' certificates are signed by
// kube-controller-manager: start it with StartControllerManager. It logs to
// env.Dir/logs/registration-controller.log.
func StartRegistrationController(ctx context.Context, env *testenv.Env, opts RegistrationOptions) error {
	if err := ensureBootstrapIdentity(ctx, env.Hub.Client); err != nil {
		return err
	}
	args := []string{"controller", "--kubeconfig=" + env.Hub.KubeconfigPath, "--disable-leader-election", "--v=4"}
	if opts.AutoApprove {
		args = append(args, "--feature-gates=ManagedClusterAutoApproval=true", "--auto-approved-csr-users="+BootstrapUser)
	}
	p := process{
		name:  "registration-controller",
		bin:   "registration",
		args:  args,
		ready: `"Starting worker of controller ..." logger="ManagedClusterController"`,
	}
	return p.start(ctx, env)
}

// Klusterlet is what joining gave a managed cluster: OCM's registration
// agent runs there, holding the cluster's hub identity.
type Klusterlet struct {
	// HubKubeconfigDir holds the cluster's hub credential (kubeconfig,
	// tls.crt, tls.key), as the registration agent writes it; the work
	// agent reads it too.
	HubKubeconfigDir string
}

// HubKubeconfig is the path of the cluster's hub kubeconfig.
func (k *Klusterlet) HubKubeconfig() string { return filepath.Join(k.HubKubeconfigDir, "kubeconfig") }

// Join joins mc to env's hub the way `clusteradm join` does, and returns once
// the hub has signed the cluster's certificate, the ManagedCluster is Joined
// and OCM's work agent runs on mc with the cluster's new hub identity (see
// StartWorkAgent). It runs OCM's registration agent on mc (until env.Stop) with a
// bootstrap kubeconfig holding a token of BootstrapUser; the agent creates
// the ManagedCluster and a CertificateSigningRequest on the hub. With accept,
// Join then accepts the cluster as `clusteradm accept` does (see Accept);
// otherwise the hub must (RegistrationOptions.AutoApprove), and Join creates
// the ManagedCluster before the agent starts (see preRegister). The agents log to
// env.Dir/logs/registration-agent-<name>.log and work-agent-<name>.log.
func Join(ctx context.Context, env *testenv.Env, mc *testenv.ManagedCluster, accept bool) (*Klusterlet, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: AgentNamespace}}
	if err := controlplane.CreateAll(ctx, mc.Client, []client.Object{ns}); err != nil {
		return nil, err
	}
	bootstrap, err := writeBootstrapKubeconfig(ctx, env, mc.Name)
	if err != nil {
		return nil, err
	}
	k := &Klusterlet{HubKubeconfigDir: filepath.Join(env.Dir, mc.Name+"-hub-kubeconfig")}
	if !accept { // Note: see preRegister
		if err := preRegister(ctx, env.Hub.Client, mc.Name); err != nil {
			return nil, err
		}
	}
	if err := registrationAgent(mc, bootstrap, k.HubKubeconfigDir).start(ctx, env); err != nil {
		return nil, err
	}
	if accept {
		if err := Accept(ctx, env, mc.Name); err != nil {
			return nil, err
		}
	}
	if err := waitJoined(ctx, env.Hub.Client, mc.Name, k.HubKubeconfig()); err != nil {
		return nil, fmt.Errorf("waiting for %s to join (see %s): %w",
			mc.Name, filepath.Join(env.Dir, "logs", "registration-agent-"+mc.Name+".log"), err)
	}
	if err := SetClusterSet(ctx, env, mc.Name, DefaultClusterSet); err != nil {
		return nil, err
	}
	if err := startWorkAgent(ctx, env, mc, k.HubKubeconfig()); err != nil {
		return nil, err
	}
	return k, nil
}

// SetClusterSet makes the managed cluster name a member of the
// ManagedClusterSet set, as `clusteradm clusterset set <set> --clusters
// <name>` does: it labels the ManagedCluster. Join puts every cluster in
// DefaultClusterSet so, where a real hub's registration webhook would.
//
// Note: OCM's registration webhook does not run here: its health probe
// listens on the fixed port 8000, which the test processes of several
// packages running at once cannot share.
func SetClusterSet(ctx context.Context, env *testenv.Env, name, set string) error {
	return LabelCluster(ctx, env, name, map[string]string{clusterv1beta2.ClusterSetLabel: set})
}

// LabelCluster adds labels to the ManagedCluster name on env's hub, as
// `kubectl label managedcluster` does (Placements select clusters by them).
func LabelCluster(ctx context.Context, env *testenv.Env, name string, labels map[string]string) error {
	mc := &clusterv1.ManagedCluster{}
	if err := env.Hub.Client.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		return err
	}
	patch := client.MergeFrom(mc.DeepCopy())
	if mc.Labels == nil {
		mc.Labels = map[string]string{}
	}
	maps.Copy(mc.Labels, labels)
	if err := env.Hub.Client.Patch(ctx, mc, patch); err != nil {
		return fmt.Errorf("labelling managed cluster %s: %w", name, err)
	}
	return nil
}

// registrationAgent is the registration agent process of mc.
func registrationAgent(mc *testenv.ManagedCluster, bootstrapKubeconfig, hubKubeconfigDir string) process {
	return process{
		name: "registration-agent-" + mc.Name,
		bin:  "registration",
		args: []string{
			"agent",
			"--spoke-cluster-name=" + mc.Name,
			"--kubeconfig=" + mc.KubeconfigPath,
			"--bootstrap-kubeconfig=" + bootstrapKubeconfig,
			"--hub-kubeconfig-dir=" + hubKubeconfigDir,
			"--namespace=" + AgentNamespace,
			"--disable-leader-election",
			"--cluster-healthcheck-period=10s",
		},
		ready: `"Cluster name and agent ID"`,
	}
}

// Accept accepts the managed cluster name as `clusteradm accept` does: it
// approves the pending CertificateSigningRequests the cluster's
// registration agent made with the bootstrap identity, and sets
// hubAcceptsClient on its ManagedCluster. It waits for both to exist.
func Accept(ctx context.Context, env *testenv.Env, name string) error {
	kube, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, joinTimeout, true, func(ctx context.Context) (bool, error) {
		// Note: not before the agent's ManagedCluster exists. An agent whose
		// certificate is signed leaves its bootstrap phase at once, and a
		// ManagedCluster it was still creating then is never created
		// (OCM's ManagedClusterCreatingController is stopped with it).
		if err := env.Hub.Client.Get(ctx, client.ObjectKey{Name: name}, &clusterv1.ManagedCluster{}); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		approved, err := approveCSRs(ctx, kube, name)
		if err != nil || !approved {
			return false, err
		}
		return acceptCluster(ctx, env.Hub.Client, name)
	})
	if err != nil {
		return fmt.Errorf("accepting managed cluster %s: %w", name, err)
	}
	return nil
}

// approveCSRs approves the cluster's pending bootstrap requests; it says
// whether there was one.
func approveCSRs(ctx context.Context, kube kubernetes.Interface, cluster string) (bool, error) {
	list, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		LabelSelector: clusterv1.ClusterNameLabelKey + "=" + cluster,
	})
	if err != nil {
		return false, err
	}
	found := false
	for i := range list.Items {
		csr := &list.Items[i]
		if csr.Spec.Username != BootstrapUser {
			continue
		}
		found = true
		if len(csr.Status.Conditions) > 0 {
			continue // approved or denied already
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
			Reason: "ClusterAdminApproved", Message: "Approved as clusteradm accept approves it (internal/test/ocmagents.Accept)",
		})
		if _, err := kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			return false, fmt.Errorf("approving %s: %w", csr.Name, err)
		}
	}
	return found, nil
}

// preRegister creates the ManagedCluster name on the hub, as a hub
// administrator who imports a cluster does, before a registration agent
// that a hub accepts by itself starts. Such a hub signs the agent's
// certificate within milliseconds, and the agent then leaves its bootstrap
// phase, stopping the request that was creating its ManagedCluster: on a
// loaded machine that request had not returned yet, and the cluster never
// joined. The hub's auto-approval accepts a ManagedCluster made this way
// like one the agent made.
func preRegister(ctx context.Context, hub client.Client, name string) error {
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := client.IgnoreAlreadyExists(hub.Create(ctx, mc)); err != nil {
		return fmt.Errorf("creating managed cluster %s: %w", name, err)
	}
	return nil
}

// acceptCluster sets hubAcceptsClient on the ManagedCluster name once it
// exists; it says whether it did.
func acceptCluster(ctx context.Context, hub client.Client, name string) (bool, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := hub.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if mc.Spec.HubAcceptsClient {
		return true, nil
	}
	patch := client.MergeFrom(mc.DeepCopy())
	mc.Spec.HubAcceptsClient = true
	return true, hub.Patch(ctx, mc, patch)
}

// waitJoined waits until the ManagedCluster name is Joined and its hub
// kubeconfig (with the signed certificate beside it) is on disk.
func waitJoined(ctx context.Context, hub client.Client, name, kubeconfig string) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, joinTimeout, true, func(ctx context.Context) (bool, error) {
		mc := &clusterv1.ManagedCluster{}
		if err := hub.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) {
			return false, nil
		}
		for _, f := range []string{kubeconfig, filepath.Join(filepath.Dir(kubeconfig), "tls.crt")} {
			if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
				return false, nil
			}
		}
		return true, nil
	})
}
