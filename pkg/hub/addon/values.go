package addon

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// The AddOnDeploymentConfig spec.customizedVariables the agent templates
// understand.
const (
	// VariableImage replaces the agent image (before registry mirrors apply).
	VariableImage = "Image"
	// VariableImagePullPolicy sets the agent's imagePullPolicy.
	VariableImagePullPolicy = "ImagePullPolicy"
	// VariableLogLevel sets the agent's --zap-log-level: debug, info, error,
	// panic or a positive integer (more verbose as it grows).
	VariableLogLevel = "LogLevel"
)

// containerID names the agent container in AddOnDeploymentConfig
// spec.resourceRequirements ("<resource>:<name>:<container>", "*" matches
// anything).
const containerID = "deployments:" + AgentName + ":agent"

// values are what the templates under manifests/ are rendered with.
type values struct {
	ClusterName      string
	InstallNamespace string
	CreateNamespace  bool // false for OCM's shared addon namespace, which is not ours to delete
	AgentName        string
	ClusterRoleName  string
	// EnforcementClusterRoleName is the ClusterRole of what policies read
	// and write (deploy/spoke/rbac/enforcement.go), bound apart so that cluster
	// administrators can narrow it.
	EnforcementClusterRoleName string
	HubKubeconfigSecret        string
	Image                      string
	ImagePullPolicy            corev1.PullPolicy
	LogLevel                   string
	Labels                     map[string]string
	SelectorLabels             map[string]string
	NodeSelector               map[string]string
	Tolerations                []corev1.Toleration
	Env                        []corev1.EnvVar
	Resources                  corev1.ResourceRequirements
}

// newValues computes the template values of one cluster from the hub's
// defaults and the cluster's AddOnDeploymentConfig (nil when none).
func newValues(opts Options, cluster *clusterv1.ManagedCluster, mca *addonv1beta1.ManagedClusterAddOn,
	config *addonv1beta1.AddOnDeploymentConfig) (values, error) {
	selector := map[string]string{"app.kubernetes.io/name": AgentName, "app.kubernetes.io/part-of": "canopy"}
	labels := maps.Clone(selector)
	labels["app.kubernetes.io/managed-by"] = "canopy"
	ns := installNamespace(mca, config)
	v := values{
		ClusterName:                cluster.Name,
		InstallNamespace:           ns,
		CreateNamespace:            ns != DefaultInstallNamespace,
		AgentName:                  AgentName,
		ClusterRoleName:            AgentName,
		EnforcementClusterRoleName: EnforcementClusterRoleName,
		HubKubeconfigSecret:        HubKubeconfigSecret,
		Image:                      withDefault(opts.Image, DefaultImage),
		ImagePullPolicy:            corev1.PullPolicy(withDefault(opts.ImagePullPolicy, string(corev1.PullIfNotPresent))),
		LogLevel:                   withDefault(opts.LogLevel, "info"),
		Labels:                     labels,
		SelectorLabels:             selector,
		NodeSelector:               map[string]string{},
		Tolerations:                []corev1.Toleration{},
		Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
	}
	if config != nil {
		applyConfig(&v, config.Spec)
	}
	return v, v.validate()
}

// applyConfig overrides v with an AddOnDeploymentConfig's spec.
func applyConfig(v *values, spec addonv1beta1.AddOnDeploymentConfigSpec) {
	for _, cv := range spec.CustomizedVariables {
		switch cv.Name {
		case VariableImage:
			v.Image = cv.Value
		case VariableImagePullPolicy:
			v.ImagePullPolicy = corev1.PullPolicy(cv.Value)
		case VariableLogLevel:
			v.LogLevel = cv.Value
		}
	}
	v.Image = mirrorImage(spec.Registries, v.Image)
	if p := spec.NodePlacement; p != nil {
		if p.NodeSelector != nil {
			v.NodeSelector = maps.Clone(p.NodeSelector)
		}
		if p.Tolerations != nil {
			v.Tolerations = append([]corev1.Toleration(nil), p.Tolerations...)
		}
	}
	for _, e := range []corev1.EnvVar{
		{Name: "HTTP_PROXY", Value: spec.ProxyConfig.HTTPProxy},
		{Name: "HTTPS_PROXY", Value: spec.ProxyConfig.HTTPSProxy},
		{Name: "NO_PROXY", Value: spec.ProxyConfig.NoProxy},
	} {
		if e.Value != "" {
			v.Env = append(v.Env, e)
		}
	}
	for _, r := range spec.ResourceRequirements { // the last match wins
		if matchesContainer(r.ContainerID) {
			v.Resources = *r.Resources.DeepCopy()
		}
	}
}

// validate rejects values that would render an agent that cannot start.
func (v values) validate() error {
	switch v.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("invalid image pull policy %q: want Always, IfNotPresent or Never", v.ImagePullPolicy)
	}
	if v.Image == "" {
		return fmt.Errorf("empty agent image")
	}
	switch v.LogLevel {
	case "debug", "info", "error", "panic":
		return nil
	}
	if n, err := strconv.Atoi(v.LogLevel); err != nil || n < 1 {
		return fmt.Errorf("invalid log level %q: want debug, info, error, panic or a positive integer", v.LogLevel)
	}
	return nil
}

// installNamespace is, from lowest to highest priority, the default, the
// ManagedClusterAddOn's install-namespace annotation, or the
// AddOnDeploymentConfig's agentInstallNamespace, as addon-framework's
// registration controller decides status.namespace.
func installNamespace(mca *addonv1beta1.ManagedClusterAddOn, config *addonv1beta1.AddOnDeploymentConfig) string {
	ns := DefaultInstallNamespace
	if a := mca.Annotations[addonv1beta1.InstallNamespaceAnnotation]; a != "" {
		ns = a
	}
	if config != nil && config.Spec.AgentInstallNamespace != "" {
		ns = config.Spec.AgentInstallNamespace
	}
	return ns
}

// matchesContainer reports whether an AddOnDeploymentConfig container ID
// ("<resource>:<name>:<container>", each part "*" or exact) names the agent
// container.
func matchesContainer(id string) bool {
	want := strings.Split(containerID, ":")
	got := strings.Split(id, ":")
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if got[i] != "*" && got[i] != want[i] {
			return false
		}
	}
	return true
}

// mirrorImage applies registry mirrors to image as addon-framework's
// addonfactory.OverrideImage does (the last matching mirror wins; an empty
// source keeps only the image's last path segment). Note: reimplemented
// rather than imported, since addonfactory pulls Helm into the hub binary.
func mirrorImage(registries []addonv1beta1.ImageMirror, image string) string {
	out := image
	for _, r := range registries {
		source, mirror := strings.TrimSuffix(r.Source, "/"), strings.TrimSuffix(r.Mirror, "/")
		switch {
		case source == "" && mirror == "":
			out = image[strings.LastIndex(image, "/")+1:]
		case source == "":
			out = mirror + "/" + image[strings.LastIndex(image, "/")+1:]
		case strings.HasPrefix(image, source):
			out = mirror + strings.TrimPrefix(image, source)
		}
	}
	return out
}

func withDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
