package compare_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/canopy-policy/canopy/pkg/compare"
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
			g.Expect(compare.Matches(tmpl, actual, compare.Subset)).To(Equal(tt.subset), "subset")
			g.Expect(compare.Matches(tmpl, actual, compare.Exact)).To(Equal(tt.exact), "exact")
		})
	}
}

// TestOrderedAndEqual covers the syncer's rule (compare.Ordered) and Equal, which
// differ from compare.Subset and compare.Exact in lists, missing keys and quantities.
func TestOrderedAndEqual(t *testing.T) {
	tests := []struct {
		name     string
		template string
		actual   string
		ordered  bool
		equal    bool
	}{
		{name: "same", template: "{a: [x, {b: 1}]}", actual: "{a: [x, {b: 1}]}", ordered: true, equal: true},
		{name: "server default in a map", template: "{spec: {a: 1}}", actual: "{spec: {a: 1, d: 2}}", ordered: true},
		{name: "list in another order", template: "[a, b]", actual: "[b, a]"},
		{name: "extra list item", template: "[a]", actual: "[a, b]"},
		{name: "extra list item in a map item", template: "[{a: 1}]", actual: "[{a: 1, b: 2}]", ordered: true},
		{name: "zero value against nothing", template: "{a: 0}", actual: "{}"},
		{name: "null against nothing", template: "{a: null}", actual: "{}"},
		{name: "null against null", template: "{a: null}", actual: "{a: null}", ordered: true, equal: true},
		{name: "extra null key", template: "{}", actual: "{a: null}", ordered: true},
		{name: "empty list against nothing", template: "{l: []}", actual: "{}"},
		{name: "quantities", template: "{m: 1Gi}", actual: "{m: 1024Mi}", ordered: true},
		{name: "numbers", template: "{a: 1}", actual: "{a: 1.0}", ordered: true, equal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl, actual := value(t, tt.template), value(t, tt.actual)
			g.Expect(compare.Matches(tmpl, actual, compare.Ordered)).To(Equal(tt.ordered), "ordered")
			g.Expect(compare.Equal(tmpl, actual)).To(Equal(tt.equal), "equal")
			g.Expect(compare.Equal(actual, tmpl)).To(Equal(tt.equal), "equal, swapped")
		})
	}
}

// TestNumbers checks that a number compares by value whatever Go type the
// decoder chose: utiljson's int64 and float64, encoding/json's float64 or
// json.Number, a float32.
func TestNumbers(t *testing.T) {
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"int64 and float64", int64(1), float64(1), true},
		{"int64 and json.Number", int64(1), json.Number("1"), true},
		{"float64 and json.Number", 1.5, json.Number("1.5"), true},
		{"json.Number written differently", json.Number("1"), json.Number("1.0"), true},
		{"float32", float32(0.5), 0.5, true},
		{"int and int32", 3, int32(3), true},
		{"large integers exactly", int64(1<<53 + 1), json.Number("9007199254740992"), false},
		{"different values", int64(1), json.Number("2"), false},
		{"a number and its string", int64(1), "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			for _, m := range []compare.Mode{compare.Subset, compare.Exact, compare.Ordered, compare.Strict} {
				g.Expect(compare.Matches(tt.a, tt.b, m)).To(Equal(tt.want), "%+v", m)
				g.Expect(compare.Matches(tt.b, tt.a, m)).To(Equal(tt.want), "%+v, swapped", m)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name     string
		template string
		actual   string
		mode     compare.Mode
		want     string
	}{
		{name: "keeps what the template does not set", template: "{data: {a: '1'}}",
			actual: "{data: {a: '0', b: '2'}, x: y}", mode: compare.Subset, want: "{data: {a: '1', b: '2'}, x: y}"},
		{name: "updates the container of the same name", template: "{containers: [{name: app, image: 'app:2'}]}",
			actual: `{containers: [{name: side, image: 'side:1'}, {name: app, image: 'app:1', ports: [{containerPort: 80}]}]}`,
			mode:   compare.Subset,
			want:   `{containers: [{name: side, image: 'side:1'}, {name: app, image: 'app:2', ports: [{containerPort: 80}]}]}`},
		{name: "appends a missing item", template: "{verbs: [get, watch]}", actual: "{verbs: [list, get]}",
			mode: compare.Subset, want: "{verbs: [list, get, watch]}"},
		{name: "removes extra keys", template: "{data: {a: '1'}}", actual: "{data: {a: '1', b: '2'}}",
			mode: compare.Exact, want: "{data: {a: '1'}}"},
		{name: "replaces the list", template: "{l: [b, {x: 1}]}", actual: "{l: [{x: 1}, c]}",
			mode: compare.Exact, want: "{l: [b, {x: 1}]}"},
		{name: "keeps the matching items", template: "{l: [{q: 1Gi}, z]}", actual: "{l: [{q: 1024Mi}, y]}",
			mode: compare.Exact, want: "{l: [{q: 1024Mi}, z]}"},
		{name: "null removes the key", template: "{a: null, b: 1}", actual: "{a: 1, b: 2, c: 3}",
			mode: compare.Subset, want: "{b: 1, c: 3}"},
		{name: "compliant object unchanged", template: "{a: 0}", actual: "{b: 1}", mode: compare.Subset, want: "{b: 1}"},
		{name: "zero value not written", template: "{a: 0}", actual: "{b: 1}", mode: compare.Exact, want: "{}"},
		{name: "sequence merged item by item", template: "{l: [{a: 1}, b]}", actual: "{l: [{a: 2, d: 3}, c, e], x: y}",
			mode: compare.Ordered, want: "{l: [{a: 1, d: 3}, b], x: y}"},
		{name: "present null and zero written", template: "{a: null, b: 0}", actual: "{a: 1}",
			mode: compare.Ordered, want: "{a: null, b: 0}"},
		{name: "present: an empty value the item lacks is merged into it, not added beside it",
			template: `{l: [{verbs: [get], resources: []}]}`, actual: `{l: [{verbs: [get]}, {verbs: [list]}]}`,
			mode: compare.Mode{Present: true}, want: `{l: [{verbs: [get], resources: []}, {verbs: [list]}]}`},
		{name: "present: an empty label is written", template: `{labels: {a: ""}}`, actual: `{labels: {b: x}}`,
			mode: compare.Mode{Present: true}, want: `{labels: {a: "", b: x}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := compare.Merge(value(t, tt.template), value(t, tt.actual), tt.mode)
			g.Expect(got).To(Equal(value(t, tt.want)))
		})
	}
}

func TestMapLeaves(t *testing.T) {
	g := NewWithT(t)
	v := value(t, "{a: [x, {b: 1, n: null}], c: true}")
	got := compare.MapLeaves(v, func(leaf any) any {
		if leaf == nil {
			return nil
		}
		return "*"
	})
	g.Expect(got).To(Equal(value(t, "{a: ['*', {b: '*', n: null}], c: '*'}")))
	g.Expect(v).To(Equal(value(t, "{a: [x, {b: 1, n: null}], c: true}")), "v unchanged")

	c := compare.DeepCopy(v).(map[string]any)
	c["a"].([]any)[1].(map[string]any)["b"] = int64(2)
	g.Expect(v).To(Equal(value(t, "{a: [x, {b: 1, n: null}], c: true}")), "the copy shares nothing")
}
