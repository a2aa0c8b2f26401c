package addon

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/yaml"

	"github.com/canopy-policy/canopy/pkg/hubrbac"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// configs is an AddOnDeploymentConfigGetter over a map keyed by namespace/name.
type configs map[string]*addonv1beta1.AddOnDeploymentConfig

func (c configs) Get(_ context.Context, namespace, name string) (*addonv1beta1.AddOnDeploymentConfig, error) {
	if cfg, ok := c[namespace+"/"+name]; ok {
		return cfg, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}, name)
}

func managedCluster(name string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// mca is a ManagedClusterAddOn whose status names the AddOnDeploymentConfig
// configName ("" for none), as OCM's addon-manager records it.
func mca(cluster, configName string) *addonv1beta1.ManagedClusterAddOn {
	m := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: cluster}}
	if configName != "" {
		m.Status.ConfigReferences = []addonv1beta1.ConfigReference{{
			ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
			DesiredConfig: &addonv1beta1.ConfigSpecHash{
				ConfigReferent: addonv1beta1.ConfigReferent{Namespace: cluster, Name: configName},
				SpecHash:       "hash",
			},
		}}
	}
	return m
}

func overrides() *addonv1beta1.AddOnDeploymentConfig {
	return &addonv1beta1.AddOnDeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "overrides", Namespace: "cluster1"},
		Spec: addonv1beta1.AddOnDeploymentConfigSpec{
			CustomizedVariables: []addonv1beta1.CustomizedVariable{
				{Name: VariableLogLevel, Value: "debug"},
				{Name: VariableImagePullPolicy, Value: "Always"},
			},
			NodePlacement: &addonv1beta1.NodePlacement{
				NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
				Tolerations: []corev1.Toleration{{
					Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
				}},
			},
			Registries:  []addonv1beta1.ImageMirror{{Source: "ghcr.io/canopy-policy", Mirror: "registry.example.com/mirror"}},
			ProxyConfig: addonv1beta1.ProxyConfig{HTTPSProxy: "http://proxy.example.com:3128", NoProxy: "10.0.0.0/8"},
			ResourceRequirements: []addonv1beta1.ContainerResourceRequirements{
				{ContainerID: "deployments:other:*", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}},
				{ContainerID: "*:canopy-agent:agent", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}},
			},
			AgentInstallNamespace: "canopy-agent",
		},
	}
}

func TestManifestsGolden(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		config *addonv1beta1.AddOnDeploymentConfig
	}{
		{name: "defaults"},
		{name: "hub-flags", opts: Options{Image: "quay.io/example/canopy:v0.1.0", ImagePullPolicy: "Never", LogLevel: "4"}},
		{name: "addondeploymentconfig", config: overrides()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			getter, configName := configs{}, ""
			if tt.config != nil {
				getter[tt.config.Namespace+"/"+tt.config.Name], configName = tt.config, tt.config.Name
			}
			a, err := NewAgentAddon(tt.opts, getter, nil)
			g.Expect(err).NotTo(HaveOccurred())
			objs, err := a.Manifests(t.Context(), managedCluster("cluster1"), mca("cluster1", configName))
			g.Expect(err).NotTo(HaveOccurred())
			perCluster, static := split(objs)
			g.Expect(static).To(ConsistOf(staticNames()))
			for _, obj := range objs {
				if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
					g.Expect(crd.Annotations).To(HaveKey(DeletionOrphanAnnotation),
						"disabling the addon must leave %s, and every policy with it, on the cluster", crd.Name)
				}
			}
			compareGolden(t, filepath.Join("testdata", tt.name+".yaml"), toYAML(t, perCluster))
		})
	}
}

// split separates the per-cluster objects from the agent's ClusterRoles and
// CRDs, which are the same for every cluster and too long for a golden file.
func split(objs []runtime.Object) (perCluster []runtime.Object, static []string) {
	for _, obj := range objs {
		switch o := obj.(type) {
		case *apiextensionsv1.CustomResourceDefinition:
			static = append(static, "CustomResourceDefinition/"+o.Name)
		case *rbacv1.ClusterRole:
			static = append(static, "ClusterRole/"+o.Name)
		default:
			perCluster = append(perCluster, obj)
		}
	}
	return perCluster, static
}

func staticNames() []string {
	return []string{
		"ClusterRole/canopy-agent",
		"ClusterRole/canopy-agent-enforcement",
		"CustomResourceDefinition/policies.policy.open-cluster-management.io",
		"CustomResourceDefinition/configurationpolicies.policy.open-cluster-management.io",
		"CustomResourceDefinition/certificatepolicies.policy.open-cluster-management.io",
		"CustomResourceDefinition/operatorpolicies.policy.open-cluster-management.io",
		"CustomResourceDefinition/hierarchypolicies.hierarchy.canopy.io",
		"CustomResourceDefinition/subnamespaces.hierarchy.canopy.io",
	}
}

func toYAML(t *testing.T, objs []runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, obj := range objs {
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return buf.Bytes()
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run go test -update to create it): %v", path, err)
	}
	NewWithT(t).Expect(string(got)).To(Equal(string(want)), "rendered manifests differ from %s; run go test -update if intended", path)
}

func TestManifestsRejectInvalidConfig(t *testing.T) {
	tests := map[string]addonv1beta1.CustomizedVariable{
		"log level":   {Name: VariableLogLevel, Value: "verbose"},
		"zero level":  {Name: VariableLogLevel, Value: "0"},
		"pull policy": {Name: VariableImagePullPolicy, Value: "Sometimes"},
		"empty image": {Name: VariableImage, Value: ""},
	}
	for name, variable := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cfg := &addonv1beta1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "cluster1"},
				Spec: addonv1beta1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1beta1.CustomizedVariable{variable}}}
			a, err := NewAgentAddon(Options{}, configs{"cluster1/bad": cfg}, nil)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = a.Manifests(t.Context(), managedCluster("cluster1"), mca("cluster1", "bad"))
			g.Expect(err).To(HaveOccurred())
		})
	}
}

func TestMirrorImage(t *testing.T) {
	const image = "ghcr.io/canopy-policy/canopy:v1"
	tests := []struct {
		name       string
		registries []addonv1beta1.ImageMirror
		want       string
	}{
		{"none", nil, image},
		{"other source", []addonv1beta1.ImageMirror{{Source: "quay.io", Mirror: "m.example.com"}}, image},
		{"registry", []addonv1beta1.ImageMirror{{Source: "ghcr.io/", Mirror: "m.example.com/"}}, "m.example.com/canopy-policy/canopy:v1"},
		{"image", []addonv1beta1.ImageMirror{{Source: image, Mirror: "m.example.com/canopy:v2"}}, "m.example.com/canopy:v2"},
		{"any source", []addonv1beta1.ImageMirror{{Mirror: "m.example.com"}}, "m.example.com/canopy:v1"},
		{"last wins", []addonv1beta1.ImageMirror{{Source: "ghcr.io", Mirror: "a.io"}, {Source: "ghcr.io", Mirror: "b.io"}}, "b.io/canopy-policy/canopy:v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(mirrorImage(tt.registries, image)).To(Equal(tt.want))
		})
	}
}

func TestInstallNamespace(t *testing.T) {
	g := NewWithT(t)
	m := mca("cluster1", "")
	g.Expect(installNamespace(m, nil)).To(Equal(DefaultInstallNamespace))
	m.Annotations = map[string]string{addonv1beta1.InstallNamespaceAnnotation: "from-annotation"}
	g.Expect(installNamespace(m, nil)).To(Equal("from-annotation"))
	g.Expect(installNamespace(m, overrides())).To(Equal("canopy-agent"))
}

func TestAgentAddonOptions(t *testing.T) {
	g := NewWithT(t)
	a, err := NewAgentAddon(Options{}, configs{}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	opts := a.GetAgentAddonOptions()
	g.Expect(opts.AddonName).To(Equal(hubrbac.AddonName))
	g.Expect(opts.HealthProber.Type).To(Equal(agent.HealthProberTypeLease))
	g.Expect(opts.SupportedConfigGVRs).To(ConsistOf(utils.AddOnDeploymentConfigGVR))
	regs, err := opts.Registration.Configurations(t.Context(), managedCluster("c1"), mca("c1", ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(regs).To(HaveLen(1))
	subject := regs[0].RegistrationAPI().KubeClient.Subject
	g.Expect(subject.User).To(Equal(hubrbac.User("c1")))
	g.Expect(subject.Groups).To(Equal(hubrbac.Groups("c1")))
	ns, err := opts.AgentInstallNamespace(t.Context(), mca("c1", ""))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ns).To(Equal(DefaultInstallNamespace))
}

func TestClusterManagementAddOnMatchesDeploy(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "hub", "addon", "clustermanagementaddon.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	fromFile := &addonv1beta1.ClusterManagementAddOn{}
	g.Expect(yaml.UnmarshalStrict(data, fromFile)).To(Succeed())
	g.Expect(fromFile).To(Equal(ClusterManagementAddOn()))
}
