package templating

import (
	"bytes"
	"flag"
	"io"
	"sync"

	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	klogv1 "k8s.io/klog"
)

// Delimiters of hub templates, resolved by the hub per cluster. Managed
// cluster templates use the library's default "{{" and "}}".
const (
	HubStartDelim = "{{hub"
	HubStopDelim  = "hub}}"
)

// Annotations, with OCM's names and meanings.
const (
	// HubTemplatesErrorAnnotation is set by the hub on a replica's policy
	// template (its objectDefinition) whose hub templates failed to
	// resolve; its value is the error. The template is then left as the
	// root wrote it, never half resolved, and the agent reports it
	// NonCompliant with the error instead of creating it.
	HubTemplatesErrorAnnotation = "policy.open-cluster-management.io/hub-templates-error"
	// IVAnnotation holds the base64 initialization vector of the values a
	// replica's "protect" calls encrypted. It is set on the replica and on
	// each policy template that uses encryption, so the agent can decrypt.
	IVAnnotation = "policy.open-cluster-management.io/encryption-iv"
	// TriggerUpdateAnnotation on a root policy forces its hub templates to
	// be resolved again when its value changes. It is not copied to
	// replicas.
	TriggerUpdateAnnotation = "policy.open-cluster-management.io/trigger-update"
	// DisableTemplatesAnnotation set to "true" on a root policy or a
	// ConfigurationPolicy turns template resolution off: "{{" is then
	// literal text.
	DisableTemplatesAnnotation = "policy.open-cluster-management.io/disable-templates"
)

// The per-cluster AES key that "protect" encrypts with: Secret
// EncryptionKeySecret in the cluster namespace on the hub (created by the
// hub), copied by the agent into the cluster namespace on the managed
// cluster.
const (
	EncryptionKeySecret = "policy-encryption-key" // #nosec G101 -- a Secret's name, not a credential
	// EncryptionKeyField holds the current 256-bit key.
	EncryptionKeyField = "key"
	// PreviousKeyField holds the key before the last rotation, tried when
	// decrypting with the current key fails.
	PreviousKeyField = "previousKey"
)

// TemplateErrorPrefix starts the message of a compliance event for a
// template that could not be resolved, as OCM writes it
// ("NonCompliant; template-error; <error>").
const TemplateErrorPrefix = "template-error; "

// HasHubTemplate reports whether raw holds a hub template.
func HasHubTemplate(raw []byte) bool {
	return bytes.Contains(raw, []byte(HubStartDelim))
}

// HasManagedTemplate reports whether raw holds a managed-cluster template
// or an encrypted value to decrypt.
func HasManagedTemplate(raw []byte) bool {
	return templates.HasTemplate(raw, "", true)
}

var quiet sync.Once

// QuietLibraryLog stops go-template-utils from logging through klog v1,
// which it does on every failure with the whole template, decrypted
// values included. Canopy logs the returned errors itself, which carry the
// template as written, never a resolved or decrypted value. Every resolver
// Canopy makes calls it first; calling it again does nothing.
func QuietLibraryLog() {
	quiet.Do(func() {
		fs := flag.NewFlagSet("klog-v1", flag.ContinueOnError)
		klogv1.InitFlags(fs)
		for name, value := range map[string]string{
			"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL", "v": "0",
		} {
			_ = fs.Set(name, value) // the flags exist: InitFlags defined them
		}
		klogv1.SetOutput(io.Discard)
	})
}
