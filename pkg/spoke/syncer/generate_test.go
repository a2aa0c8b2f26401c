package syncer

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

const generators = `
spec:
  remediationAction: enforce
  generators:
  - name: default-deny
    namespaceSelector: {matchLabels: {canopy-test: $S}}
    synchronize: true
    data: {apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: default-deny}, spec: {podSelector: {}, policyTypes: [Ingress, Egress]}}
  - name: docker-creds
    namespaceSelector: {matchLabels: {canopy-test: $S}}
    synchronize: true
    clone: {apiVersion: v1, kind: Secret, namespace: $NS, name: docker}
`

// TestGenerators (docs/api/hierarchy-v1alpha1.md, "Generators"): generators apply to namespaces that
// existed before them and to new ones, label what they make, keep it in
// sync with a clone source, and clean up when the match or the generator
// goes.
func TestGenerators(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"gen-a-$S", "gen-b-$S"} {
		f.object(&corev1.Namespace{}, `{metadata: {name: `+name+`, labels: {canopy-test: $S}}}`)
	}
	f.object(&corev1.Secret{}, `{metadata: {name: docker, namespace: `+f.ns+`}, stringData: {token: one}}`)
	f.policy("metadata: {name: gens}" + replaceNS(generators, f.ns))

	// existing namespaces, and then a new one
	f.g.Eventually(f.evaluated("gens"), eventually, poll).Should(Equal(policyv1.Compliant))
	f.object(&corev1.Namespace{}, `{metadata: {name: gen-c-$S, labels: {canopy-test: $S}}}`)
	f.g.Eventually(f.generated("gens.default-deny"), eventually, poll).Should(ConsistOf(
		f.expand("gen-a-$S"), f.expand("gen-b-$S"), f.expand("gen-c-$S")))
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "gen-a-$S", Name: "default-deny"}}
	f.g.Expect(f.exists(np)(f.g)).To(BeTrue())
	f.g.Expect(np.Labels).To(HaveKeyWithValue(hierarchyv1alpha1.ManagedByLabel, "canopy"))
	f.g.Expect(np.Spec.PolicyTypes).To(HaveLen(2))

	// the clone follows its source
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "gen-c-$S", Name: "docker"}}
	f.g.Eventually(f.exists(secret), eventually, poll).Should(BeTrue())
	f.g.Expect(secret.Data).To(HaveKeyWithValue("token", []byte("one")))
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "docker"}}
	f.g.Expect(f.exists(src)(f.g)).To(BeTrue())
	orig := src.DeepCopy()
	src.Data["token"] = []byte("two")
	f.g.Expect(f.c.Patch(t.Context(), src, client.MergeFrom(orig))).To(Succeed())
	f.g.Eventually(func(g Gomega) string {
		g.Expect(f.exists(secret)(g)).To(BeTrue())
		return string(secret.Data["token"])
	}, eventually, poll).Should(Equal("two"))

	// the match goes → synchronized objects go
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gen-b-$S"}}
	f.g.Expect(f.exists(ns)(f.g)).To(BeTrue())
	origNS := ns.DeepCopy()
	delete(ns.Labels, "canopy-test")
	f.g.Expect(f.c.Patch(t.Context(), ns, client.MergeFrom(origNS))).To(Succeed())
	f.g.Eventually(f.generated("gens.default-deny"), eventually, poll).Should(ConsistOf(f.expand("gen-a-$S"), f.expand("gen-c-$S")))

	// the generator goes → what it made goes
	f.updateSpec("gens", dropGenerator(replaceNS(generators, f.ns)))
	f.g.Eventually(f.generated("gens.default-deny"), eventually, poll).Should(BeEmpty())
	f.g.Eventually(f.evaluated("gens"), eventually, poll).Should(Equal(policyv1.Compliant))
	f.g.Expect(f.exists(secret)(f.g)).To(BeTrue())
}

// generated returns a function listing the namespaces of the
// NetworkPolicies labelled generated-by=id.
func (f *fixture) generated(id string) func(Gomega) []string {
	return func(g Gomega) []string {
		list := &networkingv1.NetworkPolicyList{}
		g.Expect(f.c.List(f.t.Context(), list, client.MatchingLabels{hierarchyv1alpha1.GeneratedByLabel: id})).To(Succeed())
		var out []string
		for _, np := range list.Items {
			if np.DeletionTimestamp.IsZero() {
				out = append(out, np.Namespace)
			}
		}
		return out
	}
}

func replaceNS(doc, ns string) string { return strings.ReplaceAll(doc, "$NS", ns) }

// dropGenerator removes the default-deny generator from the generators doc.
func dropGenerator(doc string) string {
	doc = dropLine(doc, "name: default-deny")
	doc = dropLine(doc, "data: {apiVersion: networking.k8s.io/v1")
	return strings_Replace(doc, "    namespaceSelector: {matchLabels: {canopy-test: $S}}\n    synchronize: true\n  - name: docker-creds",
		"  - name: docker-creds")
}

// TestGeneratorWithoutSynchronize: without synchronize a generator only
// creates what is missing and leaves it when the match goes; a clone whose
// source is missing holds, and says so, until the source appears.
func TestGeneratorWithoutSynchronize(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.Namespace{}, `{metadata: {name: once-$S, labels: {canopy-test: $S}}}`)
	f.policy(replaceNS(`
metadata: {name: gens}
spec:
  remediationAction: enforce
  generators:
  - name: once
    namespaceSelector: {matchLabels: {canopy-test: $S}}
    data: {apiVersion: v1, kind: ConfigMap, metadata: {name: once}, data: {v: "1"}}
  - name: cloned
    namespaceSelector: {matchLabels: {canopy-test: $S}}
    synchronize: true
    clone: {apiVersion: v1, kind: ConfigMap, namespace: $NS, name: later}
`, f.ns))
	f.g.Eventually(f.data("once-$S", "once"), eventually, poll).Should(Equal(map[string]string{"v": "1"}))
	f.g.Eventually(f.evaluated("gens"), eventually, poll).Should(Equal(policyv1.NonCompliant))
	f.g.Eventually(func(g Gomega) []string {
		var reasons []string
		for _, rel := range f.status("gens")(g).RelatedObjects {
			reasons = append(reasons, rel.Reason)
		}
		return reasons
	}, eventually, poll).Should(ContainElement("hold: clone source of generator cloned not found; its deletions are held"))

	f.object(&corev1.ConfigMap{}, `{metadata: {name: later, namespace: `+f.ns+`}, data: {w: "2"}}`)
	f.g.Eventually(f.data("once-$S", "later"), eventually, poll).Should(Equal(map[string]string{"w": "2"}))
	f.g.Eventually(f.evaluated("gens"), eventually, poll).Should(Equal(policyv1.Compliant))

	// the match goes: the synchronized clone goes, the other stays
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "once-$S"}}
	f.g.Expect(f.exists(ns)(f.g)).To(BeTrue())
	orig := ns.DeepCopy()
	delete(ns.Labels, "canopy-test")
	f.g.Expect(f.c.Patch(t.Context(), ns, client.MergeFrom(orig))).To(Succeed())
	f.g.Eventually(f.data("once-$S", "later"), eventually, poll).Should(BeNil())
	f.g.Expect(f.data("once-$S", "once")(f.g)).To(Equal(map[string]string{"v": "1"}))
}
