package v1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestKindAndName(t *testing.T) {
	for raw, want := range map[string][2]string{
		`{"kind":"ConfigurationPolicy","metadata":{"name":"cp"},"spec":{}}`: {"ConfigurationPolicy", "cp"},
		`{"kind":5,"metadata":{"name":"cp"}}`:                               {"", "cp"},
		`{"metadata":{}}`:                                                   {"", ""},
		`not json`:                                                          {"", ""},
	} {
		kind, name := PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: []byte(raw)}}.KindAndName()
		if kind != want[0] || name != want[1] {
			t.Errorf("KindAndName(%s) = %q, %q; want %q, %q", raw, kind, name, want[0], want[1])
		}
	}
}
