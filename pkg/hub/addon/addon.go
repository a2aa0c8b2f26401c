package addon

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/canopy-policy/canopy/pkg/hubrbac"
)

const (
	// Name is the addon's name: the ClusterManagementAddOn, every
	// ManagedClusterAddOn and the agent's health Lease are named so.
	Name = hubrbac.AddonName
	// AgentName names the agent's Deployment, ServiceAccount and
	// ClusterRoleBinding on the managed cluster, and the agent in its OCM
	// user name.
	AgentName = hubrbac.AgentName
	// EnforcementClusterRoleName names the ClusterRole (and its binding) of
	// what the agent's policies read and write on the managed cluster,
	// deploy/spoke/rbac/enforcement/role.yaml.
	EnforcementClusterRoleName = AgentName + "-enforcement"
	// DefaultImage is the agent image when neither --agent-image nor an
	// AddOnDeploymentConfig says otherwise.
	DefaultImage = "ghcr.io/canopy-policy/canopy:latest"
	// DefaultInstallNamespace is where the agent runs unless the
	// AddOnDeploymentConfig sets agentInstallNamespace: OCM's shared addon
	// namespace, which the klusterlet creates.
	DefaultInstallNamespace = "open-cluster-management-agent-addon"
	// HubKubeconfigSecret is the Secret, in the install namespace, into
	// which OCM's registration agent writes the agent's hub kubeconfig
	// (key "kubeconfig") once its CSR is approved and signed.
	HubKubeconfigSecret = Name + "-hub-kubeconfig"
)

// Options are the hub's defaults for every agent; an AddOnDeploymentConfig
// referenced by a ManagedClusterAddOn (or the ClusterManagementAddOn)
// overrides them per cluster.
type Options struct {
	// Image is the agent image; empty means DefaultImage.
	Image string
	// ImagePullPolicy is the agent's pull policy; empty means IfNotPresent.
	ImagePullPolicy string
	// LogLevel is the agent's --zap-log-level; empty means info.
	LogLevel string
}

// AgentAddon is Canopy's agent.AgentAddon: it renders the agent manifests of
// one managed cluster and tells addon-framework how to register the agent.
type AgentAddon struct {
	opts      Options
	configs   utils.AddOnDeploymentConfigGetter
	extra     []runtime.Object // the agent CRDs and ClusterRole, the same for every cluster
	addonOpts agent.AgentAddonOptions
}

// NewAgentAddon returns the AgentAddon: configs reads AddOnDeploymentConfigs
// and kube writes the agent's hub Role and RoleBinding.
func NewAgentAddon(opts Options, configs utils.AddOnDeploymentConfigGetter, kube kubernetes.Interface) (*AgentAddon, error) {
	extra, err := staticManifests()
	if err != nil {
		return nil, err
	}
	a := &AgentAddon{opts: opts, configs: configs, extra: extra}
	a.addonOpts = agent.AgentAddonOptions{
		AddonName: Name,
		Registration: &agent.RegistrationOption{
			Configurations:   agent.KubeClientSignerConfigurations(Name, AgentName),
			CSRApproveCheck:  utils.DefaultCSRApprover(AgentName),
			PermissionConfig: Permission(kube),
		},
		HealthProber:          &agent.HealthProber{Type: agent.HealthProberTypeLease},
		SupportedConfigGVRs:   []schema.GroupVersionResource{utils.AddOnDeploymentConfigGVR},
		AgentInstallNamespace: a.installNamespace,
	}
	return a, nil
}

// GetAgentAddonOptions tells addon-framework how to register the agent and
// probe its health.
func (a *AgentAddon) GetAgentAddonOptions() agent.AgentAddonOptions {
	return a.addonOpts
}

// Manifests returns the objects that install the agent on cluster.
func (a *AgentAddon) Manifests(ctx context.Context, cluster *clusterv1.ManagedCluster,
	mca *addonv1beta1.ManagedClusterAddOn) ([]runtime.Object, error) {
	config, err := utils.GetDesiredAddOnDeploymentConfig(mca, a.configs)
	if err != nil {
		return nil, fmt.Errorf("getting the AddOnDeploymentConfig of %s/%s: %w", mca.Namespace, mca.Name, err)
	}
	v, err := newValues(a.opts, cluster, mca, config)
	if err != nil {
		return nil, err
	}
	rendered, err := render(v)
	if err != nil {
		return nil, err
	}
	// Cluster-scoped definitions first, the Deployment (rendered last) after
	// everything it needs: the work agent applies in this order.
	objs := make([]runtime.Object, 0, len(a.extra)+len(rendered))
	for _, obj := range a.extra {
		objs = append(objs, obj.DeepCopyObject())
	}
	return append(objs, rendered...), nil
}

// installNamespace is the namespace addon-framework records in the
// ManagedClusterAddOn status, where OCM's registration agent writes the
// hub kubeconfig secret; it must match where Manifests installs the agent.
func (a *AgentAddon) installNamespace(ctx context.Context, mca *addonv1beta1.ManagedClusterAddOn) (string, error) {
	config, err := utils.GetDesiredAddOnDeploymentConfig(mca, a.configs)
	if err != nil {
		return "", fmt.Errorf("getting the AddOnDeploymentConfig of %s/%s: %w", mca.Namespace, mca.Name, err)
	}
	return installNamespace(mca, config), nil
}
