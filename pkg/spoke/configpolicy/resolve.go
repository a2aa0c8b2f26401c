package configpolicy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// Reasons of templates whose Go templates cannot be resolved, as OCM words
// them.
const (
	// ReasonTemplateError: a Go template does not resolve (a syntax error, a
	// failed lookup, object-templates-raw that is not YAML) or resolves to
	// an object that cannot be evaluated.
	ReasonTemplateError = "Error processing template"
	// ReasonEncryptionConfigError: the policy holds encrypted values, and
	// its initialization vector annotation or the key Secret is missing or
	// invalid.
	ReasonEncryptionConfigError = "Template encryption configuration error"
)

// Messages of object templates that resolve to no object: they comply.
const (
	msgAllSkipped = "All objects of kind %s were skipped by the `skipObject` template function"
	msgNoSelected = "No objects of kind %s were matched from the policy objectSelector"
	msgNoMatched  = "No objects of kind %s were matched from the objectDefinition metadata"
)

// encryptedPrefix starts the values the hub's "protect" encrypted.
const encryptedPrefix = "$ocm_encrypted:"

// The context variables of an object template, found as OCM finds them.
var (
	usesObject          = regexp.MustCompile(`\.Object\W`)
	usesObjectName      = regexp.MustCompile(`\.ObjectName\W`)
	usesObjectNamespace = regexp.MustCompile(`\.ObjectNamespace`)
)

// resolution resolves the Go templates of one evaluation with
// go-template-utils: through the dynamic watcher, in the policy's query
// batch, when the policy is watched (what the templates read is then
// watched too), and straight from the API server otherwise.
type resolution struct {
	lib  *templates.TemplateResolver
	opts templates.ResolveOptions
	// fromRaw says that the object templates came from
	// object-templates-raw, whose resolution resolved them too.
	fromRaw bool
	// sensitive says that resolving object-templates-raw read a Secret or
	// decrypted a value: every object template it yields is sensitive.
	sensitive bool
}

// resolved is an object definition resolved for one object.
type resolved struct {
	json []byte
	// skip says that the templates called skipObject.
	skip bool
	// sensitive says that they read a Secret or decrypted a value.
	sensitive bool
}

// target is an object an object template is resolved for: its namespace
// and name as the selectors or the definition give them ("" when only
// resolution tells), and, when the templates use .Object, the object on
// the cluster.
type target struct {
	ns, name string
	obj      map[string]any
}

// resolvedSet is an object template resolved for each of its targets.
type resolvedSet struct {
	objects []*objectTemplate
	// skipped says that skipObject skipped some targets.
	skipped bool
	// sensitive says that some resolution read a Secret or decrypted a value.
	sensitive bool
}

// evaluateTemplates resolves the object templates of the policy — those
// object-templates-raw yields, when set — evaluates each, and returns them
// with their outcomes. A failure of the whole policy (object-templates-raw,
// the encryption key) is the only outcome, and nothing is written.
func (e *evaluation) evaluateTemplates(ctx context.Context) ([]policyv1.ObjectTemplate, []templateOutcome) {
	rs, ots, failed := e.resolveTemplates(ctx)
	if failed != nil {
		return nil, []templateOutcome{*failed}
	}
	outcomes := make([]templateOutcome, 0, len(ots))
	for i, ot := range ots {
		outcomes = append(outcomes, e.evaluateOne(ctx, rs, i, ot))
	}
	return ots, outcomes
}

// evaluateOne evaluates object template index, sensitively when
// object-templates-raw yielded it from a Secret or an encrypted value.
func (e *evaluation) evaluateOne(ctx context.Context, rs *resolution, index int, ot policyv1.ObjectTemplate) templateOutcome {
	if rs == nil || !rs.sensitive {
		return e.evaluateTemplate(ctx, rs, index, ot)
	}
	switch ot.RecordDiff {
	case policyv1.RecordDiffLog:
		ot.RecordDiff = policyv1.RecordDiffInStatus // the notice that the diff is redacted, never a log line
	case "":
		ot.RecordDiff = recordDiffCensored // as OCM, unset on a template that reads sensitive data
	}
	var objects []*objectTemplate
	if t, terr := parseTemplate(e.policy.Name, index, ot); terr == nil {
		objects = append(objects, t)
	}
	return e.sensitively([]byte(e.policy.Spec.ObjectTemplatesRaw), objects, func() templateOutcome {
		return e.evaluateTemplate(ctx, rs, index, ot)
	})
}

// resolveTemplates returns the resolution of this evaluation (nil when the
// policy has no Go templates or disables them) and the object templates.
func (e *evaluation) resolveTemplates(ctx context.Context) (*resolution, []policyv1.ObjectTemplate, *templateOutcome) {
	templating.QuietLibraryLog() // before the library's first call, which logs what it looks at
	spec := e.policy.Spec
	raw := []byte(spec.ObjectTemplatesRaw)
	if templatesDisabled(e.policy) || !hasManagedTemplates(spec) {
		if len(raw) == 0 {
			return nil, spec.ObjectTemplates, nil
		}
		ots, failed := e.parseRaw(raw)
		return nil, ots, failed
	}
	rs, failed := e.newResolution(ctx)
	if failed != nil {
		return nil, nil, failed
	}
	if len(raw) == 0 {
		return rs, spec.ObjectTemplates, nil
	}
	ots, failed := e.resolveRaw(rs, raw)
	return rs, ots, failed
}

// templatesDisabled says whether the policy turns template resolution off
// with templating.DisableTemplatesAnnotation.
func templatesDisabled(policy *policyv1.ConfigurationPolicy) bool {
	disabled, err := strconv.ParseBool(policy.Annotations[templating.DisableTemplatesAnnotation])
	return err == nil && disabled
}

func hasManagedTemplates(spec policyv1.ConfigurationPolicySpec) bool {
	return templating.HasManagedTemplate([]byte(spec.ObjectTemplatesRaw)) ||
		slices.ContainsFunc(spec.ObjectTemplates, func(ot policyv1.ObjectTemplate) bool {
			return templating.HasManagedTemplate(ot.ObjectDefinition.Raw)
		})
}

func hasEncryptedValues(spec policyv1.ConfigurationPolicySpec) bool {
	prefix := []byte(encryptedPrefix)
	return bytes.Contains([]byte(spec.ObjectTemplatesRaw), prefix) ||
		slices.ContainsFunc(spec.ObjectTemplates, func(ot policyv1.ObjectTemplate) bool {
			return bytes.Contains(ot.ObjectDefinition.Raw, prefix)
		})
}

func hasTemplate(s string) bool {
	return templating.HasManagedTemplate([]byte(s))
}

// newResolution prepares the resolution of this evaluation: the caching
// resolver on the Reconciler's dynamic watcher (sharing the policy's query
// batch) when watching, else a resolver that reads from the API server;
// and the decryption key when the policy holds encrypted values.
func (e *evaluation) newResolution(ctx context.Context) (*resolution, *templateOutcome) {
	rs := &resolution{opts: templates.ResolveOptions{DenylistFunctions: templating.Denylist(e.r.TemplateFuncDenylist)}}
	var err error
	if e.watching {
		id := watcherID(types.NamespacedName{Namespace: e.policy.Namespace, Name: e.policy.Name})
		rs.opts.Watcher = &id
		rs.lib, err = templates.NewResolverWithDynamicWatcher(e.r.watcher, templates.Config{SkipBatchManagement: true})
	} else {
		rs.lib, err = templates.NewResolverWithClients(e.r.dynamic, e.r.discovery, templates.Config{})
	}
	if err != nil {
		e.transient = append(e.transient, fmt.Errorf("creating the template resolver: %w", err))
		out := errorOutcome("", ReasonTemplateError, "failed to instantiate the template resolver: "+err.Error())
		return nil, &out
	}
	if !hasEncryptedValues(e.policy.Spec) {
		return rs, nil
	}
	config, failed := e.encryptionConfig(ctx)
	if failed != nil {
		return nil, failed
	}
	rs.opts.EncryptionConfig = config
	return rs, nil
}

// resolveRaw resolves object-templates-raw into the object templates it
// yields.
func (e *evaluation) resolveRaw(rs *resolution, raw []byte) ([]policyv1.ObjectTemplate, *templateOutcome) {
	rs.fromRaw = true
	opts := rs.opts
	opts.InputIsYAML = true
	res, err := rs.lib.ResolveTemplate(raw, nil, &opts)
	var ots []policyv1.ObjectTemplate
	if err == nil {
		if uerr := json.Unmarshal(res.ResolvedJSON, &ots); uerr != nil {
			err = fmt.Errorf("failed unmarshalling resolved object-templates-raw template: %w", uerr)
		}
	}
	if err != nil {
		out := e.templateFailure("", err)
		return nil, &out
	}
	rs.sensitive = res.HasSensitiveData
	return ots, nil
}

// parseRaw reads object-templates-raw that holds no Go templates (or whose
// templates are disabled).
func (e *evaluation) parseRaw(raw []byte) ([]policyv1.ObjectTemplate, *templateOutcome) {
	var ots []policyv1.ObjectTemplate
	if err := yaml.Unmarshal(raw, &ots); err != nil {
		msg := fmt.Sprintf("Error parsing object-templates-raw YAML: %v", err)
		e.invalid = append(e.invalid, msg)
		out := errorOutcome("", ReasonTemplateError, msg)
		return nil, &out
	}
	return ots, nil
}

// templated says whether ot is resolved object by object: it holds Go
// templates or encrypted values, templates are enabled, and it does not
// come from object-templates-raw (already resolved).
func (rs *resolution) templated(ot policyv1.ObjectTemplate) bool {
	return rs != nil && !rs.fromRaw && templating.HasManagedTemplate(ot.ObjectDefinition.Raw)
}

// resolve resolves raw, an object definition, in context.
func (rs *resolution) resolve(raw []byte, context any) (resolved, error) {
	var r resolved
	opts := rs.opts
	opts.CustomFunctions = template.FuncMap{"skipObject": skipObjectFunc(&r.skip)}
	res, err := rs.lib.ResolveTemplate(raw, context, &opts)
	r.json, r.sensitive = res.ResolvedJSON, res.HasSensitiveData
	return r, err
}

// skipObjectFunc is OCM's skipObject template function: with no argument
// or true, the object is skipped.
//
// Note: unlike OCM's, its error names the type of a wrong argument, not
// its value, which may come from a Secret.
func skipObjectFunc(skip *bool) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		switch len(args) {
		case 0:
			*skip = true
		case 1:
			b, ok := args[0].(bool)
			if !ok {
				return "", fmt.Errorf("expected boolean but received a value of type %T", args[0])
			}
			*skip = *skip || b
		default:
			return "", fmt.Errorf("expected one optional boolean argument but received %d arguments", len(args))
		}
		return "", nil
	}
}

// skippedOr returns, for an object template whose kind is not served, a
// compliant outcome when its templates call skipObject (the kind then does
// not matter), and failed otherwise.
func (rs *resolution) skippedOr(ot policyv1.ObjectTemplate, t *objectTemplate, failed templateOutcome) templateOutcome {
	if !rs.templated(ot) {
		return failed
	}
	empty := struct {
		Object          map[string]any
		ObjectNamespace string
		ObjectName      string
	}{Object: map[string]any{}}
	if r, _ := rs.resolve(ot.ObjectDefinition.Raw, empty); r.skip {
		return templateOutcome{results: []objectResult{{compliant: true, message: fmt.Sprintf(msgAllSkipped, t.gvk.Kind)}}}
	}
	return failed
}

// templateContext is the context of a resolution for tg, with the
// variables OCM makes available for it.
func templateContext(tg target) any {
	switch {
	case tg.name != "" && tg.ns != "":
		return struct {
			Object          map[string]any
			ObjectNamespace string
			ObjectName      string
		}{Object: tg.obj, ObjectNamespace: tg.ns, ObjectName: tg.name}
	case tg.name != "":
		return struct {
			Object     map[string]any
			ObjectName string
		}{Object: tg.obj, ObjectName: tg.name}
	case tg.ns != "":
		return struct{ ObjectNamespace string }{ObjectNamespace: tg.ns}
	}
	return struct{}{}
}

// contextObject is obj as .Object shows it: without managedFields, whose
// "." keys the template library cannot take.
func contextObject(obj *unstructured.Unstructured) map[string]any {
	c := obj.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	return c.Object
}

// templateFailure is the outcome of a template that does not resolve, with
// OCM's message, and notes when to try again: a referenced object that does
// not exist waits for its watch (or the next interval); a kind not served
// is looked up again; the API server's other refusals, and the key
// Secret's problems when it is not watched, are retried with backoff; and
// everything else — a syntax error, a bad argument, a result that is not
// YAML — waits for the policy, or an object the templates read, to change.
func (e *evaluation) templateFailure(resource string, err error) templateOutcome {
	msg := templateErrorMessage(err)
	var status apierrors.APIStatus
	var netErr net.Error
	switch {
	case apierrors.IsNotFound(err):
	case errors.Is(err, templates.ErrMissingAPIResource):
		e.unknownKind = true
	case errors.Is(err, templates.ErrInvalidAESKey), errors.Is(err, templates.ErrAESKeyNotSet),
		errors.Is(err, templates.ErrInvalidPKCS7Padding):
		if !e.watching {
			e.transient = append(e.transient, errors.New(msg))
		}
	case errors.As(err, &status), errors.As(err, &netErr),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		e.transient = append(e.transient, errors.New(msg))
	default:
		e.invalid = append(e.invalid, msg)
	}
	return errorOutcome(resource, ReasonTemplateError, msg)
}

// templateErrorMessage is the compliance message of a resolution error, as
// OCM words it. The library's errors carry the template as written, never
// a resolved or decrypted value.
func templateErrorMessage(err error) string {
	switch {
	case errors.Is(err, templates.ErrInvalidAESKey), errors.Is(err, templates.ErrAESKeyNotSet):
		return `The "` + templating.EncryptionKeySecret + `" Secret contains an invalid AES key`
	case errors.Is(err, templates.ErrInvalidIV):
		return `The "` + templating.IVAnnotation + `" annotation value is not a valid initialization vector`
	case errors.Is(err, depclient.ErrResourceUnwatchable):
		return err.Error() + " - this template may require evaluationInterval to be set"
	}
	return err.Error()
}

// settle reads the definition resolved for tg as the object template to
// evaluate: the name and namespace come from tg where the definition has
// none, and must agree with the selectors.
func (e *evaluation) settle(index int, ot policyv1.ObjectTemplate, t *objectTemplate, gvr depclient.ScopedGVR,
	tg target, resolvedJSON []byte,
) (*objectTemplate, *templateError) {
	ot.ObjectDefinition = runtime.RawExtension{Raw: resolvedJSON}
	d, terr := parseTemplate(e.policy.Name, index, ot)
	if terr != nil {
		return nil, terr
	}
	d.name, d.namespace = strings.TrimSpace(cmp.Or(d.name, tg.name)), strings.TrimSpace(cmp.Or(d.namespace, tg.ns))
	if !gvr.Namespaced {
		d.namespace = ""
	}
	sel := e.policy.Spec.NamespaceSelector
	switch {
	case (len(sel.Include) > 0 || sel.LabelSelector != nil) && d.namespace != tg.ns:
		return nil, &templateError{ReasonTemplateError, "The object definition's namespace must match the result " +
			"from the namespace selector after template resolution"}
	case gvr.Namespaced && d.namespace == "":
		name := ""
		if t.name != "" && !hasTemplate(t.name) {
			name = " " + t.name
		}
		return nil, &templateError{ReasonTemplateError, fmt.Sprintf("namespaced object%s of kind %s has no namespace "+
			"specified after template resolution", name, t.gvk.Kind)}
	case ot.ObjectSelector != nil && d.name != tg.name:
		return nil, &templateError{ReasonTemplateError, "The object definition's name must match the result " +
			"from the object selector after template resolution"}
	}
	setIdentity(d.object, d.name, d.namespace)
	return d, nil
}

// setIdentity sets the name and namespace (when not empty) in the
// metadata of obj.
func setIdentity(obj map[string]any, name, ns string) {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	if name != "" {
		meta["name"] = name
	}
	if ns != "" {
		meta["namespace"] = ns
	}
}
