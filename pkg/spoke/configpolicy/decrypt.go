package configpolicy

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/canopy-policy/canopy/pkg/templating"
)

var (
	secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	secretGVR = depclient.ScopedGVR{
		GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Namespaced: true}
)

// encryptionConfig returns how to decrypt the "$ocm_encrypted:" values of
// the policy: with the initialization vector of its
// templating.IVAnnotation and the keys of Secret
// templating.EncryptionKeySecret in its namespace. The Secret is read
// alone (through the dynamic watcher when watching, which then watches
// it), never through a cache of all Secrets. Without them the policy is
// NonCompliant and its encrypted values are never applied as they are.
func (e *evaluation) encryptionConfig(ctx context.Context) (templates.EncryptionConfig, *templateOutcome) {
	fail := func(msg string) (templates.EncryptionConfig, *templateOutcome) {
		out := errorOutcome("", ReasonEncryptionConfigError, msg)
		return templates.EncryptionConfig{}, &out
	}
	ivBase64 := e.policy.Annotations[templating.IVAnnotation]
	if ivBase64 == "" {
		msg := fmt.Sprintf(`the policy holds encrypted values but has no "%s" annotation to decrypt them with`,
			templating.IVAnnotation)
		e.invalid = append(e.invalid, msg)
		return fail(msg)
	}
	iv, err := base64.StdEncoding.DecodeString(ivBase64)
	if err != nil {
		msg := fmt.Sprintf(`the policy annotation of "%s" is not Base64: %v`, templating.IVAnnotation, err)
		e.invalid = append(e.invalid, msg)
		return fail(msg)
	}
	key, previous, err := e.encryptionKeys(ctx)
	if err != nil {
		msg := fmt.Sprintf("failed to get the encryption key from Secret %s/%s: %v", e.policy.Namespace,
			templating.EncryptionKeySecret, err)
		if !apierrors.IsNotFound(err) || !e.watching { // a watched Secret re-evaluates the policy when it appears
			e.transient = append(e.transient, errors.New(msg))
		}
		return fail(msg)
	}
	return templates.EncryptionConfig{
		AESKey: key, AESKeyFallback: previous, DecryptionEnabled: true, InitializationVector: iv,
	}, nil
}

// encryptionKeys reads the current and previous keys of the key Secret;
// either is nil when absent.
func (e *evaluation) encryptionKeys(ctx context.Context) (key, previous []byte, err error) {
	secret, err := e.reader.get(ctx, secretGVR, secretGVK, e.policy.Namespace, templating.EncryptionKeySecret)
	if err != nil {
		return nil, nil, err
	}
	if secret == nil {
		return nil, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, templating.EncryptionKeySecret)
	}
	if key, err = secretData(secret, templating.EncryptionKeyField); err != nil {
		return nil, nil, err
	}
	if previous, err = secretData(secret, templating.PreviousKeyField); err != nil {
		return nil, nil, err
	}
	return key, previous, nil
}

// secretData decodes data[field] of a Secret read as unstructured.
func secretData(secret *unstructured.Unstructured, field string) ([]byte, error) {
	encoded, _, _ := unstructured.NestedString(secret.Object, "data", field)
	if encoded == "" {
		return nil, nil
	}
	value, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("the %s field is not Base64", field)
	}
	return value, nil
}
