package vet

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	yaml "go.yaml.in/yaml/v3"

	"github.com/canopy-policy/canopy/pkg/templating"
)

// templateCases are the fixtures of testdata/templates and the findings
// each must give, in order, as "line severity check substring".
var templateCases = []struct {
	file string
	want []string
}{{
	file: "valid.yaml", // hub and managed templates, raw, protect, objectSelector, customMessage, spanning strings
}, {
	file: "syntax.yaml",
	want: []string{
		`21 error template hub template: unexpected "}" in operand`,
		`22 error template managed template: unexpected "}" in operand`,
		`39 error template object-templates-raw template: unexpected EOF (an if, range or with without {{ end }}?)`,
		`55 error template hub template: unclosed left paren`,
		`70 error template hub template: invalid syntax (the library reads this string converted to YAML, in single quotes, where ' becomes '')`,
	},
}, {
	file: "functions.yaml",
	want: []string{
		`15 error template customMessage template: function "fromSecret" not defined: customMessage templates have only the sprig functions`,
		`23 error template hub template: function "fromConfigmap" not defined (did you mean fromConfigMap?)`,
		`24 error template hub template: function "skipObject" not defined: skipObject exists only in the managed templates`,
		`25 error template managed template: protect works only in hub templates`,
		`26 error template managed template: function "toUpperCase" not defined`,
		`27 error template managed template: function "env" not defined: the template library always denies it`,
		`44 error template object-templates-raw template: function "skipObject" not defined`,
	},
}, {
	file: "context.yaml",
	want: []string{
		`21 error template hub template: .ObjectName is set only in managed templates of object-templates: write {{ .ObjectName }}`,
		`22 error template managed template: .ManagedClusterName is set only in hub templates: write {{hub .ManagedClusterName hub}}`,
		`23 error template managed template: no field .ClusterName in the context (it has .Object, .ObjectName, .ObjectNamespace)`,
		`24 error template managed template: .PolicyMetadata is set only in hub templates`,
		`25 error template hub template: fromClusterClaim reads the cluster its template is resolved on, here the hub, where hub templates may not read cluster-scoped objects`,
		`26 error template hub template: fromConfigMap of namespace "kube-system": the namespace argument is restricted to policies`,
		`27 error template hub template: lookup of namespace "openshift-config": the namespace argument is restricted to policies`,
		`51 error template object-templates-raw template: .ObjectName is not set in object-templates-raw`,
		`54 warning template hub template: getNodesWithExactRoles reads the cluster its template is resolved on, here the hub, not the managed cluster`,
	},
}, {
	file: "unsupported.yaml",
	want: []string{
		// The agent evaluates OperatorPolicy (line 10) and CertificatePolicy (line 33): no warning.
		// Nor of the Gatekeeper constraint (line 19): the agent creates it where Gatekeeper is
		// installed and reports Gatekeeper's audit, as OCM's framework addon does.
		`30 warning template "{{ fromClusterClaim \"name\" }}" is not resolved: a HierarchyPolicy is not templated on the managed cluster`,
		`47 warning unsupported PlacementBinding legacy refers to PlacementRule all-clusters, which Canopy does not support`,
		`61 warning template "{{ fromConfigMap \"default\" \"settings\" \"namespaces\" }}" is not resolved: the managed cluster resolves templates only in`,
		`69 error template hub template "{{hub .ManagedClusterName hub}}" outside a Policy`,
		`80 warning unsupported Canopy does not evaluate IamPolicy templates (it evaluates ConfigurationPolicy, CertificatePolicy, OperatorPolicy, HierarchyPolicy and Gatekeeper's ConstraintTemplates and constraints)`,
		`87 warning unsupported Canopy does not evaluate PolicyAutomation (it evaluates ConfigurationPolicy, CertificatePolicy, OperatorPolicy, HierarchyPolicy and Gatekeeper's ConstraintTemplates and constraints)`,
	},
}, {
	file: "names.yaml",
	want: []string{
		`4 error name metadata.name: Invalid value: "Bad_Policy": a lowercase RFC 1123 subdomain`,
		`5 error name metadata.namespace: Invalid value: "Policies": a lowercase RFC 1123 label`,
		`12 error name metadata.name: Invalid value: "config policy"`,
		`20 error name spec.object-templates[0].objectDefinition.metadata.name: Invalid value: "app_settings"`,
		`21 error name spec.object-templates[0].objectDefinition.metadata.namespace: Invalid value: "team.a": must not contain dots`,
		`27 error name spec.object-templates[1].objectDefinition.metadata.name: Invalid value: "team.b": must not contain dots`,
		`33 error name spec.object-templates[2].objectDefinition.metadata.name: Invalid value: "1-web": a DNS-1035 label`,
	},
}}

// TestTemplates checks every fixture of testdata/templates: the valid one
// gives no finding, each other the findings listed, at their lines.
func TestTemplates(t *testing.T) {
	checker, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("testdata/templates/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Expect(files).To(HaveLen(len(templateCases)), "every fixture has a case")
	for _, tc := range templateCases {
		t.Run(tc.file, func(t *testing.T) {
			g := NewWithT(t)
			data, err := os.ReadFile(filepath.Join("testdata/templates", tc.file))
			g.Expect(err).NotTo(HaveOccurred())
			docs, findings := Parse(tc.file, data)
			g.Expect(findings).To(BeEmpty())
			findings = checker.Check(t.Context(), docs)
			g.Expect(findings).To(HaveLen(len(tc.want)), "%v", findings)
			for i, want := range tc.want {
				if i >= len(findings) {
					break
				}
				fields := strings.SplitN(want, " ", 4)
				g.Expect(findings[i].String()).To(HavePrefix(tc.file+":"+fields[0]+": "+fields[1]+": ["+fields[2]+"] "), "%d", i)
				g.Expect(findings[i].Message).To(ContainSubstring(fields[3]))
			}
		})
	}
}

func TestTemplatesDefaultNamespace(t *testing.T) {
	g := NewWithT(t)
	policy := `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata: {name: p}
spec:
  policy-templates:
    - objectDefinition:
        apiVersion: policy.open-cluster-management.io/v1
        kind: ConfigurationPolicy
        metadata: {name: t}
        spec:
          object-templates:
            - complianceType: musthave
              objectDefinition:
                apiVersion: v1
                kind: ConfigMap
                metadata: {name: c, namespace: default}
                data: {a: '{{hub fromConfigMap "team-a" "c" "k" hub}}'}
`
	docs, _ := Parse("f.yaml", []byte(policy))
	for ns, want := range map[string]int{"team-a": 0, "team-b": 1} {
		checker, err := New(Options{DefaultNamespace: ns})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(checker.Check(t.Context(), docs)).To(HaveLen(want), "policy namespace %s (assumed)", ns)
	}
}

func TestUsesOf(t *testing.T) {
	tests := []struct {
		text string
		want []string // "f:function line args" or ".field line"
	}{
		{text: `{{ .A }}{{ .B.c }}`, want: []string{".A 1", ".B 1"}},
		{text: "{{ range .Items }}\n{{ .Name }}{{ $.Root }}{{ end }}{{ .After }}", want: []string{".Items 1", ".Root 2", ".After 2"}},
		{text: `{{ with .X }}{{ .Y }}{{ else }}{{ .Z }}{{ end }}`, want: []string{".X 1", ".Z 1"}},
		{text: `{{ if .X }}{{ .Y }}{{ end }}`, want: []string{".X 1", ".Y 1"}},
		{text: `{{ fromSecret "ns" "n" "k" | protect }}`, want: []string{"f:fromSecret 1 ns,n,k", "f:protect 1"}},
		{text: `{{ (lookup "v1" "Pod" .NS "x").metadata }}`, want: []string{"f:lookup 1 v1,Pod,,x", ".NS 1"}},
		{text: "{{ list now }}\n{{ define \"x\" }}{{ .Inner }}{{ end }}", want: []string{"f:list 1", "f:now 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			g := NewWithT(t)
			tmpl, err := templating.Managed.Parse("t", tc.text)
			g.Expect(err).NotTo(HaveOccurred())
			var got []string
			for _, u := range usesOf(tmpl) {
				s := "." + u.field + " " + strconv.Itoa(u.line)
				if u.function != "" {
					s = strings.TrimSpace("f:" + u.function + " " + strconv.Itoa(u.line) + " " + strings.Join(u.args, ","))
				}
				got = append(got, s)
			}
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestSiteLine(t *testing.T) {
	g := NewWithT(t)
	var root yaml.Node
	g.Expect(yaml.Unmarshal([]byte("a: |\n  one\n  two\n\nb: '{{ x }}'\nc: >\n  x\n  y\n"), &root)).To(Succeed())
	m := root.Content[0]
	g.Expect(siteLine(m.Content[1], 1)).To(Equal(2))
	g.Expect(siteLine(m.Content[1], 2)).To(Equal(3))
	g.Expect(siteLine(m.Content[1], 9)).To(Equal(3), "the end of a block scalar is its last line")
	g.Expect(siteLine(m.Content[3], 1)).To(Equal(5))
	g.Expect(siteLine(m.Content[5], 2)).To(Equal(7), "folded lines map to the first")
}

func TestSplitTemplateError(t *testing.T) {
	g := NewWithT(t)
	_, err := templating.Managed.Parse("t", "a\n\n{{ nope }}")
	line, msg := splitTemplateError(err)
	g.Expect(line).To(Equal(3))
	g.Expect(msg).To(Equal(`function "nope" not defined`))
}
