package configpolicy

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/dryrun"
)

// TestDryRunObjects checks the objects a dry run's creates and updates
// carry: resolved, the update merged with the object on the cluster, and
// no Secret value anywhere, from a Secret's data, a template that reads a
// Secret, or object-templates-raw that does.
func TestDryRunObjects(t *testing.T) {
	f := newFixture(t)
	const secret = "objects-s3cr3t value"
	f.object(&corev1.Secret{}, `{metadata: {name: creds}, stringData: {password: "`+secret+`"}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: names}, data: {region: eu-west-1}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: existing, labels: {tier: db}}, data: {password: old, keep: "yes"}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: unwanted}}`)
	policy := dryRunPolicy(f, `
metadata: {name: objects, namespace: $NS}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: $NS},
      data: {region: '{{ fromConfigMap "$NS" "names" "region" }}', size: small}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: existing, namespace: $NS, labels: {app: web}},
      data: {password: '{{ fromSecret "$NS" "creds" "password" | base64dec }}', user: admin}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: Secret, metadata: {name: literal, namespace: $NS},
      stringData: {token: written-in-the-policy}}
  - complianceType: mustnothave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: unwanted, namespace: $NS}}
`)
	actions, err := DryRun(t.Context(), suite.Get(t).Config, policy)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(actions).To(HaveLen(4))
	f.g.Expect(actions[0].Object).To(Equal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": f.ns},
		"data":     map[string]any{"region": "eu-west-1", "size": "small"}}))
	f.g.Expect(actions[1].Op).To(Equal(OpUpdate))
	f.g.Expect(actions[1].Object).To(Equal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "existing", "namespace": f.ns, "labels": map[string]any{"app": "web", "tier": "db"}},
		"data":     map[string]any{"password": dryrun.Redacted, "user": "admin", "keep": "yes"}}))
	f.g.Expect(actions[2].Object).To(HaveKeyWithValue("stringData", map[string]any{"token": dryrun.Redacted}))
	f.g.Expect(actions[3]).To(And(HaveField("Op", OpDelete), HaveField("Object", BeNil())))
	expectNoSecretIn(f.g, actions, secret)
}

// TestDryRunObjectsRaw checks that the objects object-templates-raw yields
// from a Secret show none of what it resolved.
func TestDryRunObjectsRaw(t *testing.T) {
	f := newFixture(t)
	const secret = "raw-s3cr3t value"
	f.object(&corev1.Secret{}, `{metadata: {name: creds}, stringData: {password: "`+secret+`"}}`)
	policy := dryRunPolicy(f, `
metadata: {name: raw, namespace: $NS}
spec:
  remediationAction: inform
  object-templates-raw: |
    - complianceType: musthave
      objectDefinition:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: from-raw, namespace: $NS}
        data:
          password: '{{ fromSecret "$NS" "creds" "password" | base64dec }}'
`)
	actions, err := DryRun(t.Context(), suite.Get(t).Config, policy)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(actions).To(HaveLen(1))
	f.g.Expect(actions[0].Object).To(Equal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "from-raw", "namespace": f.ns},
		"data":     map[string]any{"password": dryrun.Redacted}}))
	expectNoSecretIn(f.g, actions, secret)
}

func dryRunPolicy(f *fixture, doc string) *policyv1.ConfigurationPolicy {
	policy := &policyv1.ConfigurationPolicy{}
	f.g.Expect(yaml.UnmarshalStrict([]byte(strings.ReplaceAll(doc, "$NS", f.ns)), policy)).To(Succeed())
	return policy
}

func expectNoSecretIn(g Gomega, actions []dryrun.Action, secret string) {
	out, err := json.Marshal(actions)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).NotTo(Or(ContainSubstring(secret), ContainSubstring(base64.StdEncoding.EncodeToString([]byte(secret)))))
}

// TestMaskResolved checks which values of an object planned from a
// sensitive template are masked: what resolution put there (strings and
// other values, and copies of them elsewhere), never what the definition
// sets as written, nor the kind, name and namespace.
func TestMaskResolved(t *testing.T) {
	written := `{"apiVersion":"v1","kind":"Thing","metadata":{"name":"{{ fromSecret \"a\" \"b\" \"c\" }}","namespace":"ns",` +
		`"labels":{"app":"web","who":"{{ fromSecret \"a\" \"b\" \"who\" }}"}},` +
		`"spec":{"literal":"as-written","count":3,"replicas":"{{ fromSecret \"a\" \"b\" \"n\" | toInt }}",` +
		`"list":["{{ fromSecret \"a\" \"b\" \"l\" }}"],"nested":{"deep":"{{ fromSecret \"a\" \"b\" \"d\" }}"}}}`
	resolved := map[string]any{"apiVersion": "v1", "kind": "Thing",
		"metadata": map[string]any{"name": "secret-name", "namespace": "ns", "labels": map[string]any{"app": "web", "who": "alice"}},
		"spec": map[string]any{"literal": "as-written", "count": int64(3), "replicas": int64(7),
			"list": []any{"item-value"}, "nested": map[string]any{"deep": "deep-value"}}}
	shown := func() map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Thing",
			"metadata": map[string]any{"name": "secret-name", "namespace": "ns",
				"labels": map[string]any{"app": "web", "who": "alice", "other": "kept"}},
			"spec": map[string]any{"literal": "as-written", "count": int64(3), "replicas": int64(7),
				"list": []any{"item-value", "existing"}, "nested": map[string]any{"deep": "deep-value", "sibling": "kept"},
				"copy": "deep-value", "mention": "the value is deep-value here", "untouched": "kept"}}
	}
	masked := map[string]any{"apiVersion": "v1", "kind": "Thing",
		"metadata": map[string]any{"name": "secret-name", "namespace": "ns",
			"labels": map[string]any{"app": "web", "who": dryrun.Redacted, "other": "kept"}},
		"spec": map[string]any{"literal": "as-written", "count": int64(3), "replicas": dryrun.Redacted,
			"list": []any{dryrun.Redacted, dryrun.Redacted}, "nested": map[string]any{"deep": dryrun.Redacted, "sibling": "kept"},
			"copy": dryrun.Redacted, "mention": "the value is " + dryrun.Redacted + " here", "untouched": "kept"}}
	d := &objectTemplate{object: resolved, name: "secret-name", namespace: "ns"}

	t.Run("object template", func(t *testing.T) {
		obj := shown()
		(&plannedObjects{sensitive: true, written: []byte(written)}).mask(obj, d)
		NewWithT(t).Expect(obj).To(Equal(masked))
	})
	t.Run("object-templates-raw", func(t *testing.T) {
		obj := shown()
		(&plannedObjects{sensitive: true, written: []byte("- {{ range }} as-written web"), fromRaw: true}).mask(obj, d)
		g := NewWithT(t)
		g.Expect(obj["metadata"]).To(Equal(map[string]any{"name": "secret-name", "namespace": "ns",
			"labels": map[string]any{"app": dryrun.Redacted, "who": dryrun.Redacted, "other": "kept"}}))
		g.Expect(obj["spec"]).To(HaveKeyWithValue("literal", dryrun.Redacted))
		g.Expect(obj["spec"]).To(HaveKeyWithValue("count", dryrun.Redacted))
		g.Expect(obj["spec"]).To(HaveKeyWithValue("untouched", "kept"))
	})
}
