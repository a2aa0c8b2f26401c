package vet

import (
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// defaultChecker is a Checker with the default options, built once:
// loading the CRD schemas is the slow part of a check.
var defaultChecker = sync.OnceValues(func() (*Checker, error) { return New(Options{}) })

// findingCase is one input of a check's table test and every finding it
// must give, whole (Finding.String), in order; none when want is empty.
type findingCase struct {
	name string
	yaml string
	want []string
}

// runFindingCases parses each case's YAML as f.yaml, checks it with the
// default options and compares the findings, file, line, severity, check,
// object and message included.
func runFindingCases(t *testing.T, cases []findingCase) {
	t.Helper()
	checker, err := defaultChecker()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			docs, parseFindings := Parse("f.yaml", []byte(tc.yaml))
			g.Expect(parseFindings).To(BeEmpty())
			got := []string{}
			for _, f := range checker.Check(t.Context(), docs) {
				got = append(got, f.String())
			}
			want := append([]string{}, tc.want...)
			g.Expect(got).To(Equal(want))
		})
	}
}

// schemaCases: the object is checked against its CRD's schema, unknown
// fields, types, enums, required fields and CEL rules included.
var schemaCases = []findingCase{{
	name: "a document without apiVersion and kind is not an object",
	yaml: "metadata: {name: x}\n",
	want: []string{"f.yaml:1: error: [schema] not a Kubernetes object: apiVersion and kind are required"},
}, {
	name: "a version the CRD does not serve",
	yaml: `metadata: {name: p, namespace: policies}
apiVersion: policy.open-cluster-management.io/v1beta1
kind: Policy
`,
	want: []string{"f.yaml:2: error: [schema] Policy policies/p: version v1beta1 of Policy.policy.open-cluster-management.io is not served"},
}, {
	name: "a wrong type",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata: {name: p, namespace: policies}
spec:
  disabled: "yes"
  policy-templates: []
`,
	want: []string{`f.yaml:5: error: [schema] Policy policies/p: spec.disabled: Invalid value: "string": spec.disabled in body must be of type boolean: "string"`},
}, {
	name: "a missing required field and a too short list",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: PlacementBinding
metadata: {name: b, namespace: policies}
subjects: []
`,
	want: []string{
		"f.yaml:1: error: [schema] PlacementBinding policies/b: placementRef: Required value",
		"f.yaml:4: error: [schema] PlacementBinding policies/b: subjects: Invalid value: 0: subjects in body should have at least 1 items",
	},
}, {
	name: "an enum value of a policy template, at its line",
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
          remediationAction: sometimes
          object-templates: []
`,
	want: []string{`f.yaml:11: error: [schema] Policy policies/p policy-templates[0]: ConfigurationPolicy t: spec.remediationAction: ` +
		`Unsupported value: "sometimes": supported values: "Inform", "inform", "Enforce", "enforce"`},
}, {
	name: "a value holding a template is known once resolved",
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
          remediationAction: '{{hub "inform" hub}}'
          object-templates: []
`,
}, {
	name: "unknown metadata fields are left to the API server",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata: {name: p, namespace: policies, unknownField: 1}
spec: {policy-templates: []}
`,
}, {
	name: "CEL rules are skipped while the schema fails",
	yaml: `apiVersion: hierarchy.canopy.io/v1alpha1
kind: HierarchyPolicy
metadata: {name: h, namespace: c1}
spec:
  bogus: 1
  nodes:
    - {name: a, parent: a}
`,
	want: []string{
		"f.yaml:5: error: [schema] HierarchyPolicy c1/h: spec.bogus: Forbidden: " + unknownFieldDetail,
		"f.yaml:7: error: [hierarchy] HierarchyPolicy c1/h: node a: cycle a → a",
	},
}, {
	name: "kinds without a CRD in deploy/crds are not checked",
	yaml: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: x}\nspec: {anything: 1}\n",
}}

func TestSchemaFindings(t *testing.T) { runFindingCases(t, schemaCases) }

// nameLengthCases: namespace + name of a root Policy fit in 62 characters.
var nameLengthCases = []findingCase{{
	name: "62 characters fit",
	yaml: "apiVersion: policy.open-cluster-management.io/v1\nkind: Policy\nmetadata:\n  namespace: " + strings.Repeat("s", 30) +
		"\n  name: " + strings.Repeat("n", 32) + "\nspec: {policy-templates: []}\n",
}, {
	name: "63 characters do not",
	yaml: "apiVersion: policy.open-cluster-management.io/v1\nkind: Policy\nmetadata:\n  namespace: " + strings.Repeat("s", 30) +
		"\n  name: " + strings.Repeat("n", 33) + "\nspec: {policy-templates: []}\n",
	want: []string{"f.yaml:5: error: [name-length] Policy " + strings.Repeat("s", 30) + "/" + strings.Repeat("n", 33) +
		": the combined length of the policy namespace and name cannot exceed 62 characters: " + strings.Repeat("s", 30) + "/" +
		strings.Repeat("n", 33) + ` has 63 (the replica label value "<namespace>.<name>" must fit in 63 characters)`},
}, {
	name: "other kinds are not bound",
	yaml: "apiVersion: policy.open-cluster-management.io/v1\nkind: ConfigurationPolicy\nmetadata:\n  namespace: " +
		strings.Repeat("s", 30) + "\n  name: " + strings.Repeat("n", 40) + "\nspec: {object-templates: []}\n",
}}

func TestNameLengthFindings(t *testing.T) { runFindingCases(t, nameLengthCases) }

// collisionCases: two documents with one identity, or two templates of
// one kind and name in a Policy.
var collisionCases = []findingCase{{
	name: "a different object with the same identity replaces the first",
	yaml: `apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: a}
data: {k: one}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: a}
data: {k: two}
`,
	want: []string{"f.yaml:8: error: [collision] ConfigMap a/c: also declared at f.yaml:1: the later document would replace the earlier"},
}, {
	name: "another namespace, kind or group is another object; nameless ones are not compared",
	yaml: `apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: b}
---
apiVersion: v1
kind: Secret
metadata: {name: c, namespace: a}
---
apiVersion: example.com/v1
kind: ConfigMap
metadata: {name: c, namespace: a}
---
apiVersion: v1
kind: ConfigMap
metadata: {namespace: a, labels: {a: b}}
---
apiVersion: v1
kind: ConfigMap
metadata: {namespace: a}
`,
}, {
	name: "templates of one kind and name in a policy",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata: {name: p, namespace: policies}
spec:
  policy-templates:
    - objectDefinition: {apiVersion: policy.open-cluster-management.io/v1, kind: ConfigurationPolicy, metadata: {name: t}, spec: {object-templates: []}}
    - objectDefinition: {apiVersion: hierarchy.canopy.io/v1alpha1, kind: HierarchyPolicy, metadata: {name: t}}
    - objectDefinition:
        apiVersion: policy.open-cluster-management.io/v1
        kind: ConfigurationPolicy
        metadata:
          name: t
        spec: {object-templates: []}
`,
	want: []string{"f.yaml:12: error: [collision] Policy policies/p: template ConfigurationPolicy t is also policy-templates[0]: " +
		"template kinds and names must be unique in a policy"},
}}

func TestCollisionFindings(t *testing.T) { runFindingCases(t, collisionCases) }

// hierarchyCases: a HierarchyPolicy's tree as the syncer validates it,
// each problem at its node, cluster resource or spec.
var hierarchyCases = []findingCase{{
	name: "missing parents, duplicate nodes and cluster resources",
	yaml: `apiVersion: hierarchy.canopy.io/v1alpha1
kind: HierarchyPolicy
metadata: {name: h, namespace: c1}
spec:
  nodes:
    - {name: root}
    - {name: team, parent: org}
    - {name: root}
  clusterResources:
    - {apiVersion: v1, kind: Namespace, metadata: {name: x}}
    - {apiVersion: v1, kind: Namespace, metadata: {name: x}}
    - {kind: Namespace}
`,
	want: []string{
		"f.yaml:5: error: [hierarchy] HierarchyPolicy c1/h: node root is declared twice",
		"f.yaml:7: error: [hierarchy] HierarchyPolicy c1/h: node team: parent org is not a node",
		"f.yaml:11: error: [hierarchy] HierarchyPolicy c1/h: clusterResources[1]: Namespace x is declared twice",
		"f.yaml:12: error: [hierarchy] HierarchyPolicy c1/h: clusterResources[2]: apiVersion, kind and metadata.name are required",
	},
}, {
	name: "a reserved namespace",
	yaml: `apiVersion: hierarchy.canopy.io/v1alpha1
kind: HierarchyPolicy
metadata: {name: h, namespace: c1}
spec:
  nodes:
    - {name: org, abstract: true}
    - {name: kube-system}
`,
	want: []string{"f.yaml:7: error: [hierarchy] HierarchyPolicy c1/h: node kube-system: namespace kube-system is reserved"},
}, {
	name: "a generator's selector, at spec",
	yaml: `apiVersion: hierarchy.canopy.io/v1alpha1
kind: HierarchyPolicy
metadata: {name: h, namespace: c1}
spec:
  generators:
    - name: g
      data: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}
      namespaceSelector:
        matchExpressions:
          - {key: a, operator: In}
`,
	want: []string{"f.yaml:4: error: [hierarchy] HierarchyPolicy c1/h: generator g: namespaceSelector: values: Invalid value: null: " +
		"for 'in', 'notin' operators, values set can't be empty"},
}, {
	name: "a valid tree",
	yaml: `apiVersion: hierarchy.canopy.io/v1alpha1
kind: HierarchyPolicy
metadata: {name: h, namespace: c1}
spec:
  nodes:
    - {name: org, abstract: true}
    - {name: team-a, parent: org}
    - {name: team-b, parent: org}
  clusterResources:
    - {apiVersion: v1, kind: Namespace, metadata: {name: x}}
`,
}}

func TestHierarchyFindings(t *testing.T) { runFindingCases(t, hierarchyCases) }

// subNamespaceCases: SubNamespaces and parent-labelled Namespaces whose
// parents lead back to themselves.
var subNamespaceCases = []findingCase{{
	name: "two SubNamespaces each other's parent",
	yaml: `apiVersion: hierarchy.canopy.io/v1alpha1
kind: SubNamespace
metadata: {name: a, namespace: b}
---
apiVersion: hierarchy.canopy.io/v1alpha1
kind: SubNamespace
metadata: {name: b, namespace: a}
`,
	want: []string{
		"f.yaml:3: error: [hierarchy] SubNamespace b/a: namespace hierarchy cycle (child → parent): a → b → a",
		"f.yaml:7: error: [hierarchy] SubNamespace a/b: namespace hierarchy cycle (child → parent): b → a → b",
	},
}, {
	name: "a Namespace's parent label closes the cycle",
	yaml: `apiVersion: v1
kind: Namespace
metadata:
  name: a
  labels: {hierarchy.canopy.io/parent: c}
---
apiVersion: hierarchy.canopy.io/v1alpha1
kind: SubNamespace
metadata: {name: c, namespace: b}
---
apiVersion: hierarchy.canopy.io/v1alpha1
kind: SubNamespace
metadata: {name: b, namespace: a}
`,
	want: []string{
		"f.yaml:3: error: [hierarchy] Namespace a: namespace hierarchy cycle (child → parent): a → c → b → a",
		"f.yaml:9: error: [hierarchy] SubNamespace b/c: namespace hierarchy cycle (child → parent): c → b → a → c",
		"f.yaml:13: error: [hierarchy] SubNamespace a/b: namespace hierarchy cycle (child → parent): b → a → c → b",
	},
}, {
	name: "a chain is not a cycle",
	yaml: `apiVersion: v1
kind: Namespace
metadata:
  name: a
  labels: {other: c}
---
apiVersion: hierarchy.canopy.io/v1alpha1
kind: SubNamespace
metadata: {name: b, namespace: a}
---
apiVersion: hierarchy.canopy.io/v1alpha1
kind: SubNamespace
metadata: {name: c, namespace: b}
`,
}}

func TestSubNamespaceCycleFindings(t *testing.T) { runFindingCases(t, subNamespaceCases) }
