package hubtemplates

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// managedClusterGVK is the kind .ManagedClusterLabels is read from.
var managedClusterGVK = schema.GroupVersionKind{Group: clusterv1.GroupName, Version: "v1", Kind: "ManagedCluster"}

// templateContext is what hub templates see, with OCM's field names.
type templateContext struct {
	ManagedClusterName   string
	ManagedClusterLabels map[string]string
	PolicyMetadata       map[string]any
}

func newTemplateContext(root *policyv1.Policy, cluster string) templateContext {
	return templateContext{
		ManagedClusterName: cluster,
		PolicyMetadata: map[string]any{
			"annotations": root.Annotations,
			"labels":      root.Labels,
			"name":        root.Name,
			"namespace":   root.Namespace,
		},
	}
}

// hubResolverConfig is the library's configuration of every hub resolver:
// OCM's delimiters and indentation; query batches are the Cache's, one
// per replica resolution.
func hubResolverConfig(skipBatchManagement bool) templates.Config {
	return templates.Config{
		AdditionalIndentation: 8,
		StartDelim:            templating.HubStartDelim,
		StopDelim:             templating.HubStopDelim,
		SkipBatchManagement:   skipBatchManagement,
	}
}

// HasHubTemplates reports whether a policy template of root holds a hub
// template that is to be resolved.
func HasHubTemplates(root *policyv1.Policy) bool {
	if templatesDisabled(root) {
		return false
	}
	for _, t := range root.Spec.PolicyTemplates {
		if templating.HasHubTemplate(t.ObjectDefinition.Raw) {
			return true
		}
	}
	return false
}

// templatesDisabled reports whether root turns template resolution off
// with DisableTemplatesAnnotation.
func templatesDisabled(root *policyv1.Policy) bool {
	disabled, err := strconv.ParseBool(root.Annotations[templating.DisableTemplatesAnnotation])
	return err == nil && disabled
}

// serviceAccountOf returns the ServiceAccount whose permissions the hub
// templates of root use, or "" for the hub's own, confined ones.
func serviceAccountOf(root *policyv1.Policy) string {
	if o := root.Spec.HubTemplateOptions; o != nil {
		return o.ServiceAccountName
	}
	return ""
}

// resolveOptions confines lookups as OCM does: to the root's namespace and
// the cluster's own ManagedCluster, unless a ServiceAccount lends its
// permissions, which then decide alone.
func resolveOptions(root *policyv1.Policy, cluster string) templates.ResolveOptions {
	if serviceAccountOf(root) != "" {
		return templates.ResolveOptions{}
	}
	return templates.ResolveOptions{
		LookupNamespace: root.Namespace,
		ClusterScopedAllowList: []templates.ClusterScopedObjectIdentifier{
			{Group: clusterv1.GroupName, Kind: "ManagedCluster", Name: cluster},
		},
	}
}

// templateRun resolves the hub templates of one replica.
type templateRun struct {
	resolver *templates.TemplateResolver
	options  templates.ResolveOptions
	context  templateContext
	// labels returns the ManagedCluster's labels for a template that
	// mentions .ManagedClusterLabels. Nil means they are read through the
	// resolver's watcher instead (a context transformer), so that a label
	// change resolves the replica again.
	labels func() (map[string]string, error)
	// key returns the cluster's AES key; the first template that encrypts
	// calls it.
	key func() ([]byte, error)
	// iv is the IV annotation the replica carries, reused when valid so that
	// unchanged inputs encrypt to the same values.
	iv string
	// read returns the objects the replica's templates read so far, so that
	// a result can be searched for the values of the Secrets among them
	// (checkSensitive). Nil: unknown, and a result that read a Secret fails.
	read func() ([]unstructured.Unstructured, error)

	aesKey []byte
}

// Result is the outcome of resolving the hub templates of one replica. It
// never holds a half-resolved template: each is resolved completely or left
// as the root wrote it, with the error annotated.
type Result struct {
	// defs are the objectDefinitions of the replica, by template index; nil
	// keeps the root's.
	defs [][]byte
	// iv is the replica's IV annotation, set when a template encrypts.
	iv string
	// Failures are the errors of the templates that failed, in order; the
	// definitions of those carry HubTemplatesErrorAnnotation.
	Failures []Failure
	// Retry is a failure to resolve again with backoff.
	Retry error
	// Hold means Retry came before a complete result: the replica is not
	// written this time.
	Hold bool
}

// Failure is the error of the policy template at Index.
type Failure struct {
	// Index is the template's index in spec.policy-templates.
	Index int
	// Message is the error as OCM annotates it: with the template as written.
	Message string
	// Summary is Message without the template, for conditions and events.
	Summary string
}

// run resolves the hub templates of policyTemplates.
func (t *templateRun) run(policyTemplates []policyv1.PolicyTemplate) Result {
	out := Result{defs: make([][]byte, len(policyTemplates))}
	for i := range policyTemplates {
		raw := policyTemplates[i].ObjectDefinition.Raw
		if !templating.HasHubTemplate(raw) {
			continue
		}
		def, err := t.resolveOne(raw, &out)
		switch {
		case err == nil:
			out.defs[i] = def
		case isTransient(err):
			return Result{Retry: err, Hold: true}
		default:
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				out.Retry = err // Note: no event tells when permissions are granted
			}
			if !out.fail(i, raw, err) {
				return out
			}
		}
	}
	return out
}

// resolveOne resolves one objectDefinition.
func (t *templateRun) resolveOne(raw []byte, out *Result) ([]byte, error) {
	opts, tctx := t.options, t.context
	if bytes.Contains(raw, []byte("ManagedClusterLabels")) {
		if t.labels == nil {
			opts.ContextTransformers = []func(templates.CachingQueryAPI, any) (any, error){managedClusterLabels(tctx.ManagedClusterName)}
		} else {
			labels, err := t.labels()
			if err != nil {
				return nil, err
			}
			tctx.ManagedClusterLabels = labels
		}
	}
	encrypt := usesEncryption(raw)
	if encrypt {
		config, err := t.encryption(out)
		if err != nil {
			return nil, err
		}
		opts.EncryptionConfig = config
	}
	res, err := t.resolver.ResolveTemplate(raw, tctx, &opts)
	if err != nil {
		return nil, &templateError{err: err, sensitive: res.HasSensitiveData}
	}
	if err := t.checkSensitive(res, encrypt); err != nil {
		return nil, err
	}
	if !encrypt {
		return res.ResolvedJSON, nil
	}
	def, err := withAnnotation(res.ResolvedJSON, templating.IVAnnotation, out.iv)
	if err != nil {
		return nil, &transientError{fmt.Errorf("annotating the resolved template with its IV: %w", err)}
	}
	return def, nil
}

// encryption returns the configuration of "protect", reading the key and
// choosing the replica's IV on first use.
func (t *templateRun) encryption(out *Result) (templates.EncryptionConfig, error) {
	if t.aesKey == nil {
		key, err := t.key()
		if err != nil {
			return templates.EncryptionConfig{}, &transientError{fmt.Errorf("getting the encryption key: %w", err)}
		}
		t.aesKey = key
	}
	if out.iv == "" {
		out.iv = t.iv
		if validIV(out.iv) == nil {
			iv, err := newIV()
			if err != nil {
				return templates.EncryptionConfig{}, &transientError{err}
			}
			out.iv = iv
		}
	}
	return templates.EncryptionConfig{EncryptionEnabled: true, AESKey: t.aesKey, InitializationVector: validIV(out.iv)}, nil
}

// fail records the failure of template i and leaves its objectDefinition
// as the root wrote it, annotated with the error. It returns false, with
// out on hold, when the definition cannot be annotated.
func (out *Result) fail(i int, raw []byte, err error) bool {
	msg := err.Error()
	def, annotateErr := withAnnotation(raw, templating.HubTemplatesErrorAnnotation, msg)
	if annotateErr != nil {
		out.Retry, out.Hold = fmt.Errorf("policy template %d: annotating the error %q: %w", i, msg, annotateErr), true
		return false
	}
	out.defs[i] = def
	summary := strings.Replace(msg, " "+string(raw)+":", ":", 1)
	out.Failures = append(out.Failures, Failure{Index: i, Message: msg, Summary: summary})
	return true
}

// failAll is the outcome when no template could be resolved: every policy
// template with a hub template carries err.
func failAll(policyTemplates []policyv1.PolicyTemplate, err error) Result {
	out := Result{defs: make([][]byte, len(policyTemplates))}
	for i := range policyTemplates {
		raw := policyTemplates[i].ObjectDefinition.Raw
		if templating.HasHubTemplate(raw) && !out.fail(i, raw, err) {
			break
		}
	}
	return out
}

// ApplyTo writes the outcome into replica, a replica replica.Build made.
//
// Note: it copies the definitions, which may be remembered: decoding a
// response into the replica reuses the bytes of its RawExtensions.
func (out Result) ApplyTo(replica *policyv1.Policy) {
	for i, def := range out.defs {
		if def != nil && i < len(replica.Spec.PolicyTemplates) {
			replica.Spec.PolicyTemplates[i].ObjectDefinition.Raw = bytes.Clone(def)
		}
	}
	if out.iv != "" {
		replica.Annotations[templating.IVAnnotation] = out.iv
	}
}

// Err joins the failures of the outcome, naming their templates.
func (out Result) Err() error {
	errs := make([]error, 0, len(out.Failures)+1)
	if out.Hold {
		errs = append(errs, out.Retry)
	}
	for _, f := range out.Failures {
		errs = append(errs, fmt.Errorf("policy template %d: %s", f.Index, f.Message))
	}
	return errors.Join(errs...)
}

// managedClusterLabels is OCM's context transformer: it reads the labels
// of the cluster's ManagedCluster through the resolver's watcher.
func managedClusterLabels(cluster string) func(templates.CachingQueryAPI, any) (any, error) {
	return func(api templates.CachingQueryAPI, ctx any) (any, error) {
		tctx, ok := ctx.(templateContext)
		if !ok {
			return ctx, nil
		}
		mc, err := api.Get(managedClusterGVK, "", cluster)
		if err != nil {
			return ctx, err
		}
		if mc == nil {
			return ctx, apierrors.NewNotFound(clusterv1.Resource("managedclusters"), cluster)
		}
		tctx.ManagedClusterLabels = mc.GetLabels()
		return tctx, nil
	}
}

// withAnnotation returns the JSON object raw with metadata.annotations[key]
// set to value.
func withAnnotation(raw []byte, key, value string) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, errors.New("the object definition is not a JSON object")
	}
	metadata, _ := obj["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
	}
	annotations, _ := metadata["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
	}
	annotations[key] = value
	metadata["annotations"] = annotations
	obj["metadata"] = metadata
	return json.Marshal(obj)
}

// AnnotationOf returns metadata.annotations[key] of the JSON object raw,
// a policy template's objectDefinition.
func AnnotationOf(raw []byte, key string) string {
	var obj struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &obj) // Note: anything undecodable has no annotation
	return obj.Metadata.Annotations[key]
}

// templateError is a failed resolution. Its message is the library's,
// unless the template read a Secret before failing: then what the failing
// function or action said, which may quote the value, is withheld.
type templateError struct {
	err       error
	sensitive bool
}

func (e *templateError) Error() string {
	if !e.sensitive {
		return e.err.Error()
	}
	return withheld(e.err.Error())
}

func (e *templateError) Unwrap() error { return e.err }

// withheldNote replaces what a failure after reading a Secret said.
const withheldNote = "the error is withheld because the template read a Secret"

// withheld keeps of a Go template execution error its position and action
// ("template: tmpl:3:14: executing "tmpl" at <fromJson ...>"), both from the
// template as written, and the name of the function that failed, and drops
// the rest, which can quote values.
func withheld(msg string) string {
	_, rest, ok := strings.Cut(msg, " at <")
	end := strings.Index(rest, ">: ")
	if !ok || end < 0 {
		return "failed to resolve the template: " + withheldNote
	}
	kept := msg[:len(msg)-len(rest)+end+1]
	after := rest[end+len(">: "):]
	if fn, ok := strings.CutPrefix(after, "error calling "); ok {
		name, _, _ := strings.Cut(fn, ":")
		kept += ": error calling " + name
	}
	return kept + ": " + withheldNote
}

// transientError is a failure of the hub rather than of the template
// (reading the key, a query batch): it is retried with backoff and never
// written into a replica.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }

func (e *transientError) Unwrap() error { return e.err }

// isTransient reports whether err may go away by itself: OCM's retryable
// errors (a missing API resource, the API server failing or busy, a watch
// stopping) and the hub's own.
func isTransient(err error) bool {
	var te *transientError
	return errors.As(err, &te) ||
		errors.Is(err, templates.ErrMissingAPIResource) ||
		errors.Is(err, depclient.ErrWatchStopping) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err)
}
