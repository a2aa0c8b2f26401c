package compare_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/canopy-policy/canopy/pkg/compare"
)

// modes are the Modes the laws are checked under: the named ones and one
// that combines the fields otherwise.
var modes = []compare.Mode{compare.Subset, compare.Exact, compare.Ordered, compare.Strict, {InOrder: true, Literal: true},
	{Present: true}, {NoExtra: true, Present: true}}

// FuzzCompare checks the laws of compare.Matches and compare.Merge on any two JSON values,
// in every mode: compare.Merge produces a value that matches, leaves a matching
// value as it is, and mutates neither input; an exact match is also a
// subset match, and an equal value matches in every mode.
func FuzzCompare(f *testing.F) {
	f.Add([]byte(`{"a":1,"l":[{"name":"x","v":1},"s"]}`), []byte(`{"a":2,"l":["s",{"name":"x","v":2,"w":3}]}`), uint8(0))
	f.Add([]byte(`[{"x":1},{"x":1,"y":2}]`), []byte(`[{"x":1,"y":2},{"x":1,"z":3}]`), uint8(1))
	f.Add([]byte(`{"q":"1Gi","n":null,"z":false}`), []byte(`{"q":"1024Mi","n":0}`), uint8(1))
	f.Add([]byte(`["a","a",{}]`), []byte(`{"a":[]}`), uint8(2))
	f.Add([]byte(`{"a":null,"b":[1,2]}`), []byte(`{"b":[1.0,2,3]}`), uint8(3))
	// OCM's conformance cases: empty values the object lacks (case33, 36, 45).
	f.Add([]byte(`{"labels":{"a":""},"s":{},"b":false}`), []byte(`{"labels":{"b":"x"}}`), uint8(5))
	f.Add([]byte(`[{"verbs":["get"],"resources":[]}]`), []byte(`[{"verbs":["get"]},{"verbs":["list"]}]`), uint8(6))
	f.Fuzz(func(t *testing.T, templateJSON, actualJSON []byte, m uint8) {
		var tmpl, actual any
		if utiljson.Unmarshal(templateJSON, &tmpl) != nil || utiljson.Unmarshal(actualJSON, &actual) != nil {
			t.Skip("not JSON")
		}
		mode := modes[int(m)%len(modes)]
		tmplBefore, actualBefore := compare.DeepCopy(tmpl), compare.DeepCopy(actual)
		merged := compare.Merge(tmpl, actual, mode)
		if !compare.Matches(tmpl, merged, mode) {
			t.Fatalf("Merge(%s, %s, %+v) = %#v, which does not match", templateJSON, actualJSON, mode, merged)
		}
		if compare.Matches(tmpl, actual, mode) && !reflect.DeepEqual(merged, actual) {
			t.Fatalf("Merge changed a matching value %s into %#v", actualJSON, merged)
		}
		if compare.Matches(tmpl, actual, compare.Exact) && !compare.Matches(tmpl, actual, compare.Subset) {
			t.Fatalf("%s matches %s exactly but not as a subset", actualJSON, templateJSON)
		}
		if compare.Matches(tmpl, actual, compare.Strict) && !compare.Matches(tmpl, actual, compare.Ordered) {
			t.Fatalf("%s equals %s but does not match it under Ordered", actualJSON, templateJSON)
		}
		lenient := mode
		lenient.Present = false
		if compare.Matches(tmpl, actual, mode) && !compare.Matches(tmpl, actual, lenient) {
			t.Fatalf("%s matches %s under %+v but not without Present", actualJSON, templateJSON, mode)
		}
		if compare.Equal(tmpl, actual) && !compare.Matches(tmpl, actual, mode) {
			t.Fatalf("%s equals %s but does not match it under %+v", actualJSON, templateJSON, mode)
		}
		if !reflect.DeepEqual(tmpl, tmplBefore) || !reflect.DeepEqual(actual, actualBefore) {
			t.Fatal("Merge mutated its inputs")
		}
	})
}

// FuzzEqual checks that Equal is reflexive and symmetric, that every mode
// is reflexive, and that a value equals itself after a JSON round trip,
// decoded as float64s or as json.Numbers.
func FuzzEqual(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[1.5,"x",true,null],"c":{}}`), []byte(`{"a":1.0}`))
	f.Add([]byte(`[9007199254740993, -0, 1e300]`), []byte(`[9007199254740992]`))
	f.Add([]byte(`"1Gi"`), []byte(`"1024Mi"`))
	f.Fuzz(func(t *testing.T, aJSON, bJSON []byte) {
		var a, b any
		if utiljson.Unmarshal(aJSON, &a) != nil || utiljson.Unmarshal(bJSON, &b) != nil {
			t.Skip("not JSON")
		}
		if compare.Equal(a, b) != compare.Equal(b, a) {
			t.Fatalf("Equal(%s, %s) is not symmetric", aJSON, bJSON)
		}
		for _, m := range modes {
			if !compare.Matches(a, a, m) {
				t.Fatalf("%s does not match itself under %+v", aJSON, m)
			}
		}
		out, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var asFloats, asNumbers any
		if err := json.Unmarshal(out, &asFloats); err != nil {
			t.Fatal(err)
		}
		d := json.NewDecoder(bytes.NewReader(out))
		d.UseNumber()
		if err := d.Decode(&asNumbers); err != nil {
			t.Fatal(err)
		}
		if !compare.Equal(a, asNumbers) || !compare.Equal(asNumbers, a) {
			t.Fatalf("%s is not equal to itself decoded with json.Number: %#v", aJSON, asNumbers)
		}
		if !compare.Equal(a, asFloats) {
			t.Fatalf("%s is not equal to itself decoded as float64: %#v", aJSON, asFloats)
		}
	})
}
