package ocmagents

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// placementScoreCRD is the CRD of AddOnPlacementScore, which OCM's placement
// controller watches; Canopy itself never uses it, so deploy/crds lacks it.
// It comes from the cluster-manager manifests of the ocm module, the version
// of the controller that needs it (see readManifest).
const placementScoreCRD = "manifests/cluster-manager/hub/crds/0000_05_clusters.open-cluster-management.io_addonplacementscores.crd.yaml"

// HubNamespace is the namespace of OCM's hub controllers (the
// cluster-manager's); StartPlacementController creates it on the hub for
// the placement controller's events.
const HubNamespace = "open-cluster-management-hub"

// DefaultClusterSet and GlobalClusterSet name the ManagedClusterSets an OCM
// hub creates (its registration controller does): "default" holds the
// clusters labelled cluster.open-cluster-management.io/clusterset=default
// (testenv's RegisterCluster labels every cluster so), "global" every cluster. A
// Placement selects clusters of a set only in namespaces holding a
// ManagedClusterSetBinding of that set, which the user creates.
const (
	DefaultClusterSet = "default"
	GlobalClusterSet  = "global"
)

// clusterSets are the ManagedClusterSets an OCM hub creates.
func clusterSets() []client.Object {
	return []client.Object{
		&clusterv1beta2.ManagedClusterSet{
			ObjectMeta: metav1.ObjectMeta{Name: DefaultClusterSet},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType: clusterv1beta2.ExclusiveClusterSetLabel,
			}},
		},
		&clusterv1beta2.ManagedClusterSet{
			ObjectMeta: metav1.ObjectMeta{Name: GlobalClusterSet},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType:  clusterv1beta2.LabelSelector,
				LabelSelector: &metav1.LabelSelector{},
			}},
		},
	}
}

// StartPlacementController runs OCM's placement controller
// (bin/ocm/<Version>/placement, see AssetsEnv; its scheduling controller
// with the default plugins, as the cluster-manager runs it) against the hub
// of env until env.Stop, after installing what it needs that Canopy does
// not: the AddOnPlacementScore CRD, HubNamespace and the "default" and
// "global" ManagedClusterSets. The controller logs to
// env.Dir/placement-controller.log.
//
// Note: the controller writes the PlacementDecisions of every Placement, so
// do not mix it with testenv's SetPlacementDecisions on the same Placements.
func StartPlacementController(ctx context.Context, env *testenv.Env) error {
	if err := installPlacementScoreCRD(ctx, env.Hub); err != nil {
		return err
	}
	objs := append(clusterSets(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: HubNamespace}})
	if err := controlplane.CreateAll(ctx, env.Hub.Client, objs); err != nil {
		return fmt.Errorf("creating the managed cluster sets and %s: %w", HubNamespace, err)
	}
	return placementController(env.Hub.KubeconfigPath).start(ctx, env)
}

// placementController is the placement controller process of the hub of
// hubKubeconfig.
func placementController(hubKubeconfig string) process {
	return process{
		name: "placement-controller",
		bin:  "placement",
		args: []string{
			"controller",
			"--kubeconfig=" + hubKubeconfig,
			"--namespace=" + HubNamespace,
			"--disable-leader-election",
			"--kube-api-qps=100", "--kube-api-burst=200",
		},
		ready: `"Starting worker of controller ..." logger="SchedulingController"`,
	}
}

func installPlacementScoreCRD(ctx context.Context, hub *controlplane.ControlPlane) error {
	data, err := readManifest(placementScoreCRD)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return fmt.Errorf("parsing the AddOnPlacementScore CRD: %w", err)
	}
	if err := controlplane.CreateAll(ctx, hub.Client, []client.Object{crd}); err != nil {
		return fmt.Errorf("installing the AddOnPlacementScore CRD: %w", err)
	}
	opts := envtest.CRDInstallOptions{PollInterval: 50 * time.Millisecond, MaxTime: time.Minute}
	if err := envtest.WaitForCRDs(hub.Config, []*apiextensionsv1.CustomResourceDefinition{crd}, opts); err != nil {
		return fmt.Errorf("waiting for the AddOnPlacementScore CRD: %w", err)
	}
	return nil
}
