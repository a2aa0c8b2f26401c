package templatesync

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestUpToDate: a template written from the same desired object is up to
// date whatever the API server added; a hand edit is not.
func TestUpToDate(t *testing.T) {
	desired := `{apiVersion: v1, kind: T, metadata: {name: t}, spec: {a: 1, l: [x, y], q: 1Gi, n: null}}`
	tests := []struct {
		name, existing string
		want           bool
	}{
		{"as written", desired, true},
		{"server defaults and status", `{apiVersion: v1, kind: T, metadata: {name: t, uid: u}, spec: {a: 1.0, l: [x, y], q: 1Gi, d: z}, status: {s: 1}}`, true},
		{"list reordered", `{apiVersion: v1, kind: T, metadata: {name: t}, spec: {a: 1, l: [y, x], q: 1Gi}}`, false},
		{"value changed", `{apiVersion: v1, kind: T, metadata: {name: t}, spec: {a: 2, l: [x, y], q: 1Gi}}`, false},
		{"quantity written otherwise", `{apiVersion: v1, kind: T, metadata: {name: t}, spec: {a: 1, l: [x, y], q: 1024Mi}}`, false},
		{"field removed", `{apiVersion: v1, kind: T, metadata: {name: t}, spec: {a: 1, q: 1Gi}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(upToDate(yamlObject(t, tt.existing), yamlObject(t, desired))).To(Equal(tt.want))
		})
	}
}

func yamlObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}
