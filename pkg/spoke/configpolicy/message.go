package configpolicy

import (
	"fmt"
	"strings"
	"text/template"

	sprig "github.com/Masterminds/sprig/v3"
	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compare"
)

// messageFuncs are the functions of customMessage templates: the sprig
// functions go-template-utils offers, as in OCM. None reads the cluster.
var messageFuncs = func() template.FuncMap {
	all := sprig.TxtFuncMap()
	funcs := template.FuncMap{}
	for _, name := range templates.AvailableSprigFunctions() {
		if f, ok := all[name]; ok {
			funcs[name] = f
		}
	}
	return funcs
}()

// secretReaders are the words of a template that may put a secret value in
// the objects it describes: the functions that read Secrets (lookup may)
// and the prefix of values the hub encrypted.
var secretReaders = []string{"fromSecret", "copySecretData", "lookup", "$ocm_encrypted:", "protect"}

// complianceMessage returns the message of the compliance event, after the
// state: the default one (eventMessage), or the policy's customMessage for
// its state (compliant, or noncompliant for any other state) rendered as a
// Go template, as OCM does. The template gets .DefaultMessage, the default
// message with its state ("Compliant; notification - ..."), and .Policy,
// the ConfigurationPolicy with the status of this evaluation as a map of
// its JSON fields. When the evaluation watches, each
// .Policy.status.relatedObjects[].object is the whole object as found;
// otherwise only its identity. A template that fails leaves the default
// message, followed by " (failure processing the custom message: <error>)".
//
// Note: no secret value can be rendered. The functions read nothing from
// the cluster; the policy holds no secret values (hub-encrypted values stay
// encrypted, diffs of Secrets are redacted); and whole objects are never
// given for Secrets, nor at all when a template of the policy reads
// Secrets or encrypted values (secretReaders).
func complianceMessage(policy *policyv1.ConfigurationPolicy, outcomes []templateOutcome) string {
	state := policy.Status.ComplianceState
	text := policy.Spec.CustomMessage.NonCompliant
	if state == policyv1.Compliant {
		text = policy.Spec.CustomMessage.Compliant
	}
	def := eventMessage(policy.Status)
	if text == "" {
		return def
	}
	defaultMessage := string(state)
	if def != "" {
		defaultMessage += "; " + def
	}
	msg, err := renderMessage(text, defaultMessage, policyData(policy, fullObjects(policy, outcomes)))
	if err != nil {
		msg = fmt.Sprintf("%s (failure processing the custom message: %v)", defaultMessage, err)
	}
	if rest, ok := strings.CutPrefix(msg, string(state)+";"); ok {
		return strings.TrimPrefix(rest, " ")
	}
	return msg
}

// renderMessage renders a customMessage template.
func renderMessage(text, defaultMessage string, policy map[string]any) (string, error) {
	tmpl, err := template.New("custom-msg").Funcs(messageFuncs).Parse(text)
	if err != nil {
		return "", fmt.Errorf("failed to parse custom template: %w", err)
	}
	var out strings.Builder
	if err := tmpl.Execute(&out, map[string]any{"DefaultMessage": defaultMessage, "Policy": policy}); err != nil {
		return "", fmt.Errorf("failed to execute: %w", err)
	}
	return out.String(), nil
}

// policyData is .Policy: the policy as a map of its JSON fields, each
// related object's identity replaced by the whole object when objects has
// it.
func policyData(policy *policyv1.ConfigurationPolicy, objects map[policyv1.ObjectResource]map[string]any) map[string]any {
	data, err := runtime.DefaultUnstructuredConverter.ToUnstructured(policy)
	if err != nil {
		return map[string]any{}
	}
	data["apiVersion"], data["kind"] = policyv1.GroupVersion.String(), "ConfigurationPolicy"
	status, _ := data["status"].(map[string]any)
	related, _ := status["relatedObjects"].([]any)
	for i, rel := range policy.Status.RelatedObjects {
		obj, found := objects[rel.Object]
		if !found || i >= len(related) {
			continue
		}
		if entry, isMap := related[i].(map[string]any); isMap {
			entry["object"] = compare.DeepCopy(obj)
		}
	}
	return data
}

// fullObjects are the related objects customMessage may see whole: those
// the evaluation kept (it watches), but never a Secret, and none when a
// template of the policy may hold a secret value.
func fullObjects(policy *policyv1.ConfigurationPolicy, outcomes []templateOutcome) map[policyv1.ObjectResource]map[string]any {
	if mayHoldSecrets(policy) {
		return nil
	}
	out := map[policyv1.ObjectResource]map[string]any{}
	for _, o := range outcomes {
		for id, obj := range o.objects {
			if gvk := schema.FromAPIVersionAndKind(id.APIVersion, id.Kind); gvk.Group == "" && gvk.Kind == "Secret" {
				continue
			}
			out[id] = obj
		}
	}
	return out
}

// mayHoldSecrets reports whether a template of policy may put a secret
// value in the objects it describes.
func mayHoldSecrets(policy *policyv1.ConfigurationPolicy) bool {
	texts := []string{policy.Spec.ObjectTemplatesRaw}
	for _, ot := range policy.Spec.ObjectTemplates {
		texts = append(texts, string(ot.ObjectDefinition.Raw))
	}
	for _, text := range texts {
		for _, word := range secretReaders {
			if strings.Contains(text, word) {
				return true
			}
		}
	}
	return false
}
