package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// TemplatesSpecInput is the input of TemplatesSpec.
type TemplatesSpecInput struct {
	// Env is the hub and the managed clusters.
	Env *testenv.Env
	// Clusters are the managed clusters the examples are placed on.
	Clusters []string
	// Dir is the path of examples/templates.
	Dir string
}

// templatesTimeout bounds each wait of TemplatesSpec: a policy is
// propagated, its templates resolved, evaluated and reported home.
const templatesTimeout = 2 * time.Minute

// TemplatesSpec is the user story "one policy, per-cluster values": each
// example of examples/templates, applied to the hub as a user would, is
// resolved on the hub and on each managed cluster as OCM resolves it, and
// its objects and compliance messages are checked on every cluster.
//
// It runs the hub's controllers and one agent per cluster in this process.
func TemplatesSpec(inputGetter func() TemplatesSpecInput) {
	var (
		input TemplatesSpecInput
		t     *templatesRun
	)
	BeforeEach(func(ctx SpecContext) {
		input = inputGetter()
		t = &templatesRun{input: input, ns: CreateNamespace(ctx, input.Env.Hub.Client, "templates")}
		startHub(input.Env.Hub.Config)
		for _, name := range input.Clusters {
			startAgent(input.Env.Cluster(name))
		}
		t.apply(ctx, "00-placement.yaml", nil)
		Expect(input.Env.SetPlacementDecisions(ctx, t.ns, "all-clusters", input.Clusters...)).To(Succeed())
	})

	It("resolves hub templates per cluster, and again on every cluster when the ConfigMap they read changes", func(ctx SpecContext) { expectHubTemplates(ctx, t) })
	It("resolves managed-cluster templates from the cluster's ClusterClaims and lookups", func(ctx SpecContext) { expectManagedTemplates(ctx, t) })
	It("expands object-templates-raw into one object per namespace it ranges over", func(ctx SpecContext) { expectRaw(ctx, t) })
	It("copies a protected Secret to every cluster, never in clear text on the hub", func(ctx SpecContext) { expectProtect(ctx, t) })
	It("applies an object template to each object its selector picks, with that object's name", func(ctx SpecContext) { expectObjectSelector(ctx, t) })
	It("reports the policy's own compliance message", func(ctx SpecContext) { expectCustomMessage(ctx, t) })
	It("recreates an immutable object when the hub value it holds changes", func(ctx SpecContext) { expectRecreate(ctx, t) })
	It("refuses a hub lookup outside the policy's namespace, naming the cluster and the error", func(ctx SpecContext) { expectRefusedLookup(ctx, t) })
}

// expectHubTemplates resolves the hub templates of 01-hub-templates.yaml per
// cluster, then again on every cluster when the ConfigMap they read changes.
func expectHubTemplates(ctx context.Context, t *templatesRun) {
	GinkgoHelper()
	t.apply(ctx, "01-hub-templates.yaml", func(u *unstructured.Unstructured) {
		if u.GetKind() == "ConfigMap" { // one region per cluster of this environment
			u.Object["data"] = t.perCluster("-region", func(c string) string { return "region-of-" + c })
		}
	})
	t.expectCompliant(ctx, "cluster-settings")
	for _, c := range t.input.Clusters {
		Expect(t.configMapData(ctx, c, "default", "cluster-settings")).To(Equal(map[string]string{
			"cluster": c, "region": "region-of-" + c, "clusterset": "default", "owner": "platform",
		}), c)
	}
	t.patchHub(ctx, "ConfigMap", "fleet-values", map[string]any{
		"data": t.perCluster("-region", func(c string) string { return "moved-" + c }),
	})
	for _, c := range t.input.Clusters {
		Eventually(func(g Gomega) string {
			return t.configMapData(ctx, c, "default", "cluster-settings")["region"]
		}).WithContext(ctx).WithTimeout(templatesTimeout).Should(Equal("moved-"+c), c)
	}
}

// expectManagedTemplates resolves the managed-cluster templates of 02-managed-
// templates.yaml from each cluster's ClusterClaim and lookups.
func expectManagedTemplates(ctx context.Context, t *templatesRun) {
	GinkgoHelper()
	t.apply(ctx, "02-managed-templates.yaml", nil)
	t.expectCompliant(ctx, "cluster-identity")
	for _, c := range t.input.Clusters {
		ns := &corev1.Namespace{}
		Expect(t.input.Env.Cluster(c).Client.Get(ctx, client.ObjectKey{Name: "default"}, ns)).To(Succeed())
		Expect(t.configMapData(ctx, c, "default", "cluster-identity")).To(Equal(map[string]string{
			"id": c, "default-namespace-uid": string(ns.UID),
		}), c)
	}
}

// expectRaw expands the object-templates-raw of 03-object-templates-raw.yaml
// into one ConfigMap per team namespace.
func expectRaw(ctx context.Context, t *templatesRun) {
	GinkgoHelper()
	t.apply(ctx, "03-object-templates-raw.yaml", nil)
	t.expectCompliant(ctx, "team-info")
	for _, c := range t.input.Clusters {
		for _, team := range []string{"alpha", "beta"} {
			Expect(t.configMapData(ctx, c, "team-"+team, "team-info")).To(Equal(map[string]string{"team": team}), c)
		}
	}
}

// expectProtect copies the Secret of 04-protect.yaml to every cluster,
// encrypted on the hub and never there in clear text.
func expectProtect(ctx context.Context, t *templatesRun) {
	GinkgoHelper()
	t.apply(ctx, "04-protect.yaml", nil)
	t.expectCompliant(ctx, "db-credentials")
	const password = "correct-horse-battery-staple"
	for _, c := range t.input.Clusters {
		s := &corev1.Secret{}
		Expect(t.input.Env.Cluster(c).Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db-credentials"}, s)).To(Succeed())
		Expect(string(s.Data["password"])).To(Equal(password), c)
		Expect(string(s.Data["endpoint"])).To(Equal("db."+c+".example.com"), c)

		replica := t.replica(ctx, c, "db-credentials")
		Expect(replica.Annotations).To(HaveKey(templating.IVAnnotation), c)
		raw, err := json.Marshal(replica)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring("$ocm_encrypted:"), c)
		for _, form := range []string{password, base64.StdEncoding.EncodeToString([]byte(password))} {
			Expect(string(raw)).NotTo(ContainSubstring(form), "%s: the replica shows the Secret value", c)
		}
		key := &corev1.Secret{}
		Expect(t.input.Env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: c, Name: templating.EncryptionKeySecret}, key)).To(Succeed())
		Expect(key.Data[templating.EncryptionKeyField]).To(HaveLen(32), c)
	}
}

// expectObjectSelector checks that 05-object-selector.yaml stamps each selected ConfigMap with its own name.
func expectObjectSelector(ctx context.Context, t *templatesRun) {
	GinkgoHelper()
	t.apply(ctx, "05-object-selector.yaml", nil)
	t.expectCompliant(ctx, "stamped-configmaps")
	for _, c := range t.input.Clusters {
		for _, name := range []string{"stamp-one", "stamp-two"} {
			Expect(t.configMapData(ctx, c, "default", name)).To(Equal(map[string]string{
				"stamped-name": name, "stamped-namespace": "default",
			}), c)
		}
	}
}

// expectCustomMessage checks the customMessage of 06-custom-message.yaml on every cluster.
func expectCustomMessage(ctx context.Context, t *templatesRun) {
	GinkgoHelper()
	t.apply(ctx, "06-custom-message.yaml", nil)
	for _, c := range t.input.Clusters {
		Eventually(func(g Gomega) string {
			replica := &policyv1.Policy{}
			g.Expect(t.input.Env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: c, Name: t.ns + ".audit-config"}, replica)).To(Succeed())
			h := historyOf(replica, "audit-config")
			g.Expect(h).NotTo(BeEmpty())
			return h[0].Message
		}).WithContext(ctx).WithTimeout(templatesTimeout).Should(Equal("NonCompliant; Audit is not configured on this cluster; "+
			"ask #platform to enable it (NonCompliant; violation - configmaps [audit-config] not found in namespace default)"), c)
	}
}

// expectRecreate checks that 07-recreate-option.yaml recreates its immutable
// ConfigMap when the hub value changes.
func expectRecreate(ctx context.Context, t *templatesRun) {
	GinkgoHelper()
	t.apply(ctx, "07-recreate-option.yaml", nil)
	t.expectCompliant(ctx, "release-pin")
	before := map[string]string{}
	for _, c := range t.input.Clusters {
		cm := t.configMap(ctx, c, "default", "release-pin")
		Expect(cm.Data).To(Equal(map[string]string{"release": "2026.11"}), c)
		before[c] = string(cm.UID)
	}
	t.patchHub(ctx, "ConfigMap", "release-values", map[string]any{"data": map[string]any{"release": "2026.12"}})
	for _, c := range t.input.Clusters {
		Eventually(func(g Gomega) map[string]string {
			cm := &corev1.ConfigMap{} // absent for a moment while it is recreated
			g.Expect(t.input.Env.Cluster(c).Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "release-pin"}, cm)).To(Succeed())
			g.Expect(string(cm.UID)).NotTo(Equal(before[c]), "recreated")
			return cm.Data
		}).WithContext(ctx).WithTimeout(templatesTimeout).Should(Equal(map[string]string{"release": "2026.12"}), c)
	}
	t.expectCompliant(ctx, "release-pin")
}

// expectRefusedLookup applies 01-hub-templates.yaml with a lookup outside the
// policy's namespace and checks the refusal on the root, the replicas and the
// clusters.
func expectRefusedLookup(ctx context.Context, t *templatesRun) {
	GinkgoHelper()
	t.apply(ctx, "01-hub-templates.yaml", func(u *unstructured.Unstructured) {
		raw, err := json.Marshal(u.Object) // another name: the first spec's template may still be on the clusters
		Expect(err).NotTo(HaveOccurred())
		edited := strings.ReplaceAll(string(raw), "cluster-settings", "refused-settings")
		edited = strings.Replace(edited, `fromConfigMap \"\" \"fleet-values\"`, `fromConfigMap \"kube-system\" \"fleet-values\"`, 1)
		Expect(json.Unmarshal([]byte(edited), &u.Object)).To(Succeed())
	})
	root := client.ObjectKey{Namespace: t.ns, Name: "refused-settings"}
	Eventually(func(g Gomega) map[string]policyv1.ComplianceState {
		p := &policyv1.Policy{}
		g.Expect(t.input.Env.Hub.Client.Get(ctx, root, p)).To(Succeed())
		cond := meta.FindStatusCondition(p.Status.Conditions, "Propagated")
		g.Expect(cond).NotTo(BeNil())
		for _, c := range t.input.Clusters {
			g.Expect(cond.Message).To(ContainSubstring(c))
		}
		g.Expect(cond.Message).To(ContainSubstring("kube-system"))
		return perCluster(p)
	}).WithContext(ctx).WithTimeout(templatesTimeout).Should(Equal(allOf(t.input.Clusters, policyv1.NonCompliant)))
	for _, c := range t.input.Clusters {
		replica := t.replica(ctx, c, "refused-settings")
		Expect(string(replica.Spec.PolicyTemplates[0].ObjectDefinition.Raw)).To(ContainSubstring(templating.HubTemplatesErrorAnnotation), c)
		h := historyOf(replica, "refused-settings")
		Expect(h).NotTo(BeEmpty(), c)
		Expect(h[0].Message).To(And(HavePrefix("NonCompliant; "+templating.TemplateErrorPrefix), ContainSubstring("kube-system")), c)
		template := &policyv1.ConfigurationPolicy{} // never created from a template that did not resolve
		err := t.input.Env.Cluster(c).Client.Get(ctx, client.ObjectKey{Namespace: c, Name: "refused-settings"}, template)
		Expect(err).To(Satisfy(apierrors.IsNotFound), c)
	}
}

// templatesRun is one spec of TemplatesSpec: its hub namespace and helpers.
type templatesRun struct {
	input TemplatesSpecInput
	ns    string
}

// apply creates the hub objects of an example file in the spec's namespace
// (Namespaces excepted), after edit changes each, when edit is not nil.
func (t *templatesRun) apply(ctx context.Context, file string, edit func(*unstructured.Unstructured)) {
	GinkgoHelper()
	raw, err := os.ReadFile(filepath.Join(t.input.Dir, file))
	Expect(err).NotTo(HaveOccurred())
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(raw)), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) == 0 || u.GetKind() == "Namespace" {
			continue
		}
		u.SetNamespace(t.ns)
		if edit != nil {
			edit(u)
		}
		Expect(t.input.Env.Hub.Client.Create(ctx, u)).To(Succeed(), "%s: %s %s", file, u.GetKind(), u.GetName())
	}
}

// perCluster returns the data of a ConfigMap with one key per cluster.
func (t *templatesRun) perCluster(suffix string, value func(string) string) map[string]any {
	out := map[string]any{}
	for _, c := range t.input.Clusters {
		out[c+suffix] = value(c)
	}
	return out
}

// patchHub merge-patches a hub object of the spec's namespace.
func (t *templatesRun) patchHub(ctx context.Context, kind, name string, patch map[string]any) {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	u.SetNamespace(t.ns)
	u.SetName(name)
	body, err := json.Marshal(patch)
	Expect(err).NotTo(HaveOccurred())
	Expect(t.input.Env.Hub.Client.Patch(ctx, u, client.RawPatch("application/merge-patch+json", body))).To(Succeed())
}

// expectCompliant waits until the root policy name is Compliant on every
// cluster.
func (t *templatesRun) expectCompliant(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) map[string]policyv1.ComplianceState {
		p := &policyv1.Policy{}
		g.Expect(t.input.Env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: t.ns, Name: name}, p)).To(Succeed())
		return perCluster(p)
	}).WithContext(ctx).WithTimeout(templatesTimeout).Should(Equal(allOf(t.input.Clusters, policyv1.Compliant)), name)
}

// replica returns the hub replica of root policy name for cluster.
func (t *templatesRun) replica(ctx context.Context, cluster, name string) *policyv1.Policy {
	GinkgoHelper()
	p := &policyv1.Policy{}
	Expect(t.input.Env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: t.ns + "." + name}, p)).To(Succeed())
	return p
}

// configMap returns a ConfigMap of a managed cluster.
func (t *templatesRun) configMap(ctx context.Context, cluster, ns, name string) *corev1.ConfigMap {
	GinkgoHelper()
	cm := &corev1.ConfigMap{}
	Expect(t.input.Env.Cluster(cluster).Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed(), cluster)
	return cm
}

// configMapData returns the data of a ConfigMap of a managed cluster.
func (t *templatesRun) configMapData(ctx context.Context, cluster, ns, name string) map[string]string {
	GinkgoHelper()
	return t.configMap(ctx, cluster, ns, name).Data
}
