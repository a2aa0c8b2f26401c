package addon

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"open-cluster-management.io/addon-framework/pkg/addonmanager"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	ctrl "sigs.k8s.io/controller-runtime"
)

// The addon manager reads and writes the addon objects, delivers the agent
// as a ManifestWork, approves the agent's CSRs and grants it its Role
// (it must hold the Role's permissions, or escalate and bind).
//
// +kubebuilder:rbac:groups=addon.open-cluster-management.io,resources=clustermanagementaddons,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=addon.open-cluster-management.io,resources=clustermanagementaddons/status,verbs=update;patch
// +kubebuilder:rbac:groups=addon.open-cluster-management.io,resources=managedclusteraddons,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=addon.open-cluster-management.io,resources=managedclusteraddons/status,verbs=update;patch
// +kubebuilder:rbac:groups=addon.open-cluster-management.io,resources=managedclusteraddons/finalizers,verbs=update
// +kubebuilder:rbac:groups=addon.open-cluster-management.io,resources=addondeploymentconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.open-cluster-management.io,resources=managedclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/approval,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubernetes.io/kube-apiserver-client,verbs=approve
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,verbs=escalate;bind

// Manager runs addon-framework's AddonManager for canopy-policy. It is a
// manager.Runnable that runs only on the elected leader.
type Manager struct {
	// Options are the defaults of every agent.
	Options Options
	// Config connects to the hub; SetupWithManager sets it from the manager.
	Config *rest.Config
}

// SetupWithManager adds m to mgr, connecting to mgr's hub.
func (m *Manager) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	m.Config = mgr.GetConfig()
	return mgr.Add(m)
}

// NeedLeaderElection is true: one hub replica manages the addon.
func (m *Manager) NeedLeaderElection() bool { return true }

// Start ensures the ClusterManagementAddOn exists, then runs the
// AddonManager until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	kube, err := kubernetes.NewForConfig(m.Config)
	if err != nil {
		return fmt.Errorf("creating the hub client: %w", err)
	}
	addons, err := addonclient.NewForConfig(m.Config)
	if err != nil {
		return fmt.Errorf("creating the hub addon client: %w", err)
	}
	if err := EnsureClusterManagementAddOn(ctx, addons); err != nil {
		return err
	}
	agentAddon, err := NewAgentAddon(m.Options, utils.NewAddOnDeploymentConfigGetter(addons), kube)
	if err != nil {
		return err
	}
	am, err := addonmanager.New(m.Config)
	if err != nil {
		return fmt.Errorf("creating the addon manager: %w", err)
	}
	if err := am.AddAgent(agentAddon); err != nil {
		return fmt.Errorf("adding the %s agent: %w", Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Starting the addon manager", "addon", Name)
	if err := am.Start(ctx); err != nil { // returns once its informers are started
		return fmt.Errorf("starting the addon manager: %w", err)
	}
	<-ctx.Done()
	return nil
}

// ClusterManagementAddOn returns the addon's ClusterManagementAddOn, the
// same object as deploy/hub/addon/clustermanagementaddon.yaml. It has no
// default configs: an AddOnDeploymentConfig applies to the clusters whose
// ManagedClusterAddOn names it in spec.configs, or to all once an
// administrator adds it (with its name) to spec.defaultConfigs.
func ClusterManagementAddOn() *addonv1beta1.ClusterManagementAddOn {
	return &addonv1beta1.ClusterManagementAddOn{
		TypeMeta: metav1.TypeMeta{APIVersion: addonv1beta1.GroupVersion.String(), Kind: "ClusterManagementAddOn"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   Name,
			Labels: map[string]string{"app.kubernetes.io/part-of": "canopy"},
		},
		Spec: addonv1beta1.ClusterManagementAddOnSpec{
			AddOnMeta: addonv1beta1.AddOnMeta{
				DisplayName: "Canopy policy agent",
				Description: "Canopy's policy agent: syncs policies from the hub, enforces them and reports compliance.",
			},
			InstallStrategy: addonv1beta1.InstallStrategy{Type: addonv1beta1.AddonInstallStrategyManual},
		},
	}
}

// EnsureClusterManagementAddOn creates the ClusterManagementAddOn when it is
// missing, and leaves an existing one (perhaps edited by an administrator)
// alone.
func EnsureClusterManagementAddOn(ctx context.Context, addons addonclient.Interface) error {
	_, err := addons.AddonV1beta1().ClusterManagementAddOns().Create(ctx, ClusterManagementAddOn(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterManagementAddOn %s: %w", Name, err)
	}
	return nil
}
