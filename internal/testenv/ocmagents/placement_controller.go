package ocmagents

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kevents "k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterscheme "open-cluster-management.io/api/client/cluster/clientset/versioned/scheme"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ocmmanifests "open-cluster-management.io/ocm/manifests"
	"open-cluster-management.io/ocm/pkg/placement/controllers/metrics"
	"open-cluster-management.io/ocm/pkg/placement/controllers/scheduling"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/canopy-policy/canopy/internal/controlplane"
	"github.com/canopy-policy/canopy/internal/testenv"
)

// placementScoreCRD is the CRD of AddOnPlacementScore, which OCM's placement
// controller watches; Canopy itself never uses it, so deploy/crds lacks it.
// It comes from the cluster-manager manifests of the ocm module, the version
// of the controller that needs it.
const placementScoreCRD = "cluster-manager/hub/crds/0000_05_clusters.open-cluster-management.io_addonplacementscores.crd.yaml"

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

// StartPlacementController runs OCM's placement controller (its scheduling
// controller with the default plugins, as the cluster-manager runs it)
// against the hub of env until env.Stop, after installing what it needs that
// Canopy does not: the AddOnPlacementScore CRD and the "default" and
// "global" ManagedClusterSets.
//
// Note: the controller writes the PlacementDecisions of every Placement, so
// do not mix it with testenv's SetPlacementDecisions on the same Placements.
func StartPlacementController(ctx context.Context, env *testenv.Env) error {
	if err := installPlacementScoreCRD(ctx, env.Hub); err != nil {
		return err
	}
	if err := controlplane.CreateAll(ctx, env.Hub.Client, clusterSets()); err != nil {
		return fmt.Errorf("creating the managed cluster sets: %w", err)
	}
	bctx, goRun := env.Background(ctx)
	return runPlacementController(bctx, goRun, env.Hub.Config)
}

func installPlacementScoreCRD(ctx context.Context, hub *controlplane.ControlPlane) error {
	data, err := ocmmanifests.ClusterManagerManifestFiles.ReadFile(placementScoreCRD)
	if err != nil {
		return fmt.Errorf("reading the AddOnPlacementScore CRD: %w", err)
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

// runPlacementController wires OCM's scheduling controller as OCM's
// placement manager (pkg/placement/controllers) does, minus its debugger and
// its logging of every event to klog, and runs it with goRun until ctx ends.
func runPlacementController(ctx context.Context, goRun func(func()), cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "placement-controller"
	clusterClient, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	broadcaster := kevents.NewBroadcaster(&kevents.EventSinkImpl{Interface: kubeClient.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("recording events: %w", err)
	}
	recorder := broadcaster.NewRecorder(clusterscheme.Scheme, "placement-controller")
	informers := clusterinformers.NewSharedInformerFactory(clusterClient, 10*time.Minute)
	m := metrics.NewScheduleMetrics(clock.RealClock{})
	scheduler := scheduling.NewPluginScheduler(scheduling.NewSchedulerHandler(
		clusterClient,
		informers.Cluster().V1beta1().PlacementDecisions().Lister(),
		informers.Cluster().V1alpha1().AddOnPlacementScores().Lister(),
		informers.Cluster().V1().ManagedClusters().Lister(),
		recorder, m))
	controller := scheduling.NewSchedulingController(ctx, clusterClient,
		informers.Cluster().V1().ManagedClusters(),
		informers.Cluster().V1beta2().ManagedClusterSets(),
		informers.Cluster().V1beta2().ManagedClusterSetBindings(),
		informers.Cluster().V1beta1().Placements(),
		informers.Cluster().V1beta1().PlacementDecisions(),
		informers.Cluster().V1alpha1().AddOnPlacementScores(),
		scheduler, recorder, m)
	informers.Start(ctx.Done())
	goRun(func() { controller.Run(ctx, 1) })
	goRun(func() { <-ctx.Done(); informers.Shutdown(); broadcaster.Shutdown() })
	return nil
}
