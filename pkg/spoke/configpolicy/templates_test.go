package configpolicy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// clusterClaim creates a ClusterClaim (cluster-scoped, so named after the
// test's namespace) and deletes it when the test ends.
func (f *fixture) clusterClaim(name, value string) {
	f.t.Helper()
	claim := &unstructured.Unstructured{}
	claim.SetAPIVersion("cluster.open-cluster-management.io/v1alpha1")
	claim.SetKind("ClusterClaim")
	claim.SetName(name)
	f.g.Expect(unstructured.SetNestedField(claim.Object, value, "spec", "value")).To(Succeed())
	f.g.Expect(f.c.Create(f.t.Context(), claim)).To(Succeed())
	f.t.Cleanup(func() { _ = f.c.Delete(context.Background(), claim) })
}

// condition returns a function that gets the compliance, the condition
// reason and the message of object template i of ConfigurationPolicy name.
func (f *fixture) condition(name string, i int) func(Gomega) string {
	return func(g Gomega) string {
		st := f.status(name)(g)
		if len(st.CompliancyDetails) <= i || len(st.CompliancyDetails[i].Conditions) == 0 {
			return string(st.ComplianceState)
		}
		c := st.CompliancyDetails[i].Conditions[0]
		return string(st.CompliancyDetails[i].ComplianceState) + " (" + c.Reason + "): " + c.Message
	}
}

// TestTemplateFromClusterClaim enforces a ConfigMap whose name and data
// come from a ClusterClaim, and lists it by its resolved name.
func TestTemplateFromClusterClaim(t *testing.T) {
	f := newFixture(t)
	claim := f.ns + ".color"
	f.clusterClaim(claim, "blue")
	f.policy(`
metadata: {name: claims}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: 'cm-{{ fromClusterClaim "` + claim + `" }}', namespace: $NS}
      data: {color: '{{ fromClusterClaim "` + claim + `" }}', literal: plain}`)
	f.g.Eventually(f.configMap(f.ns, "cm-blue"), eventually, poll).Should(Equal(map[string]string{"color": "blue", "literal": "plain"}))
	f.g.Eventually(f.message("claims"), eventually, poll).Should(Equal("Compliant: configmaps [cm-blue] found as specified in namespace " + f.ns))
	st := f.status("claims")(f.g)
	f.g.Expect(st.RelatedObjects).To(HaveLen(1))
	f.g.Expect(st.RelatedObjects[0].Object.Metadata).To(Equal(policyv1.ObjectMetadata{Name: "cm-blue", Namespace: f.ns}))
}

// TestTemplateRaw enforces object-templates-raw whose range loop yields a
// ConfigMap per name, with data read from a ConfigMap, and follows that
// ConfigMap when it changes: the watch re-evaluates the policy.
func TestTemplateRaw(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: source}, data: {size: small}}`)
	f.policy(`
metadata: {name: raw}
spec:
  remediationAction: enforce
  object-templates-raw: |
    {{- range $name := list "one" "two" }}
    - complianceType: musthave
      objectDefinition:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: 'raw-{{ $name }}', namespace: $NS}
        data:
          size: '{{ fromConfigMap "$NS" "source" "size" }}'
    {{- end }}`)
	for _, name := range []string{"raw-one", "raw-two"} {
		f.g.Eventually(f.configMap(f.ns, name), eventually, poll).Should(Equal(map[string]string{"size": "small"}))
	}
	f.g.Eventually(f.status("raw"), eventually, poll).Should(HaveField("ComplianceState", policyv1.Compliant))
	f.g.Expect(f.status("raw")(f.g).CompliancyDetails).To(HaveLen(2))

	f.patchConfigMap("source", map[string]string{"size": "large"})
	for _, name := range []string{"raw-one", "raw-two"} {
		f.g.Eventually(f.configMap(f.ns, name), quiet, poll/2).Should(Equal(map[string]string{"size": "large"}))
	}
}

// TestTemplateNamespaceSelector resolves a template once per namespace
// the namespaceSelector chooses, with .ObjectNamespace.
func TestTemplateNamespaceSelector(t *testing.T) {
	f := newFixture(t)
	f.namespaces(map[string]map[string]string{"a": {"tier": "web"}, "b": {"tier": "web"}, "c": {"tier": "db"}})
	f.policy(`
metadata: {name: per-ns}
spec:
  remediationAction: enforce
  namespaceSelector: {include: ["$NS-*"], matchLabels: {tier: web}}
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: 'where-{{ .ObjectNamespace | replace "$NS-" "" }}'}
      data: {namespace: '{{ .ObjectNamespace }}'}`)
	f.g.Eventually(f.condition("per-ns", 0), eventually, poll).Should(HavePrefix("Compliant"))
	f.g.Eventually(f.configMap(f.ns+"-a", "where-a"), eventually, poll).Should(Equal(map[string]string{"namespace": f.ns + "-a"}))
	f.g.Eventually(f.configMap(f.ns+"-b", "where-b"), eventually, poll).Should(Equal(map[string]string{"namespace": f.ns + "-b"}))
	f.g.Eventually(f.message("per-ns"), eventually, poll).Should(Equal(fmt.Sprintf(
		"Compliant: configmaps [where-a] found as specified in namespace %[1]s-a; "+
			"configmaps [where-b] found as specified in namespace %[1]s-b", f.ns)))
	f.g.Expect(f.configMap(f.ns+"-c", "where-c")(f.g)).To(BeNil())
}

// TestTemplateObjectSelector resolves a template once per object its
// objectSelector selects, with .ObjectName and .Object, and skips the
// object for which the template calls skipObject.
func TestTemplateObjectSelector(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"app-a", "app-b", "skip-me"} {
		f.object(&corev1.ConfigMap{}, `{metadata: {name: `+name+`, labels: {app: web}}, data: {version: "`+name+`-1"}}`)
	}
	f.object(&corev1.ConfigMap{}, `{metadata: {name: other}, data: {version: "x"}}`)
	f.policy(`
metadata: {name: selected}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectSelector: {matchLabels: {app: web}}
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {namespace: $NS}
      data:
        owner: '{{ if eq .ObjectName "skip-me" }}{{ skipObject }}{{ end }}{{ .ObjectName }}'
        was: '{{ .Object.data.version }}'`)
	for _, name := range []string{"app-a", "app-b"} {
		f.g.Eventually(f.configMap(f.ns, name), eventually, poll).Should(Equal(map[string]string{
			"version": name + "-1", "owner": name, "was": name + "-1"}))
	}
	f.g.Eventually(f.message("selected"), eventually, poll).Should(Equal(
		"Compliant: configmaps [app-a, app-b] found as specified in namespace " + f.ns))
	f.g.Expect(f.configMap(f.ns, "skip-me")(f.g)).To(Equal(map[string]string{"version": "skip-me-1"}))
	f.g.Expect(f.configMap(f.ns, "other")(f.g)).To(Equal(map[string]string{"version": "x"}))
}

// TestTemplateSkipAll checks that an object template whose every object
// calls skipObject complies, with OCM's message.
func TestTemplateSkipAll(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: skipped}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: never, namespace: $NS}
      data: {k: '{{ skipObject true }}'}`)
	f.g.Eventually(f.message("skipped"), eventually, poll).Should(Equal(
		"Compliant: All objects of kind ConfigMap were skipped by the `skipObject` template function"))
	f.g.Expect(f.configMap(f.ns, "never")(f.g)).To(BeNil())
}

// TestTemplateErrors checks that templates that do not resolve are
// NonCompliant with OCM's reason and the error, write nothing, and are not
// evaluated again until something changes: a syntax error waits for the
// policy, a missing ConfigMap for its watch.
func TestTemplateErrors(t *testing.T) {
	for _, tt := range []struct {
		name, value, want string
	}{
		{name: "syntax", value: `{{ fromConfigMap "$NS" "source" "k" }`,
			want: `failed to parse the template JSON string {"apiVersion":"v1","data":{"k":"{{ fromConfigMap \"$NS\" ` +
				`\"source\" \"k\" }"},"kind":"ConfigMap","metadata":{"name":"target","namespace":"$NS"}}: ` +
				`template: tmpl:3: unexpected "}" in operand`},
		{name: "unknown function", value: `{{ fromConfigMapp "$NS" "source" "k" }}`,
			want: `failed to parse the template JSON string {"apiVersion":"v1","data":{"k":"{{ fromConfigMapp \"$NS\" ` +
				`\"source\" \"k\" }}"},"kind":"ConfigMap","metadata":{"name":"target","namespace":"$NS"}}: ` +
				`template: tmpl:3: function "fromConfigMapp" not defined`},
		{name: "missing configmap", value: `{{ fromConfigMap "$NS" "source" "k" }}`,
			want: `failed to resolve the template {"apiVersion":"v1","data":{"k":"{{ fromConfigMap \"$NS\" \"source\" ` +
				`\"k\" }}"},"kind":"ConfigMap","metadata":{"name":"target","namespace":"$NS"}}: template: tmpl:3:9: ` +
				`executing "tmpl" at <fromConfigMap "$NS" "source" "k">: error calling fromConfigMap: failed getting ` +
				`the ConfigMap source from $NS: configmaps "source" not found`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			value := strings.ReplaceAll(tt.value, "$NS", f.ns)
			f.policy(`
metadata: {name: bad}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: target, namespace: $NS}, data: {k: '` + value + `'}}`)
			want := "NonCompliant (Error processing template): " + strings.ReplaceAll(tt.want, "$NS", f.ns)
			f.g.Eventually(f.condition("bad", 0), eventually, poll).Should(Equal(want))
			settled := f.status("bad")(f.g)
			f.g.Consistently(f.status("bad"), quiet, poll).Should(Equal(settled), "evaluated again")
			f.g.Expect(f.events()(f.g)).To(Equal([]string{"NonCompliant; violation - " + strings.ReplaceAll(tt.want, "$NS", f.ns)}))
			f.g.Expect(f.configMap(f.ns, "target")(f.g)).To(BeNil())
			if tt.name == "missing configmap" {
				f.object(&corev1.ConfigMap{}, `{metadata: {name: source}, data: {k: found}}`)
				f.g.Eventually(f.configMap(f.ns, "target"), quiet, poll/2).Should(Equal(map[string]string{"k": "found"}))
			}
		})
	}
}

// TestTemplateSecretValues checks that values read from a Secret reach the
// object and nothing else: not a compliance message (the API server's
// error quotes the invalid label value), not a diff, not an event.
func TestTemplateSecretValues(t *testing.T) {
	f := newFixture(t)
	const secret = "s3cr3t value!"
	f.object(&corev1.Secret{}, `{metadata: {name: creds}, stringData: {password: "`+secret+`"}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: copy}, data: {password: old}}`)
	f.policy(`
metadata: {name: secrets}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    recordDiff: InStatus
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: copy, namespace: $NS}
      data: {password: '{{ fromSecret "$NS" "creds" "password" | base64dec }}'}`)
	f.policy(`
metadata: {name: label}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: labelled, namespace: $NS, labels: {password: '{{ fromSecret "$NS" "creds" "password" | base64dec }}'}}`)
	f.g.Eventually(f.message("secrets"), eventually, poll).Should(Equal(
		"NonCompliant: configmaps [copy] found but not as specified in namespace " + f.ns))
	f.g.Eventually(f.message("label"), eventually, poll).Should(HavePrefix(
		"NonCompliant: configmaps [labelled] in namespace " + f.ns + " is missing, and cannot be created"))
	f.g.Expect(f.message("label")(f.g)).To(ContainSubstring(`Invalid value: "[redacted]"`))
	st := f.status("secrets")(f.g)
	f.g.Expect(st.RelatedObjects[0].Properties.Diff).To(Equal(redactedDiff))
	f.expectNowhere(secret, base64.StdEncoding.EncodeToString([]byte(secret)))
}

// expectNowhere checks that no ConfigurationPolicy status and no event of
// the test's namespace holds any of values.
func (f *fixture) expectNowhere(values ...string) {
	f.t.Helper()
	policies := &policyv1.ConfigurationPolicyList{}
	f.g.Expect(f.c.List(f.t.Context(), policies, client.InNamespace(f.ns))).To(Succeed())
	events := &corev1.EventList{}
	f.g.Expect(f.c.List(f.t.Context(), events, client.InNamespace(f.ns))).To(Succeed())
	for _, obj := range []any{policies.Items, events.Items} {
		out, err := json.Marshal(obj)
		f.g.Expect(err).NotTo(HaveOccurred())
		for _, v := range values {
			f.g.Expect(string(out)).NotTo(ContainSubstring(v))
		}
	}
}

// protect encrypts value as the hub's "protect" does, with key and iv.
func protect(t *testing.T, key, iv []byte, value string) string {
	t.Helper()
	cfg := suite.Get(t).Config
	dyn, err := dynamic.NewForConfig(cfg)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	lib, err := templates.NewResolverWithClients(dyn, dc, templates.Config{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	res, err := lib.ResolveTemplate([]byte(`{"v": "{{ \"`+value+`\" | protect }}"}`), nil, &templates.ResolveOptions{
		EncryptionConfig: templates.EncryptionConfig{AESKey: key, InitializationVector: iv, EncryptionEnabled: true}})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var out map[string]string
	NewWithT(t).Expect(json.Unmarshal(res.ResolvedJSON, &out)).To(Succeed())
	return out["v"]
}

// TestTemplateDecrypt enforces a ConfigMap whose value the hub encrypted:
// without the key Secret the policy is NonCompliant and nothing is
// written; once the Secret appears the value is decrypted, and never
// shown anywhere else.
func TestTemplateDecrypt(t *testing.T) {
	f := newFixture(t)
	key, iv := []byte("0123456789abcdef0123456789abcdef"), []byte("fedcba9876543210")
	const plain = "hunter2-decrypted"
	encrypted := protect(t, key, iv, plain)
	f.g.Expect(encrypted).To(HavePrefix(encryptedPrefix))
	f.policy(`
metadata:
  name: decrypt
  annotations: {` + templating.IVAnnotation + `: ` + base64.StdEncoding.EncodeToString(iv) + `}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: decrypted, namespace: $NS}, data: {v: '` + encrypted + `'}}`)
	f.g.Eventually(f.condition("decrypt", 0), eventually, poll).Should(Equal(
		"NonCompliant (Template encryption configuration error): failed to get the encryption key from Secret " +
			f.ns + `/policy-encryption-key: secrets "policy-encryption-key" not found`))
	f.g.Consistently(f.configMap(f.ns, "decrypted"), quiet, poll).Should(BeNil())

	keySecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: templating.EncryptionKeySecret, Namespace: f.ns},
		Data: map[string][]byte{templating.EncryptionKeyField: key}}
	f.g.Expect(f.c.Create(t.Context(), keySecret)).To(Succeed())
	f.g.Eventually(f.configMap(f.ns, "decrypted"), eventually, poll).Should(Equal(map[string]string{"v": plain}))
	f.g.Eventually(f.message("decrypt"), eventually, poll).Should(Equal(
		"Compliant: configmaps [decrypted] found as specified in namespace " + f.ns))
	f.expectNowhere(plain)
}

// TestTemplateDecryptWithoutIV checks that an encrypted value without the
// policy's initialization vector is never applied as it is.
func TestTemplateDecryptWithoutIV(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: no-iv}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: nope, namespace: $NS}, data: {v: '$ocm_encrypted:AAAA'}}`)
	f.g.Eventually(f.condition("no-iv", 0), eventually, poll).Should(Equal(
		"NonCompliant (Template encryption configuration error): the policy holds encrypted values but has no " +
			`"policy.open-cluster-management.io/encryption-iv" annotation to decrypt them with`))
	f.g.Expect(f.configMap(f.ns, "nope")(f.g)).To(BeNil())
}

// TestTemplatesDisabled checks that the disable-templates annotation
// leaves "{{" as literal text.
func TestTemplatesDisabled(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata:
  name: literal
  annotations: {` + templating.DisableTemplatesAnnotation + `: "true"}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: literal, namespace: $NS}, data: {v: '{{ "x" }}'}}`)
	f.g.Eventually(f.configMap(f.ns, "literal"), eventually, poll).Should(Equal(map[string]string{"v": `{{ "x" }}`}))
}

// TestTemplateDryRun plans a policy with templates on the live cluster:
// the actions name the resolved objects, a template error is its action's
// reason, and no Secret value appears in the plan.
func TestTemplateDryRun(t *testing.T) {
	f := newFixture(t)
	const secret = "plan-s3cr3t value!"
	f.object(&corev1.Secret{}, `{metadata: {name: creds}, stringData: {password: "`+secret+`"}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: names}, data: {name: resolved-name}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: existing}, data: {password: old}}`)
	policy := &policyv1.ConfigurationPolicy{}
	f.g.Expect(yaml.UnmarshalStrict([]byte(strings.ReplaceAll(`
metadata: {name: plan, namespace: $NS}
spec:
  remediationAction: inform
  object-templates:
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: '{{ fromConfigMap "$NS" "names" "name" }}', namespace: $NS}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: existing, namespace: $NS}, data: {password: '{{ fromSecret "$NS" "creds" "password" | base64dec }}'}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: $NS}, data: {k: '{{ nope }}'}}
`, "$NS", f.ns)), policy)).To(Succeed())
	actions, err := DryRun(t.Context(), suite.Get(t).Config, policy)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(actions).To(HaveLen(3))
	f.g.Expect(actions[0]).To(And(HaveField("Op", OpCreate), HaveField("Name", "resolved-name"), HaveField("Namespace", f.ns)))
	f.g.Expect(actions[1]).To(And(HaveField("Op", OpUpdate), HaveField("Name", "existing")))
	f.g.Expect(actions[2]).To(And(HaveField("Op", OpNoncompliant),
		HaveField("Reason", ContainSubstring(`function "nope" not defined`))))
	out, err := json.Marshal(actions)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(string(out)).NotTo(Or(ContainSubstring(secret), ContainSubstring(base64.StdEncoding.EncodeToString([]byte(secret)))))
	f.g.Expect(f.configMap(f.ns, "resolved-name")(f.g)).To(BeNil())
	cm := &corev1.ConfigMap{}
	f.g.Expect(f.c.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: "existing"}, cm)).To(Succeed())
	f.g.Expect(cm.Data).To(Equal(map[string]string{"password": "old"}))
}

// TestTemplateInterval resolves the templates of a policy that is not
// watched (evaluationInterval durations) straight from the API server, at
// each evaluation.
func TestTemplateInterval(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: source}, data: {size: small}}`)
	f.policy(`
metadata: {name: periodic}
spec:
  remediationAction: enforce
  evaluationInterval: {compliant: 2s, noncompliant: 2s}
  object-templates:
  - complianceType: musthave
    objectDefinition:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: target, namespace: $NS}
      data: {size: '{{ fromConfigMap "$NS" "source" "size" }}'}`)
	f.g.Eventually(f.configMap(f.ns, "target"), eventually, poll).Should(Equal(map[string]string{"size": "small"}))
	f.patchConfigMap("source", map[string]string{"size": "large"})
	f.g.Eventually(f.configMap(f.ns, "target"), eventually, poll).Should(Equal(map[string]string{"size": "large"}))
}
