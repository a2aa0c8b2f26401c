package configpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// value decodes YAML as the API machinery decodes JSON (integers as int64).
func value(t testing.TB, doc string) any {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("YAML %q: %v", doc, err)
	}
	var v any
	if err := utiljson.Unmarshal(js, &v); err != nil {
		t.Fatalf("JSON %s: %v", js, err)
	}
	return v
}

func TestMatches(t *testing.T) {
	tests := []struct {
		name     string
		template string
		actual   string
		subset   bool
		exact    bool
	}{
		{name: "equal maps", template: "{a: 1, b: x}", actual: "{b: x, a: 1}", subset: true, exact: true},
		{name: "extra key", template: "{a: 1}", actual: "{a: 1, b: 2}", subset: true},
		{name: "missing key", template: "{a: 1, b: 2}", actual: "{a: 1}"},
		{name: "different scalar", template: "{a: 1}", actual: "{a: 2}"},
		{name: "nested extra key", template: "{data: {a: '1'}}", actual: "{data: {a: '1', b: '2'}}", subset: true},
		{name: "list of objects in another order", template: `
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list]}
- {apiGroups: [apps], resources: [deployments], verbs: [get]}`, actual: `
rules:
- {apiGroups: [apps], resources: [deployments], verbs: [get]}
- {apiGroups: [""], resources: [pods], verbs: [list, get]}`, subset: true, exact: true},
		{name: "list item is a subset of an item", template: "[{name: a, image: x}]",
			actual: "[{name: b}, {name: a, image: x, ports: [{containerPort: 80}]}]", subset: true},
		{name: "list item with a different value", template: "[{name: a, image: y}]", actual: "[{name: a, image: x}]"},
		{name: "duplicates need distinct partners", template: "[a, a]", actual: "[a]"},
		{name: "duplicates present", template: "[a, a]", actual: "[a, b, a]", subset: true},
		{name: "partners found by augmenting", template: "[{x: 1}, {x: 1, y: 2}]",
			actual: "[{x: 1, y: 2}, {x: 1, z: 3}]", subset: true},
		{name: "empty template list", template: "[]", actual: "[a]", subset: true},
		{name: "empty template list against nothing", template: "{l: []}", actual: "{}", subset: true, exact: true},
		{name: "zero values match missing fields", template: "{paused: false, replicas: 0, name: '', m: {}}",
			actual: "{}", subset: true, exact: true},
		{name: "zero value against a value", template: "{a: ''}", actual: "{a: x}"},
		{name: "null against a value", template: "{a: null}", actual: "{a: 1}"},
		{name: "null against nothing", template: "{a: null}", actual: "{b: 1}", subset: true},
		{name: "quantities", template: "{memory: 1Gi, cpu: 500m}", actual: "{memory: 1024Mi, cpu: '0.5'}",
			subset: true, exact: true},
		{name: "numbers", template: "{a: 1}", actual: "{a: 1.0}", subset: true, exact: true},
		{name: "string and number", template: "{a: '1'}", actual: "{a: 1}"},
		{name: "map and list", template: "{a: {}}", actual: "{a: []}"},
		{name: "list and scalar", template: "{a: [x]}", actual: "{a: x}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl, actual := value(t, tt.template), value(t, tt.actual)
			g.Expect(Matches(tmpl, actual, Subset)).To(Equal(tt.subset), "subset")
			g.Expect(Matches(tmpl, actual, Exact)).To(Equal(tt.exact), "exact")
		})
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name     string
		template string
		actual   string
		mode     Mode
		want     string
	}{
		{name: "keeps what the template does not set", template: "{data: {a: '1'}}",
			actual: "{data: {a: '0', b: '2'}, x: y}", mode: Subset, want: "{data: {a: '1', b: '2'}, x: y}"},
		{name: "updates the container of the same name", template: "{containers: [{name: app, image: 'app:2'}]}",
			actual: `{containers: [{name: side, image: 'side:1'}, {name: app, image: 'app:1', ports: [{containerPort: 80}]}]}`,
			mode:   Subset,
			want:   `{containers: [{name: side, image: 'side:1'}, {name: app, image: 'app:2', ports: [{containerPort: 80}]}]}`},
		{name: "appends a missing item", template: "{verbs: [get, watch]}", actual: "{verbs: [list, get]}",
			mode: Subset, want: "{verbs: [list, get, watch]}"},
		{name: "removes extra keys", template: "{data: {a: '1'}}", actual: "{data: {a: '1', b: '2'}}",
			mode: Exact, want: "{data: {a: '1'}}"},
		{name: "replaces the list", template: "{l: [b, {x: 1}]}", actual: "{l: [{x: 1}, c]}",
			mode: Exact, want: "{l: [b, {x: 1}]}"},
		{name: "keeps the matching items", template: "{l: [{q: 1Gi}, z]}", actual: "{l: [{q: 1024Mi}, y]}",
			mode: Exact, want: "{l: [{q: 1024Mi}, z]}"},
		{name: "null removes the key", template: "{a: null, b: 1}", actual: "{a: 1, b: 2, c: 3}",
			mode: Subset, want: "{b: 1, c: 3}"},
		{name: "compliant object unchanged", template: "{a: 0}", actual: "{b: 1}", mode: Subset, want: "{b: 1}"},
		{name: "zero value not written", template: "{a: 0}", actual: "{b: 1}", mode: Exact, want: "{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Merge(value(t, tt.template), value(t, tt.actual), tt.mode)
			g.Expect(got).To(Equal(value(t, tt.want)))
		})
	}
}

func TestCompareObject(t *testing.T) {
	existing := `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: default
  uid: "1"
  labels: {app: web, extra: x}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}', note: a}
data: {a: '1', b: '2'}
status: {phase: Ready}`
	tests := []struct {
		name        string
		template    string
		mode        Mode
		wantMatches bool
		wantDesired string
	}{
		{name: "musthave complies", mode: Subset, wantMatches: true, wantDesired: existing, template: `
apiVersion: v1
kind: ConfigMap
metadata: {name: app, labels: {app: web}}
data: {a: '1'}`},
		{name: "musthave fixes a value", mode: Subset, template: `
apiVersion: v1
kind: ConfigMap
metadata: {name: app}
data: {a: '9'}`, wantDesired: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: default
  uid: "1"
  labels: {app: web, extra: x}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}', note: a}
data: {a: '9', b: '2'}
status: {phase: Ready}`},
		{name: "mustonlyhave removes extra fields and keeps kubectl's annotation", mode: Exact, template: `
apiVersion: v1
kind: ConfigMap
metadata: {name: app, labels: {app: web}, annotations: {note: a}}
data: {a: '1'}`, wantDesired: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: default
  uid: "1"
  labels: {app: web}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}', note: a}
data: {a: '1'}
status: {phase: Ready}`},
		{name: "status differs: nothing to write", mode: Subset, wantDesired: existing, template: `
apiVersion: v1
kind: ConfigMap
metadata: {name: app}
status: {phase: Failed}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := value(t, tt.template).(map[string]any)
			ex := value(t, existing).(map[string]any)
			matches, desired := compareObject(tmpl, ex, tt.mode, tt.mode)
			g.Expect(matches).To(Equal(tt.wantMatches))
			g.Expect(desired).To(Equal(value(t, tt.wantDesired)))
			g.Expect(ex).To(Equal(value(t, existing)), "existing unchanged")
		})
	}
}
