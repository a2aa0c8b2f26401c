package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/hub/addon"
)

const (
	// page is the page the test runs, from the repository root.
	page = "docs/install.md"
	// clusterName is the managed cluster the page joins; the hub's context
	// is testenv.HubName.
	clusterName = "cluster1"
	// pinnedImage is the image the page's overlay pins, which the hub and
	// the agent the addon delivers must both run.
	pinnedImage = "registry.example.com/canopy@sha256:fee5dfd46b125f371923dfd73b33fa40ecec5025f643991b6be24ad89546cab9"
	// policyNamespace and policyName are the page's first policy.
	policyNamespace, policyName = "policies", "team-a-namespace"
)

// Why commands are not run.
const (
	noClusteradm = "clusteradm is not built here: the Go module proxy answers " +
		"403 Forbidden (\"This module version is not available\") for every version of " +
		"open-cluster-management.io/clusteradm; the page's kubectl equivalent beside it is run"
	noKubelet = "no kubelet runs the Deployment here: the test runs its container as a " +
		"local process (runDeployment) and waits for its readiness probe"
)

// step is what the test does in place of, or before, a command of the
// page.
type step struct {
	// why says why.
	why string
	// do is what the test does; nil is nothing.
	do func(h *harness, ctx context.Context) error
}

// notRun are the commands of the page the test does not run, by
// command.key, with what it does instead.
var notRun = map[string]step{
	"git clone https://github.com/canopy-policy/canopy.git && cd canopy": {
		why: "the test runs the page in a copy of this working tree (copyTree)",
	},
	"clusteradm init --wait --context hub": {
		why: noClusteradm + "; `clusteradm init` installs OCM's cluster-manager operator, which needs a kubelet: " +
			"the test runs OCM's hub controllers as processes",
		do: (*harness).startOCMHub,
	},
	"clusteradm get token --context hub": {why: noClusteradm},
	"clusteradm join --context cluster1 --hub-token <token> --hub-apiserver <hub API server URL> --cluster-name cluster1 --wait": {
		why: noClusteradm + "; `clusteradm join` installs the klusterlet operator, which needs a kubelet: " +
			"the test runs OCM's registration agent (then its work agent) as a process with a token of the Helm chart's bootstrap ServiceAccount",
		do: (*harness).join,
	},
	"clusteradm accept --context hub --clusters cluster1": {why: noClusteradm},
	"make image": {
		why: "builds both programs for two platforms (minutes): make test builds and checks the image in hack/image's tests",
	},
	"IMAGE=registry.example.com/canopy:v0.1.0 make image-push": {
		why: "pushes to a registry, which this machine cannot reach: hack/image's tests push to one in the test process",
	},
	"docker buildx build -f Containerfile --platform linux/amd64,linux/arm64 -t registry.example.com/canopy:v0.1.0 --push .": {
		why: "no container engine here: hack/image's tests compare the Containerfile's file tree with the image's",
	},
	"kubectl --context hub -n canopy-system rollout status deploy/canopy-hub --timeout=5m": {
		why: noKubelet,
		do:  (*harness).runHub,
	},
	"clusteradm addon enable --context hub --names canopy-policy --clusters cluster1": {why: noClusteradm},
	"kubectl --context cluster1 -n open-cluster-management-agent-addon rollout status deploy/canopy-agent --timeout=5m": {
		why: noKubelet,
		do:  (*harness).runAgent,
	},
	"clusteradm clusterset bind default --namespace policies --context hub": {why: noClusteradm},
	"make plugin-dist": {
		why: "builds four archives (minutes): hack/plugin-dist's tests build them and the krew manifest",
	},
	"kubectl krew install --manifest bin/dist/canopy.yaml": {
		why: "no krew here, nor the release the manifest names; the plugin of `go install` is run instead",
	},
}

// prerequisites are what the page asks to be installed before a command,
// which the test installs before running it, by command.key.
var prerequisites = map[string]step{
	"kubectl --context hub apply -n canopy-system -k deploy/monitoring": {
		why: "the Prometheus Operator: the test installs its PrometheusRule CRD",
		do:  (*harness).installPrometheusRuleCRD,
	},
	"kubectl --context hub -n argocd patch configmap argocd-cm --patch-file deploy/argocd/argocd-cm.yaml": {
		why: "Argo CD: the test creates its namespace and its empty argocd-cm, as Argo CD's install does",
		do:  (*harness).installArgoCDConfigMap,
	},
}

// TestInstallPage runs docs/install.md: every command of its sh blocks, in
// order, against a hub and cluster1 started here, except those notRun
// lists, for which it does what they would (an OCM hub, a join, a
// Deployment's pod); then it checks the outcome the page promises.
func TestInstallPage(t *testing.T) {
	g := NewWithT(t)
	root, err := controlplane.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	text, err := os.ReadFile(filepath.Join(root, page))
	g.Expect(err).NotTo(HaveOccurred())
	cmds := commands(string(text))
	g.Expect(cmds).NotTo(BeEmpty(), "%s has sh blocks", page)
	onPage := map[string]bool{}
	for _, c := range cmds {
		onPage[c.key()] = true
	}
	for _, list := range []map[string]step{notRun, prerequisites} {
		for key := range list {
			if !onPage[key] {
				t.Errorf("the test lists a command %s no longer has: %s", page, key)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	began := time.Now()
	h := newHarness(t, root)
	h.page = string(text)
	t.Logf("kubectl, canopy-hub and canopy-agent built, the hub and %s started in %v", clusterName, time.Since(began).Round(time.Second))
	for _, c := range cmds {
		key := c.key()
		if s, ok := notRun[key]; ok {
			t.Logf("%s:%d: not run: %s\n  because %s", page, c.Line, key, s.why)
			if s.do != nil {
				g.Expect(s.do(h, t.Context())).To(Succeed(), "%s:%d: what the test does instead of %s", page, c.Line, key)
			}
			continue
		}
		if s, ok := prerequisites[key]; ok {
			t.Logf("%s:%d: before it: %s", page, c.Line, s.why)
			g.Expect(s.do(h, t.Context())).To(Succeed(), "%s:%d: what %s needs", page, c.Line, key)
		}
		began := time.Now()
		out, err := h.run(commandContext(t), c)
		if err != nil {
			t.Fatalf("%s:%d: %v after %v:\n%s\n%s", page, c.Line, err, time.Since(began).Round(100*time.Millisecond), c.Text, indent(out))
		}
		t.Logf("%s:%d: %s (%v)\n%s", page, c.Line, key, time.Since(began).Round(100*time.Millisecond), indent(out))
		h.outputs[key] = out
	}
	h.expectOutcome(g)
}

// commandContext bounds a command of the page by the test's own deadline
// (go test -timeout), less a minute to report which command it stopped.
// Note: no bound of its own: the page's waits bound themselves (--timeout=5m),
// and its go install from an empty cache took over six minutes on a busy
// 2-core machine, a time that says nothing about the page.
func commandContext(t *testing.T) context.Context {
	deadline, ok := t.Deadline()
	if !ok {
		return t.Context()
	}
	ctx, cancel := context.WithDeadline(t.Context(), deadline.Add(-time.Minute))
	t.Cleanup(cancel)
	return ctx
}

// harness is where the page's commands run: a hub and cluster1, a copy of
// the working tree, kubectl and the programs the Deployments run.
type harness struct {
	t   *testing.T
	env *testenv.Env
	mc  *testenv.ManagedCluster
	// dir is the copy of the working tree the commands run in.
	dir string
	// environ is the commands' environment: kubectl and the plugin on
	// PATH, a KUBECONFIG with the contexts hub and cluster1, their own HOME.
	environ []string
	// binaries maps an image's command to the program built here.
	binaries map[string]string
	// joined receives the join's result (see join).
	joined chan error
	// hub and agent are the Deployments' pods runHub and runAgent ran.
	hub, agent *pod
	// outputs are the commands' outputs, by command.key.
	outputs map[string]string
	// page is the page's text.
	page string
}

// newHarness builds kubectl and Canopy's programs, starts the hub and
// cluster1 (unregistered: the page joins it) and copies the working tree.
// Everything stops, and goes, when the test ends.
func newHarness(t *testing.T, root string) *harness {
	t.Helper()
	g := NewWithT(t)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	g.Expect(os.MkdirAll(bin, 0o755)).To(Succeed())
	h := &harness{t: t, dir: filepath.Join(tmp, "canopy"), joined: make(chan error, 1), outputs: map[string]string{},
		binaries: map[string]string{"/canopy-hub": filepath.Join(bin, "canopy-hub"), "/canopy-agent": filepath.Join(bin, "canopy-agent")}}

	kubectl := installKubectl(t, root)
	g.Expect(os.Symlink(kubectl, filepath.Join(bin, "kubectl"))).To(Succeed())
	// Note: go run keeps what it links in the build cache, go build -o
	// links anew each time (as test/docs' buildCLI says). Built in the tree
	// itself, without -trimpath, the programs share their compiled packages
	// with every other test's build; the page's go install, in the copy,
	// needs -trimpath to share its own from one run to the next.
	for command, path := range h.binaries {
		pkg := "./cmd/" + map[string]string{"/canopy-hub": "hub", "/canopy-agent": "spoke"}[command]
		build := exec.CommandContext(t.Context(), "go", "run", "-exec", "cp", pkg, path)
		build.Dir = root
		out, err := build.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "building %s:\n%s", path, out)
	}
	g.Expect(copyTree(root, h.dir)).To(Succeed())

	h.env = testenv.ForTest(t, testenv.Options{ManagedClusters: []string{clusterName}, Unregistered: true})
	h.mc = h.env.Cluster(clusterName)
	t.Cleanup(func() { // before the Env stops
		if t.Failed() {
			t.Logf("what the hub and %s hold and logged:\n%s\n%s", clusterName, h.objects(), ocmagents.LogTails(h.env))
		}
	})
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	g.Expect(mergeKubeconfigs(kubeconfig, map[string]string{
		testenv.HubName: h.env.Hub.KubeconfigPath, clusterName: h.mc.KubeconfigPath,
	})).To(Succeed())

	goEnv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	g.Expect(err).NotTo(HaveOccurred())
	goVars := strings.Fields(string(goEnv))
	g.Expect(goVars).To(HaveLen(3))
	owner, err := controlplane.OwnerEnv()
	g.Expect(err).NotTo(HaveOccurred())
	gobin := filepath.Join(tmp, "gobin")
	h.environ = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+gobin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+kubeconfig, "HOME="+filepath.Join(tmp, "home"), "GOBIN="+gobin,
		"GOCACHE="+goVars[0], "GOMODCACHE="+goVars[1], "GOPATH="+goVars[2], "NO_COLOR=1", owner)
	return h
}

// run runs c with bash in the copy of the tree and returns its output. A
// command still running when ctx ends is killed with what it
// started (its process group); bash dies with the test process, and what
// it started carries the test's owner mark, by which
// controlplane.Sweep finds it.
func (h *harness) run(ctx context.Context, c command) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", c.Text)
	cmd.Dir, cmd.Env = h.dir, h.environ
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// startOCMHub does what `clusteradm init` does, with OCM's own programs:
// kube-controller-manager signs the clusters' certificates; OCM's
// registration controller (accepting no cluster by itself), placement
// controller, addon manager and addon conversion webhook run on the hub.
// The registration controller's start creates the bootstrap ServiceAccount
// of OCM's Helm chart, agent-registration-bootstrap, and its ClusterRole
// open-cluster-management:bootstrap; startOCMHub adds clusteradm's,
// cluster-bootstrap, bound to that ClusterRole (clusteradm names its copy
// system:open-cluster-management:bootstrap).
func (h *harness) startOCMHub(ctx context.Context) error {
	for _, start := range []func(context.Context, *testenv.Env) error{
		ocmagents.StartControllerManager,
		func(ctx context.Context, env *testenv.Env) error {
			return ocmagents.StartRegistrationController(ctx, env, ocmagents.RegistrationOptions{})
		},
		ocmagents.StartPlacementController,
		ocmagents.StartAddonWebhook,
		ocmagents.StartAddonManager,
	} {
		if err := start(ctx, h.env); err != nil {
			return err
		}
	}
	return controlplane.CreateAll(ctx, h.env.Hub.Client, []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ocmagents.BootstrapNamespace, Name: "cluster-bootstrap"}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-bootstrap-sa"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "open-cluster-management:bootstrap"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ocmagents.BootstrapNamespace, Name: "cluster-bootstrap"}},
		},
	})
}

// join does what `clusteradm join --wait` does on cluster1: it starts
// OCM's registration agent there with a bootstrap token, and returns once
// the agent has asked the hub for the cluster's certificate. The join goes
// on until the page's commands accept the cluster; then OCM's work agent
// starts with the identity the hub issued, and joined receives the result.
func (h *harness) join(ctx context.Context) error {
	jctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	h.t.Cleanup(func() { cancel(); <-done }) // before the Env stops
	go func() {
		defer close(done)
		_, err := ocmagents.Join(jctx, h.env, h.mc, false)
		h.joined <- err
	}()
	return poll(ctx, func(ctx context.Context) (bool, error) {
		select {
		case err := <-h.joined:
			h.joined <- err
			return false, fmt.Errorf("the join ended before the agent asked for a certificate: %w", err)
		default:
		}
		csrs := &certificatesv1.CertificateSigningRequestList{}
		err := h.env.Hub.Client.List(ctx, csrs, client.MatchingLabels{clusterv1.ClusterNameLabelKey: clusterName})
		return err == nil && len(csrs.Items) > 0, err
	})
}

// runHub runs the hub's Deployment (runDeployment).
func (h *harness) runHub(ctx context.Context) error {
	p, err := runDeployment(ctx, h.env, h.env.Hub, "canopy-system", "canopy-hub", h.binaries)
	h.hub = p
	return err
}

// runAgent waits for the join to have started OCM's work agent, which
// applies the addon's ManifestWork, then runs the agent's Deployment on
// cluster1 (runDeployment).
func (h *harness) runAgent(ctx context.Context) error {
	select {
	case err := <-h.joined:
		if err != nil {
			return fmt.Errorf("joining %s: %w", clusterName, err)
		}
	case <-time.After(podTimeout):
		return fmt.Errorf("%s has not joined after %v", clusterName, podTimeout)
	}
	p, err := runDeployment(ctx, h.env, h.mc.ControlPlane, addon.DefaultInstallNamespace, addon.AgentName, h.binaries)
	h.agent = p
	return err
}

// installPrometheusRuleCRD installs a CRD for the Prometheus Operator's
// PrometheusRule (monitoring.coreos.com/v1) whose spec is free-form: the
// operator's own CRD is not at hand; test/ops checks the rules themselves.
func (h *harness) installPrometheusRuleCRD(ctx context.Context) error {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheusrules.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "PrometheusRule", ListKind: "PrometheusRuleList",
				Plural: "prometheusrules", Singular: "prometheusrule", ShortNames: []string{"promrule"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
	if err := h.env.Hub.Client.Create(ctx, crd); err != nil {
		return err
	}
	return poll(ctx, func(ctx context.Context) (bool, error) {
		err := h.env.Hub.Client.List(ctx, &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{
			APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRuleList"}})
		return err == nil, nil
	})
}

// installArgoCDConfigMap creates the namespace argocd and Argo CD's
// argocd-cm in it, empty, as Argo CD's install does.
func (h *harness) installArgoCDConfigMap(ctx context.Context) error {
	labels := map[string]string{"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"}
	return controlplane.CreateAll(ctx, h.env.Hub.Client, []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "argocd-cm", Labels: labels}},
	})
}

// expectOutcome checks what the page promises once every command ran.
func (h *harness) expectOutcome(g Gomega) {
	ctx := h.t.Context()
	root := &policyv1.Policy{}
	g.Expect(h.env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: policyNamespace, Name: policyName}, root)).To(Succeed())
	g.Expect(root.Status.ComplianceState).To(Equal(policyv1.Compliant))
	g.Expect(root.Status.Status).To(ConsistOf(HaveField("ClusterName", clusterName)))
	g.Expect(h.mc.Client.Get(ctx, client.ObjectKey{Name: "team-a"}, &corev1.Namespace{})).To(Succeed(),
		"the policy created the namespace on %s", clusterName)

	status := h.outputs["kubectl canopy status --context hub -n policies"]
	g.Expect(status).To(MatchRegexp(`(?m)^`+policyNamespace+"/"+policyName+`\s+Compliant\s`),
		"kubectl canopy status shows the policy Compliant on %s", clusterName)
	g.Expect(textBlocks(h.page)).To(ContainElement(strings.TrimSpace(status)), "%s shows what kubectl canopy status printed", page)

	g.Expect(h.hub).NotTo(BeNil())
	g.Expect(h.hub.Image).To(Equal(pinnedImage), "the hub's Deployment runs the image the overlay pins")
	g.Expect(h.hub.Args).To(ContainElement("--agent-image="+pinnedImage), "and gives it to the agents")
	g.Expect(h.agent).NotTo(BeNil())
	g.Expect(h.agent.Image).To(Equal(pinnedImage), "the agent the addon delivered runs the image the overlay pins")

	cm := &corev1.ConfigMap{}
	g.Expect(h.env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "argocd", Name: "argocd-cm"}, cm)).To(Succeed())
	for _, kind := range []string{"Policy", "PolicySet", "ConfigurationPolicy", "OperatorPolicy"} {
		g.Expect(cm.Data).To(HaveKeyWithValue("resource.customizations.health.policy.open-cluster-management.io_"+kind,
			ContainSubstring("hs.status")), "argocd-cm has the health check of %s", kind)
	}
}

// objects describes, for a failed test, the objects the addon's delivery
// goes through: the ManagedClusterAddOns, ManifestWorks and
// CertificateSigningRequests of the hub.
func (h *harness) objects() string {
	var b strings.Builder
	ctx := context.Background()
	for _, list := range []client.ObjectList{&addonv1beta1.ManagedClusterAddOnList{}, &workv1.ManifestWorkList{}, &certificatesv1.CertificateSigningRequestList{}} {
		if err := h.env.Hub.Client.List(ctx, list); err != nil {
			fmt.Fprintf(&b, "listing %T: %v\n", list, err)
			continue
		}
		out, _ := yaml.Marshal(list)
		fmt.Fprintf(&b, "%T:\n%s\n", list, out)
	}
	return b.String()
}

// installKubectl builds kubectl into bin/kubectl/<version> once
// (hack/install-kubectl.sh) and returns its path.
func installKubectl(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(root, "hack", "install-kubectl.sh"))
	cmd.Env = append(os.Environ(), "KUBE_VERSION="+controlplane.KubernetesVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl: %v\n%s", err, out)
	}
	return filepath.Join(root, "bin", "kubectl", controlplane.KubernetesVersion, "kubectl")
}

// copyTree copies the files of the working tree at root that git tracks or
// would track into dir: the page's commands write into the tree (an
// overlay), which must stay as it is.
func copyTree(root, dir string) error {
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	out, err := ls.Output()
	if err != nil {
		return fmt.Errorf("listing the working tree: %w", err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			return err
		}
		info, err := os.Stat(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, rel), data, info.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// mergeKubeconfigs writes one kubeconfig with a context per file, named by
// files' keys, each the current context of its file.
func mergeKubeconfigs(path string, files map[string]string) error {
	merged := clientcmdapi.NewConfig()
	for name, file := range files {
		kc, err := clientcmd.LoadFromFile(file)
		if err != nil {
			return err
		}
		current, ok := kc.Contexts[kc.CurrentContext]
		if !ok {
			return fmt.Errorf("%s has no current context", file)
		}
		merged.Clusters[name] = kc.Clusters[current.Cluster]
		merged.AuthInfos[name] = kc.AuthInfos[current.AuthInfo]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	return clientcmd.WriteToFile(*merged, path)
}

// indent indents out for the test's log.
func indent(out string) string {
	if strings.TrimSpace(out) == "" {
		return ""
	}
	return "  | " + strings.ReplaceAll(strings.TrimRight(out, "\n"), "\n", "\n  | ")
}
