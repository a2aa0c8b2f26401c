package hubtemplates

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/canopy-policy/canopy/pkg/templating"
)

const (
	// lastRotatedAnnotation records when the hub generated a cluster's
	// encryption key, as OCM's propagator does.
	lastRotatedAnnotation = "policy.open-cluster-management.io/last-rotated"
	// backupLabel keeps the key in OCM's hub backups: without it, restored
	// replicas could no longer be decrypted.
	backupLabel = "cluster.open-cluster-management.io/backup"
)

// keySize is the size of the AES-256 keys "protect" encrypts with.
const keySize = 256 / 8

// GenerateEncryptionKey returns a new random AES-256 key.
func GenerateEncryptionKey() ([]byte, error) {
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generating an AES-256 key: %w", err)
	}
	return key, nil
}

// newEncryptionKeySecret is the Secret holding a new key for cluster, with
// OCM's name, field, label and annotation.
func newEncryptionKeySecret(cluster string, key []byte, now time.Time) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        templating.EncryptionKeySecret,
			Namespace:   cluster,
			Labels:      map[string]string{backupLabel: "policy"},
			Annotations: map[string]string{lastRotatedAnnotation: now.UTC().Format(time.RFC3339)},
		},
		Data: map[string][]byte{templating.EncryptionKeyField: key},
	}
}

// validIV returns the IV encoded in annotation when it is a valid one, and
// nil otherwise.
func validIV(annotation string) []byte {
	iv, err := base64.StdEncoding.DecodeString(annotation)
	if err != nil || len(iv) != templates.IVSize {
		return nil
	}
	return iv
}

// newIV returns a random initialization vector, base64 encoded as the IV
// annotation holds it.
func newIV() (string, error) {
	iv := make([]byte, templates.IVSize)
	if _, err := rand.Read(iv); err != nil {
		return "", fmt.Errorf("generating an initialization vector: %w", err)
	}
	return base64.StdEncoding.EncodeToString(iv), nil
}

// usesEncryption reports whether a policy template's hub templates encrypt
// values: OCM's test (fromSecret or copySecretData leading an action, or a
// pipe into protect), widened to any action that mentions fromSecret,
// copySecretData or protect, so that a Secret value read anywhere in an
// action is encrypted, never written to the replica in clear text.
func usesEncryption(raw []byte) bool {
	if templates.UsesEncryption(raw, templating.HubStartDelim, templating.HubStopDelim) {
		return true
	}
	actions := bytes.Split(raw, []byte(templating.HubStartDelim))
	for _, action := range actions[1:] {
		action, _, _ = bytes.Cut(action, []byte(templating.HubStopDelim))
		for _, fn := range []string{"fromSecret", "copySecretData", "protect"} {
			if bytes.Contains(action, []byte(fn)) {
				return true
			}
		}
	}
	return false
}
