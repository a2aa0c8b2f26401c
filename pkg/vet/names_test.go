package vet

import "testing"

// nameCases: names and namespaces the API server would refuse, by kind.
var nameCases = []findingCase{{
	name: "a Namespace's name is a label, a ConfigMap's a subdomain",
	yaml: `apiVersion: v1
kind: Namespace
metadata: {name: team.a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: team.a, namespace: x}
`,
	want: []string{`f.yaml:3: error: [name] Namespace team.a: metadata.name: Invalid value: "team.a": must not contain dots`},
}, {
	name: "RBAC names are path segments",
	yaml: `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:controller:x"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  namespace: x
  name: "a/b"
`,
	want: []string{`f.yaml:9: error: [name] Role x/a/b: metadata.name: Invalid value: "a/b": may not contain '/'`},
}, {
	name: "a Service's name is a DNS-1035 label",
	yaml: "apiVersion: v1\nkind: Service\nmetadata: {name: web.a, namespace: x}\n",
	want: []string{`f.yaml:3: error: [name] Service x/web.a: metadata.name: Invalid value: "web.a": a DNS-1035 label must consist of ` +
		`lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character ` +
		`(e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`},
}, {
	name: "names holding a template are checked once resolved",
	yaml: `apiVersion: v1
kind: Service
metadata: {name: "{{ .Name }}", namespace: "{{ .NS }}"}
`,
}, {
	name: "a policy template's name",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata: {name: p, namespace: policies}
spec:
  policy-templates:
    - objectDefinition:
        apiVersion: policy.open-cluster-management.io/v1
        kind: ConfigurationPolicy
        metadata:
          name: Bad
        spec: {object-templates: []}
`,
	want: []string{`f.yaml:10: error: [name] Policy policies/p policy-templates[0]: ConfigurationPolicy Bad: metadata.name: ` +
		`Invalid value: "Bad": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', ` +
		`and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is ` +
		`'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
}, {
	name: "object-templates of other kinds than ConfigurationPolicy are not objects",
	yaml: `apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: x}
spec:
  object-templates:
    - objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: Bad_Name}}
`,
}}

func TestNameFindings(t *testing.T) { runFindingCases(t, nameCases) }

// supportCases: what Canopy supports gives no warning.
var supportCases = []findingCase{{
	name: "the kinds Canopy serves and evaluates",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: PlacementBinding
metadata: {name: b, namespace: policies}
placementRef: {apiGroup: cluster.open-cluster-management.io, kind: Placement, name: all}
subjects:
  - {apiGroup: policy.open-cluster-management.io, kind: Policy, name: p}
---
apiVersion: policy.open-cluster-management.io/v1beta1
kind: PolicySet
metadata: {name: s, namespace: policies}
spec: {policies: [p]}
---
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: c, namespace: cluster1}
spec: {object-templates: []}
---
apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata: {name: p, namespace: policies}
spec:
  policy-templates:
    - objectDefinition: {apiVersion: policy.open-cluster-management.io/v1, kind: ConfigurationPolicy, metadata: {name: t}, spec: {object-templates: []}}
    - objectDefinition: {apiVersion: hierarchy.canopy.io/v1alpha1, kind: HierarchyPolicy, metadata: {name: h}, spec: {}}
`,
}, {
	name: "an unsupported kind of another group",
	yaml: "apiVersion: example.com/v1\nkind: OperatorPolicy\nmetadata: {name: o, namespace: x}\n",
}}

func TestSupportFindings(t *testing.T) { runFindingCases(t, supportCases) }

// templateCheckCases complete the fixtures of testdata/templates.
var templateCheckCases = []findingCase{{
	name: "an unclosed hub template outside a Policy is quoted to the end of its line",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: c, namespace: cluster1}
spec:
  object-templates: []
  customMessage: {compliant: "{{hub .ManagedClusterName"}
`,
	want: []string{
		`f.yaml:6: error: [template] ConfigurationPolicy cluster1/c: hub template "{{hub .ManagedClusterName" outside a Policy: ` +
			`the hub resolves hub templates only in a Policy's policy-templates, and the managed cluster cannot resolve it`,
	},
}, {
	name: "{{ hub is read as a function",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: c, namespace: cluster1}
spec:
  object-templates:
    - complianceType: musthave
      objectDefinition:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: c, namespace: x}
        data: {a: '{{ hub .ManagedClusterName }}'}
`,
	want: []string{`f.yaml:11: error: [template] ConfigurationPolicy cluster1/c: managed template: function "hub" not defined: ` +
		`"{{hub" is read as "{{" followed by "hub"; a hub template is "{{hub ... hub}}"`},
}, {
	name: "object-templates-raw has no context",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: c, namespace: cluster1}
spec:
  object-templates-raw: |
    {{ template "x" .Anything }}
`,
	want: []string{`f.yaml:6: error: [template] ConfigurationPolicy cluster1/c: object-templates-raw template: ` +
		`no field .Anything: object-templates-raw template is resolved without context`},
}, {
	name: "disable-templates on a Policy turns its hub templates off",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata:
  name: p
  namespace: policies
  annotations: {policy.open-cluster-management.io/disable-templates: "True"}
spec:
  policy-templates:
    - objectDefinition:
        apiVersion: policy.open-cluster-management.io/v1
        kind: ConfigurationPolicy
        metadata: {name: t}
        spec:
          object-templates: []
          customMessage: {compliant: '{{hub nope hub}}'}
`,
}, {
	name: "disable-templates must be a boolean",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata:
  name: p
  namespace: policies
  annotations: {policy.open-cluster-management.io/disable-templates: "yes"}
spec:
  policy-templates:
    - objectDefinition:
        apiVersion: policy.open-cluster-management.io/v1
        kind: ConfigurationPolicy
        metadata: {name: t}
        spec:
          object-templates: []
          customMessage: {compliant: '{{hub nope hub}}'}
`,
	want: []string{`f.yaml:15: error: [template] Policy policies/p policy-templates[0]: ConfigurationPolicy t: hub template: function "nope" not defined`},
}}

func TestTemplateCheckFindings(t *testing.T) { runFindingCases(t, templateCheckCases) }
