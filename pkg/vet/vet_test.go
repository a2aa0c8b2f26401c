package vet

import (
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// checkCases are the cases of TestCheck.
var checkCases = []struct {
	name string
	yaml string
	// want are "line check substring" of the expected findings, in order.
	want []string
}{{
	name: "valid policy",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata: {name: ok, namespace: policies}
spec:
  policy-templates:
    - objectDefinition:
        apiVersion: policy.open-cluster-management.io/v1
        kind: ConfigurationPolicy
        metadata: {name: ok}
        spec:
          object-templates:
            - {complianceType: musthave, objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: x}}}
`,
}, {
	name: "unknown field in a template points at its line",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata: {name: p, namespace: policies}
spec:
  policy-templates:
    - objectDefinition:
        apiVersion: policy.open-cluster-management.io/v1
        kind: ConfigurationPolicy
        metadata: {name: t}
        spec:
          object-templates: []
          remediation: enforce
`,
	want: []string{"12 schema spec.remediation: Forbidden: unknown field"},
}, {
	name: "name length counts the default namespace",
	yaml: "apiVersion: policy.open-cluster-management.io/v1\nkind: Policy\nmetadata:\n  name: " + strings.Repeat("n", 56) +
		"\nspec: {policy-templates: []}\n",
	want: []string{"4 name-length (namespace default assumed)"},
}, {
	name: "replicas are exempt from the name length",
	yaml: "apiVersion: policy.open-cluster-management.io/v1\nkind: Policy\nmetadata:\n  name: " + strings.Repeat("n", 55) +
		"\n  labels: {policy.open-cluster-management.io/root-policy: x.y}\nspec: {policy-templates: []}\n",
}, {
	name: "CEL rule of a CRD",
	yaml: `apiVersion: hierarchy.canopy.io/v1alpha1
kind: HierarchyPolicy
metadata: {name: h, namespace: c1}
spec:
  nodes:
    - {name: a, parent: a}
`,
	want: []string{"6 hierarchy node a: cycle a → a", "6 schema a node cannot be its own parent"},
}, {
	name: "identical duplicates are a warning",
	yaml: "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n",
	want: []string{"7 collision identical, so harmless"},
}, {
	name: "unknown kinds are not schema-checked",
	yaml: "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {anything: 1}\n",
}}

func TestCheck(t *testing.T) {
	checker, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range checkCases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			docs, findings := Parse("f.yaml", []byte(tc.yaml))
			g.Expect(findings).To(BeEmpty())
			findings = checker.Check(t.Context(), docs)
			g.Expect(findings).To(HaveLen(len(tc.want)), "%v", findings)
			for i, want := range tc.want {
				line, rest, _ := strings.Cut(want, " ")
				check, substr, _ := strings.Cut(rest, " ")
				g.Expect(findings[i].String()).To(HavePrefix("f.yaml:" + line + ": "))
				g.Expect(findings[i].Check).To(Equal(check))
				g.Expect(findings[i].Message).To(ContainSubstring(substr))
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		docs     int
		findings []string
	}{
		{name: "empty documents are skipped", yaml: "---\n# only a comment\n---\n", docs: 0},
		{name: "two documents", yaml: "a: 1\n---\nb: 2\n", docs: 2},
		{name: "syntax error with its line", yaml: "a: 1\nb: [\n", findings: []string{"f.yaml:2: error: [parse] line 2: did not find expected node content"}},
		{name: "a scalar is not an object", yaml: "hello\n", findings: []string{"f.yaml:1: error: [parse] not a Kubernetes object: a YAML scalar"}},
		{name: "non-string keys", yaml: "? [a]\n: 1\n", findings: []string{"f.yaml:1: error: [parse]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			docs, findings := Parse("f.yaml", []byte(tc.yaml))
			g.Expect(docs).To(HaveLen(tc.docs))
			g.Expect(findings).To(HaveLen(len(tc.findings)))
			for i, want := range tc.findings {
				g.Expect(findings[i].String()).To(HavePrefix(want))
			}
		})
	}
}

func TestLineOf(t *testing.T) {
	docs, _ := Parse("f.yaml", []byte(`metadata:
  labels:
    a.b/c: x
spec:
  list:
    - name: zero
    - name: one
      deep: {x: 1}
`))
	g := NewWithT(t)
	d := docs[0]
	g.Expect(d.LineOf("metadata.labels[a.b/c]")).To(Equal(3))
	g.Expect(d.LineOf("spec.list[1].deep.x")).To(Equal(8))
	g.Expect(d.LineOf("spec.list[1].missing")).To(Equal(7), "falls back to the nearest ancestor")
	g.Expect(d.LineOf("spec.list[9]")).To(Equal(5))
	g.Expect(d.LineOf("")).To(Equal(1))
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("- 1\n---\n? [a]\n: b\n"))
	f.Add([]byte("a: !!binary aGVsbG8=\nb: 2001-12-14t21:59:43.10-05:00\n"))
	for _, file := range []string{"valid", "syntax", "context"} {
		data, err := os.ReadFile("testdata/templates/" + file + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	checker, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, findings := Parse("f.yaml", data)
		for _, fd := range findings {
			if fd.Line < 0 || fd.Check != CheckParse {
				t.Fatalf("bad finding %v", fd)
			}
		}
		for _, d := range docs {
			if d.Object == nil || d.LineOf("spec.x[0].y") < 1 {
				t.Fatalf("document without object or line: %+v", d)
			}
		}
		_ = checker.Check(t.Context(), docs) // must not panic
	})
}
