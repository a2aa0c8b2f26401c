package security_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/test/inproc"
)

// TestNoSecretInOutputs plants unique values in Secrets that policies
// compare (musthave and mustonlyhave with a different value, recordDiff
// InStatus), enforce (into a namespace that does not exist) and propagate
// (a HierarchyPolicy copying a Secret down a namespace tree), waits until
// every policy has reported, and then searches every log line of the
// controllers (V(10)), every event and every status on the hub and the
// managed cluster for the values, plain and base64-encoded. Policies read
// Secrets through templates: hub templates (fromSecret, and a lookup piped
// into protect, encrypted per cluster; a bare lookup, which the hub refuses
// as it would write the value in clear text) and a managed-cluster one. The
// hub's replicas and the managed cluster's copies of the policies (spec
// included) are searched too.
func TestNoSecretInOutputs(t *testing.T) {
	suite.Get(t) // starts env on first use
	g := NewWithT(t)
	mc := env.Cluster("cluster1")
	inproc.StartHub(t, env.Hub.Config)
	inproc.StartAgent(t, mc.Name, mc.Config, mc.HubConfig)
	stored, declared := "canopy-stored-"+randomHex(t), "canopy-declared-"+randomHex(t)
	src, child := plantSecrets(t, mc.Client, stored)

	ns := controlplane.Namespace(t, env.Hub.Client)
	ctx := t.Context()
	onHub := "canopy-hub-" + randomHex(t) // read by a hub template, encrypted per cluster
	g.Expect(env.Hub.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hub-secret"},
		Data: map[string][]byte{"token": []byte(onHub)}})).To(Succeed())
	lookedUp := "canopy-lookup-" + randomHex(t) // read by hub lookups: refused in clear, encrypted through protect
	g.Expect(env.Hub.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hub-lookup-secret"},
		Data: map[string][]byte{"token": []byte(lookedUp)}})).To(Succeed())
	for name, tmpl := range secretTemplates(src, child, declared) {
		placedPolicy(t, ns, mc.Name, name, "", tmpl)
	}
	g.Eventually(replicaHistory(ctx, ns, "compare", mc.Name), eventually, poll).Should(HaveExactElements(
		"NonCompliant", ContainSubstring("NonCompliant; violation - secrets [stored] found but not as specified in namespace "+src)))
	g.Eventually(replicaHistory(ctx, ns, "exact", mc.Name), eventually, poll).Should(HaveExactElements(
		"NonCompliant", ContainSubstring("not as specified")))
	g.Eventually(replicaHistory(ctx, ns, "enforce", mc.Name), eventually, poll).Should(HaveExactElements(
		"NonCompliant", ContainSubstring("cannot be created")))
	g.Eventually(replicaHistory(ctx, ns, "propagate", mc.Name), eventually, poll).Should(HaveExactElements(
		"Compliant", HavePrefix("Compliant")))
	for _, name := range []string{"hub-template", "hub-lookup-protected", "managed-template"} {
		g.Eventually(replicaHistory(ctx, ns, name, mc.Name), eventually, poll).Should(HaveExactElements(
			"Compliant", HavePrefix("Compliant")), name)
	}
	g.Eventually(replicaHistory(ctx, ns, "hub-lookup", mc.Name), eventually, poll).Should(HaveExactElements(
		"NonCompliant", And(ContainSubstring("template-error"), ContainSubstring("in clear text"))))
	for name, want := range map[string]string{"from-hub": onHub, "from-hub-lookup": lookedUp, "from-managed": stored} {
		s := &corev1.Secret{}
		g.Expect(mc.Client.Get(ctx, client.ObjectKey{Namespace: src, Name: name}, s)).To(Succeed())
		g.Expect(string(s.Data["token"])).To(Equal(want), "the template's Secret %s holds the value", name)
	}
	// The policies whose hub templates read Secrets: their replicas, and
	// their copies on the managed cluster (the local Policy and the
	// ConfigurationPolicy), spec included.
	var replicas, copies strings.Builder
	for _, name := range []string{"hub-template", "hub-lookup", "hub-lookup-protected"} {
		replica := objectText(t, env.Hub.Client, &policyv1.Policy{}, mc.Name, ns+"."+name)
		if name != "hub-lookup" {
			g.Expect(replica).To(ContainSubstring("$ocm_encrypted:"), "the hub replica of %s holds the value encrypted", name)
		}
		replicas.WriteString(replica)
		copies.WriteString(objectText(t, mc.Client, &policyv1.Policy{}, mc.Name, ns+"."+name))
		if name == "hub-lookup" { // the agent creates no template its hub could not resolve
			err := mc.Client.Get(ctx, client.ObjectKey{Namespace: mc.Name, Name: "secret-" + name}, &policyv1.ConfigurationPolicy{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ConfigurationPolicy of hub-lookup: %v", err)
			continue
		}
		copies.WriteString(objectText(t, mc.Client, &policyv1.ConfigurationPolicy{}, mc.Name, "secret-"+name))
	}
	for _, name := range []string{"compare", "exact", "enforce", "propagate", "hub-template", "hub-lookup", "hub-lookup-protected", "managed-template"} {
		t.Logf("%s: %q", name, replicaHistory(ctx, ns, name, mc.Name)())
	}
	copied := &corev1.Secret{}
	g.Eventually(func() error {
		return mc.Client.Get(ctx, client.ObjectKey{Namespace: child, Name: "stored"}, copied)
	}, eventually, poll).Should(Succeed(), "the HierarchyPolicy copies the Secret")
	g.Expect(string(copied.Data["token"])).To(Equal(stored))

	outputs := map[string]string{
		"controller logs": logs.String(),
		"hub replicas":    replicas.String(),
		"managed copies":  copies.String(),
	}
	for name, c := range map[string]client.Client{"hub": env.Hub.Client, "managed": mc.Client} {
		outputs[name+" events"] = eventsText(t, c)
		outputs[name+" statuses"] = statusesText(t, c)
	}
	for where, text := range outputs {
		g.Expect(text).NotTo(BeEmpty(), where)
		for _, secret := range []string{stored, declared, onHub, lookedUp} {
			for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
				g.Expect(strings.Contains(text, form)).To(BeFalse(), "%s show a Secret value (%s)", where, form)
			}
		}
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// plantSecrets creates, on the managed cluster, a root namespace holding
// the Secret "stored" (value in key token, annotated for propagation) and a
// child namespace under it; it returns both names.
func plantSecrets(t *testing.T, c client.Client, value string) (string, string) {
	t.Helper()
	src := "secret-src-" + randomHex(t)[:6]
	child := src + "-child"
	managedNamespace(t, c, src, map[string]string{hierarchyv1alpha1.TypeLabel: hierarchyv1alpha1.TypeRoot})
	managedNamespace(t, c, child, map[string]string{hierarchyv1alpha1.ParentLabel: src})
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "stored",
			Annotations: map[string]string{hierarchyv1alpha1.PropagateAnnotation: "update"}},
		Data: map[string][]byte{"token": []byte(value)},
	}
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	return src, child
}

// secretTemplates are the policy templates of the test, by policy name.
func secretTemplates(src, child, declared string) map[string]string {
	other := base64.StdEncoding.EncodeToString([]byte("not-the-stored-value"))
	enc := base64.StdEncoding.EncodeToString([]byte(declared))
	cfg := func(name, action, ctype, extra, obj string) string {
		return `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: ` + name + `}
spec:
  remediationAction: ` + action + `
  object-templates:
  - complianceType: ` + ctype + extra + `
    objectDefinition: ` + obj
	}
	return map[string]string{
		"compare": cfg("secret-compare", "inform", "musthave", "",
			`{apiVersion: v1, kind: Secret, metadata: {name: stored, namespace: `+src+`}, data: {token: `+other+`}}`),
		"exact": cfg("secret-exact", "inform", "mustonlyhave", "\n    recordDiff: InStatus",
			`{apiVersion: v1, kind: Secret, metadata: {name: stored, namespace: `+src+`}, data: {token: `+other+`}}`),
		"enforce": cfg("secret-enforce", "enforce", "musthave", "",
			`{apiVersion: v1, kind: Secret, metadata: {name: declared, namespace: `+child+`-missing}, data: {token: `+enc+`}}`),
		"hub-template": cfg("secret-hub-template", "enforce", "musthave", "",
			`{apiVersion: v1, kind: Secret, metadata: {name: from-hub, namespace: `+src+`}, data: {token: '{{hub fromSecret "" "hub-secret" "token" hub}}'}}`),
		"hub-lookup": cfg("secret-hub-lookup", "enforce", "musthave", "",
			`{apiVersion: v1, kind: Secret, metadata: {name: from-hub-lookup-clear, namespace: `+src+`}, data: {token: '{{hub (lookup "v1" "Secret" "" "hub-lookup-secret").data.token hub}}'}}`),
		"hub-lookup-protected": cfg("secret-hub-lookup-protected", "enforce", "musthave", "",
			`{apiVersion: v1, kind: Secret, metadata: {name: from-hub-lookup, namespace: `+src+`}, data: {token: '{{hub (lookup "v1" "Secret" "" "hub-lookup-secret").data.token | protect hub}}'}}`),
		"managed-template": cfg("secret-managed-template", "enforce", "musthave", "\n    recordDiff: InStatus",
			`{apiVersion: v1, kind: Secret, metadata: {name: from-managed, namespace: `+src+`}, data: {token: '{{ fromSecret "`+src+`" "stored" "token" }}'}}`),
		"propagate": `
apiVersion: hierarchy.canopy.io/v1alpha1
kind: HierarchyPolicy
metadata: {name: secret-propagate}
spec:
  remediationAction: enforce
  propagation: {kinds: [{kind: Secret}]}`,
	}
}

// eventsText returns every event's reason and message, one per line.
func eventsText(t *testing.T, c client.Client) string {
	t.Helper()
	list := &corev1.EventList{}
	if err := c.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range list.Items {
		b.WriteString(e.Reason + ": " + e.Message + "\n")
	}
	return b.String()
}

// objectText returns the object namespace/name, read into obj, as JSON.
func objectText(t *testing.T, c client.Client, obj client.Object, namespace, name string) string {
	t.Helper()
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw) + "\n"
}

// statusesText returns the status of every policy object, as JSON.
func statusesText(t *testing.T, c client.Client) string {
	t.Helper()
	var b strings.Builder
	for _, gvk := range []schema.GroupVersionKind{
		policyv1.GroupVersion.WithKind("PolicyList"),
		policyv1.GroupVersion.WithKind("ConfigurationPolicyList"),
		hierarchyv1alpha1.GroupVersion.WithKind("HierarchyPolicyList"),
	} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk)
		if err := c.List(t.Context(), list); err != nil {
			continue // the hub serves no HierarchyPolicy
		}
		for _, u := range list.Items {
			raw, _ := json.Marshal(u.Object["status"])
			b.Write(raw)
			b.WriteString("\n")
		}
	}
	return b.String()
}
