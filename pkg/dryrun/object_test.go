package dryrun

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/pkg/compare"
)

func TestShown(t *testing.T) {
	meta := func() map[string]any {
		return map[string]any{"name": "n", "namespace": "ns", "uid": "u", "resourceVersion": "1",
			"managedFields": []any{map[string]any{"manager": "m"}}, "labels": map[string]any{"a": "b"},
			"annotations": map[string]any{lastApplied: `{"data":{"k":"secret"}}`}}
	}
	tests := []struct {
		name string
		obj  map[string]any
		want map[string]any
	}{
		{
			name: "metadata trimmed, no status",
			obj:  map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(), "data": map[string]any{"k": "v"}, "status": map[string]any{}},
			want: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"},
				"metadata": map[string]any{"name": "n", "namespace": "ns", "labels": map[string]any{"a": "b"}}},
		},
		{
			name: "Secret values redacted",
			obj: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "type": "Opaque",
				"data": map[string]any{"k": "c2VjcmV0"}, "stringData": map[string]any{"other": "secret"}},
			want: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "type": "Opaque",
				"data": map[string]any{"k": Redacted}, "stringData": map[string]any{"other": Redacted}},
		},
		{
			name: "another group's Secret kind is not a Secret",
			obj:  map[string]any{"apiVersion": "example.com/v1", "kind": "Secret", "data": map[string]any{"k": "v"}},
			want: map[string]any{"apiVersion": "example.com/v1", "kind": "Secret", "data": map[string]any{"k": "v"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := compare.DeepCopy(tt.obj)
			g.Expect(Shown(tt.obj)).To(Equal(tt.want))
			g.Expect(tt.obj).To(Equal(before), "Shown copies")
		})
	}
}
