package secretsync

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The label that marks the copies this controller writes.
const (
	// ManagedByLabel is the well-known label naming an object's manager.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is its value on the copies.
	ManagedByValue = "canopy"
)

// Desired returns the managed copy of the hub's key: same name, namespace,
// type and data, labelled as Canopy's. The hub's labels and annotations are
// not copied (as in OCM: they may carry the hub's backup settings).
func Desired(hub *corev1.Secret) *corev1.Secret {
	typ := hub.Type
	if typ == "" {
		typ = corev1.SecretTypeOpaque
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: hub.Namespace,
			Name:      hub.Name,
			Labels:    map[string]string{ManagedByLabel: ManagedByValue},
		},
		Type: typ,
		Data: copyData(hub.Data),
	}
}

// InSync reports whether local already is the copy of hub.
func InSync(local, hub *corev1.Secret) bool {
	want := Desired(hub)
	return Owned(local) && local.Type == want.Type && equality.Semantic.DeepEqual(local.Data, want.Data)
}

// Updatable reports whether local can be made the copy of hub by an update:
// a Secret's type never changes, nor an immutable Secret's data.
func Updatable(local, hub *corev1.Secret) bool {
	want := Desired(hub)
	if local.Type != want.Type {
		return false
	}
	immutable := local.Immutable != nil && *local.Immutable
	return !immutable || equality.Semantic.DeepEqual(local.Data, want.Data)
}

// Owned reports whether this controller wrote s.
func Owned(s *corev1.Secret) bool {
	return s.Labels[ManagedByLabel] == ManagedByValue
}

func copyData(data map[string][]byte) map[string][]byte {
	if len(data) == 0 {
		return nil
	}
	out := make(map[string][]byte, len(data))
	for k, v := range data {
		out[k] = append([]byte(nil), v...)
	}
	return out
}

// mergeLabels returns labels with want set over them.
func mergeLabels(labels, want map[string]string) map[string]string {
	out := maps.Clone(labels)
	if out == nil {
		out = make(map[string]string, len(want))
	}
	maps.Copy(out, want)
	return out
}
