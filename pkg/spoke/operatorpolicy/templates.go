package operatorpolicy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	depclient "github.com/stolostron/kubernetes-dependency-watches/client"

	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// templateResolver resolves the managed-cluster templates of one
// evaluation with go-template-utils, through the dependency watcher in the
// policy's query batch: what the templates read is watched, and a change
// re-evaluates the policy.
type templateResolver struct {
	watcher  depclient.DynamicWatcher
	id       depclient.ObjectIdentifier
	denylist []string
	// lib is made on first use: most policies have no templates.
	lib *templates.TemplateResolver
}

// resolve returns raw (JSON) with its templates resolved.
func (t *templateResolver) resolve(raw []byte) ([]byte, error) {
	if t.lib == nil {
		templating.QuietLibraryLog() // before the library's first call, which logs what it looks at
		lib, err := templates.NewResolverWithDynamicWatcher(t.watcher, templates.Config{SkipBatchManagement: true})
		if err != nil {
			return nil, fmt.Errorf("unable to create template resolver: %w", err)
		}
		t.lib = lib
	}
	res, err := t.lib.ResolveTemplate(raw, nil,
		&templates.ResolveOptions{Watcher: &t.id, DenylistFunctions: templating.Denylist(t.denylist)})
	if err != nil {
		return nil, err
	}
	return res.ResolvedJSON, nil
}

// hasTemplate reports whether raw holds a managed-cluster template, as
// OCM's OperatorPolicy controller looks for one (encrypted values are not
// decrypted in OperatorPolicies).
func hasTemplate(raw []byte) bool {
	return templates.HasTemplate(raw, "", false)
}

// templatesDisabled reports whether the policy turns its templates off
// with the disable-templates annotation: "{{" is then literal text.
func templatesDisabled(policy *policyv1beta1.OperatorPolicy) bool {
	disabled, err := strconv.ParseBool(policy.Annotations[templating.DisableTemplatesAnnotation])
	return err == nil && disabled
}

// resolveRaw returns raw with its templates resolved, or raw itself when
// it has none, or the evaluation resolves none.
func (e *evaluation) resolveRaw(raw []byte) ([]byte, error) {
	if e.templates == nil || templatesDisabled(e.policy) || !hasTemplate(raw) {
		return raw, nil
	}
	return e.templates.resolve(raw)
}

// resolveVersions returns spec.versions with their templates resolved,
// split at commas and without blanks. The errors are OCM's, words
// included.
func (e *evaluation) resolveVersions() ([]string, error) {
	versions := e.policy.Spec.Versions
	if e.templates == nil || templatesDisabled(e.policy) ||
		!slices.ContainsFunc(versions, func(v string) bool { return hasTemplate([]byte(v)) }) {
		return canonicalVersions(versions), nil
	}
	data, err := json.Marshal(versions)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal the spec.versions field to JSON: %w", err)
	}
	resolved, err := e.templates.resolve(data)
	if err != nil {
		// Note: OCM's words, which blame the resolver for any failure.
		return nil, fmt.Errorf("unable to create template resolver: could not resolve the version template: %w", err)
	}
	versions = nil
	if err := json.Unmarshal(resolved, &versions); err != nil {
		return nil, fmt.Errorf("unable to create template resolver: "+
			"failed to unmarshal the spec.versions field after template resolution: %w", err)
	}
	return canonicalVersions(versions), nil
}
