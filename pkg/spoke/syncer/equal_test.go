package syncer

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestEquivalentNumbers: a number compares by value whatever Go type its
// decoder chose. Before pkg/compare the syncer took a json.Number or a
// float32 for a different value than the same int64, and rewrote the
// object on every evaluation; and in an exact field int64 1 differed from
// float64 1.
func TestEquivalentNumbers(t *testing.T) {
	quota := func(pods any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
			"metadata": map[string]any{"name": "q"}, "spec": map[string]any{"replicas": pods}}}
	}
	configMap := func(v any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c"}, "data": map[string]any{"n": v}}}
	}
	tests := []struct {
		name               string
		declared, observed *unstructured.Unstructured
		want               bool
	}{
		{"json.Number and int64", quota(json.Number("1")), quota(int64(1)), true},
		{"int64 and json.Number", quota(int64(1)), quota(json.Number("1")), true},
		{"float32 and int64", quota(float32(2)), quota(int64(2)), true},
		{"float64 and int64", quota(1.0), quota(int64(1)), true},
		{"different values", quota(json.Number("2")), quota(int64(1)), false},
		{"exact field: float64 and int64", configMap(1.0), configMap(int64(1)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(equivalent(tt.declared, tt.observed)).To(Equal(tt.want))
		})
	}
}

// TestEquivalentKeepsSyncerRules: the syncer's rules that differ from a
// ConfigurationPolicy's musthave hold: lists are sequences, a declared
// key must be present even with a zero value, and an exact field compares
// strings as written.
func TestEquivalentKeepsSyncerRules(t *testing.T) {
	tests := []struct {
		name, declared, observed string
		want                     bool
	}{
		{"list in another order", `{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {scopes: [a, b]}}`,
			`{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {scopes: [b, a]}}`, false},
		{"zero value missing", `{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {pods: "1"}, x: 0}}`,
			`{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {pods: "1"}}}`, false},
		{"quantity in an exact field", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {m: 1Gi}}`,
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {m: 1024Mi}}`, false},
		{"quantity elsewhere", `{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {memory: 1Gi}}}`,
			`{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {memory: 1024Mi}}}`, true},
		{"declared field missing", `{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {}}`,
			`{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(equivalent(obj(t, tt.declared), obj(t, tt.observed))).To(Equal(tt.want))
		})
	}
}
