package configpolicy

import (
	"reflect"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// FuzzCompare checks the laws of Matches and Merge on any two JSON values:
// Merge produces a value that matches, leaves a matching value as it is,
// and mutates neither input; an exact match is also a subset match.
func FuzzCompare(f *testing.F) {
	f.Add([]byte(`{"a":1,"l":[{"name":"x","v":1},"s"]}`), []byte(`{"a":2,"l":["s",{"name":"x","v":2,"w":3}]}`), false)
	f.Add([]byte(`[{"x":1},{"x":1,"y":2}]`), []byte(`[{"x":1,"y":2},{"x":1,"z":3}]`), true)
	f.Add([]byte(`{"q":"1Gi","n":null,"z":false}`), []byte(`{"q":"1024Mi","n":0}`), true)
	f.Add([]byte(`["a","a",{}]`), []byte(`{"a":[]}`), false)
	f.Fuzz(func(t *testing.T, templateJSON, actualJSON []byte, exact bool) {
		var tmpl, actual any
		if utiljson.Unmarshal(templateJSON, &tmpl) != nil || utiljson.Unmarshal(actualJSON, &actual) != nil {
			t.Skip("not JSON")
		}
		mode := Subset
		if exact {
			mode = Exact
		}
		tmplBefore, actualBefore := deepCopy(tmpl), deepCopy(actual)
		merged := Merge(tmpl, actual, mode)
		if !Matches(tmpl, merged, mode) {
			t.Fatalf("Merge(%s, %s) = %#v, which does not match", templateJSON, actualJSON, merged)
		}
		if Matches(tmpl, actual, mode) && !reflect.DeepEqual(merged, actual) {
			t.Fatalf("Merge changed a matching value %s into %#v", actualJSON, merged)
		}
		if Matches(tmpl, actual, Exact) && !Matches(tmpl, actual, Subset) {
			t.Fatalf("%s matches %s exactly but not as a subset", actualJSON, templateJSON)
		}
		if !reflect.DeepEqual(tmpl, tmplBefore) || !reflect.DeepEqual(actual, actualBefore) {
			t.Fatal("Merge mutated its inputs")
		}
	})
}
