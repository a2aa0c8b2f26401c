package secretsync_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/canopy-policy/canopy/pkg/spoke/secretsync"
)

func TestCopy(t *testing.T) {
	hub := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "c1", Name: "policy-encryption-key",
			Labels: map[string]string{"hub": "only"}, Annotations: map[string]string{"hub": "only"},
		},
		Data: map[string][]byte{"key": []byte("k2"), "previousKey": []byte("k1")},
	}
	owned := map[string]string{secretsync.ManagedByLabel: secretsync.ManagedByValue}
	copyOf := func(mutate func(s *corev1.Secret)) *corev1.Secret {
		s := secretsync.Desired(hub)
		mutate(s)
		return s
	}
	tests := []struct {
		name              string
		local             *corev1.Secret
		inSync, updatable bool
	}{
		{"the copy", copyOf(func(*corev1.Secret) {}), true, true},
		{"other labels too", copyOf(func(s *corev1.Secret) { s.Labels["extra"] = "x" }), true, true},
		{"not labelled", copyOf(func(s *corev1.Secret) { s.Labels = nil }), false, true},
		{"old key", copyOf(func(s *corev1.Secret) { s.Data["key"] = []byte("k1") }), false, true},
		{"extra field", copyOf(func(s *corev1.Secret) { s.Data["x"] = nil }), false, true},
		{"no data", copyOf(func(s *corev1.Secret) { s.Data = nil }), false, true},
		{"other type", copyOf(func(s *corev1.Secret) { s.Type = corev1.SecretTypeTLS }), false, false},
		{"immutable, old key", copyOf(func(s *corev1.Secret) { s.Immutable = ptr.To(true); s.Data["key"] = []byte("k1") }), false, false},
		{"immutable, same key, not labelled", copyOf(func(s *corev1.Secret) { s.Immutable = ptr.To(true); s.Labels = nil }), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(secretsync.InSync(tt.local, hub)).To(Equal(tt.inSync))
			g.Expect(secretsync.Updatable(tt.local, hub)).To(Equal(tt.updatable))
		})
	}

	g := NewWithT(t)
	want := secretsync.Desired(hub)
	g.Expect(want.ObjectMeta).To(Equal(metav1.ObjectMeta{Namespace: "c1", Name: "policy-encryption-key", Labels: owned}))
	g.Expect(want.Type).To(Equal(corev1.SecretTypeOpaque))
	g.Expect(want.Data).To(Equal(hub.Data))
	want.Data["key"][0] = 'x' // a deep copy: the hub's object is untouched
	g.Expect(hub.Data["key"]).To(Equal([]byte("k2")))
}
