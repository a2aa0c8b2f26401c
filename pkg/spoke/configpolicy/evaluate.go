package configpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compare"
)

// Reasons of objects the API server refused to change (enforce).
const (
	// ReasonCreateError: the object could not be created.
	ReasonCreateError = "K8s creation error"
	// ReasonUpdateError: the object could not be updated.
	ReasonUpdateError = "K8s update template error"
	// ReasonDeleteError: the object could not be deleted.
	ReasonDeleteError = "K8s deletion error"
	// ReasonGetError: the object could not be read.
	ReasonGetError = "K8s get error"
)

var (
	namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	namespaceGVR = depclient.ScopedGVR{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}}
	crdGVK       = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	crdGVR       = depclient.ScopedGVR{GroupVersionResource: schema.GroupVersionResource{
		Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}}
)

// evaluation is one evaluation of one ConfigurationPolicy: what it reads
// with, and what it learns besides the outcomes.
type evaluation struct {
	r       *Reconciler
	policy  *policyv1.ConfigurationPolicy
	enforce bool
	reader  objectReader
	// watching says that reader watches what it reads.
	watching bool
	// previous are the related objects of the last evaluation, whose
	// createdByPolicy facts carry over while the object's UID is the same.
	previous map[policyv1.ObjectResource]policyv1.RelatedObject
	// unknownKind says that a template's kind is not served (yet).
	unknownKind bool
	// transient are failures worth retrying.
	transient []error
	// invalid say why templates cannot be applied until the policy changes.
	invalid []string
	// chosen are the namespaces the namespaceSelector chose, when a template
	// asked it (chose).
	chosen []string
	chose  bool
}

// objectOutcome is the evaluation of one object: its result, the object as
// it is afterwards (nil if absent), whether it matched only once the API
// server's defaults were applied, and how it differed.
type objectOutcome struct {
	result      objectResult
	obj         *unstructured.Unstructured
	dryRunMatch bool
	// diff is the difference from the template, under recordDiff InStatus.
	diff string
	// replacedUID is the UID of the object a recreate deleted.
	replacedUID types.UID
}

// run evaluates every object template of the policy, its Go templates
// and object-templates-raw resolved (resolve.go).
func (e *evaluation) run(ctx context.Context) []templateOutcome {
	_, outcomes := e.evaluateTemplates(ctx)
	return outcomes
}

// evaluateTemplate evaluates object template index; rs resolves its Go
// templates (nil: none to resolve).
func (e *evaluation) evaluateTemplate(ctx context.Context, rs *resolution, index int, ot policyv1.ObjectTemplate) templateOutcome {
	t, terr := parseTemplate(e.policy.Name, index, ot)
	if terr != nil {
		e.invalid = append(e.invalid, terr.message)
		return errorOutcome("", terr.reason, terr.message)
	}
	gvr, failed := e.mapping(ctx, t)
	if failed != nil {
		return rs.skippedOr(ot, t, *failed)
	}
	if rs.templated(ot) {
		return e.evaluateResolved(ctx, rs, index, ot, t, gvr)
	}
	namespaces, terr := e.namespacesFor(ctx, t, gvr)
	if terr != nil {
		return errorOutcome(gvr.Resource, terr.reason, terr.message)
	}
	if t.name == "" && t.selector != nil {
		return e.evaluateSelected(ctx, t, gvr, namespaces)
	}
	out := templateOutcome{resource: gvr.Resource}
	for _, ns := range namespaces {
		if t.name != "" {
			e.evaluateNamed(ctx, t, gvr, ns, &out)
		} else {
			e.evaluateUnnamed(ctx, t, gvr, ns, &out)
		}
	}
	return out
}

// mapping resolves the template's kind through discovery. A kind the
// cluster does not serve makes the template NonCompliant, and the policy is
// looked at again when a CRD of that kind appears.
func (e *evaluation) mapping(ctx context.Context, t *objectTemplate) (depclient.ScopedGVR, *templateOutcome) {
	gvr, err := e.r.watcher.GVKToGVR(t.gvk)
	switch {
	case err == nil, errors.Is(err, depclient.ErrResourceUnwatchable):
		return gvr, nil
	case errors.Is(err, depclient.ErrNoVersionedResource):
		e.awaitKind(ctx, t.gvk)
		out := errorOutcome("", ReasonMappingError, fmt.Sprintf("couldn't find mapping resource with kind %s in API "+
			"version %s, please check if you have CRD deployed", t.gvk.Kind, t.gvk.GroupVersion()))
		return gvr, &out
	default:
		e.transient = append(e.transient, fmt.Errorf("finding the API resource of %s: %w", t.gvk, err))
		out := errorOutcome("", ReasonMappingError, fmt.Sprintf("Error finding the API resource of kind %s in API "+
			"version %s: %v", t.gvk.Kind, t.gvk.GroupVersion(), err))
		return gvr, &out
	}
}

// awaitKind notes that gvk is not served and, when watching, watches the
// CustomResourceDefinition that would serve it, by its conventional name.
func (e *evaluation) awaitKind(ctx context.Context, gvk schema.GroupVersionKind) {
	e.unknownKind = true
	if !e.watching || gvk.Group == "" {
		return
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	if _, err := e.reader.get(ctx, crdGVR, crdGVK, "", plural.Resource+"."+gvk.Group); err != nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Cannot watch for the CRD of a missing kind", "kind", gvk.String(), "error", err.Error())
	}
}

// namespacesFor returns the namespaces to evaluate t in: "" for a
// cluster-scoped kind, the template's namespace, or those the policy's
// namespaceSelector chooses.
func (e *evaluation) namespacesFor(ctx context.Context, t *objectTemplate, gvr depclient.ScopedGVR) ([]string, *templateError) {
	sel := e.policy.Spec.NamespaceSelector
	switch {
	case !gvr.Namespaced:
		return []string{""}, nil
	case t.namespace != "":
		return []string{t.namespace}, nil
	case len(sel.Include) == 0 && sel.LabelSelector == nil:
		terr := missingNamespace(t)
		e.invalid = append(e.invalid, terr.message)
		return nil, terr
	}
	parsed, err := parseNamespaceSelector(sel)
	if err != nil {
		msg := fmt.Sprintf("Error filtering namespaces with provided namespaceSelector: %v", err)
		e.invalid = append(e.invalid, msg)
		return nil, &templateError{ReasonNamespaceSelectorError, msg}
	}
	all, err := e.namespaces(ctx)
	if err != nil {
		e.transient = append(e.transient, err)
		return nil, &templateError{ReasonNamespaceSelectorError, fmt.Sprintf("Error listing namespaces: %v", err)}
	}
	names := parsed.selectNamespaces(all)
	e.chosen, e.chose = names, true
	if len(names) == 0 {
		return nil, missingNamespace(t)
	}
	return names, nil
}

func missingNamespace(t *objectTemplate) *templateError {
	name := ""
	if t.name != "" {
		name = " " + t.name
	}
	return &templateError{ReasonMissingNamespace, fmt.Sprintf("namespaced object%s of kind %s has no namespace "+
		"specified from the policy namespaceSelector nor the object metadata", name, t.gvk.Kind)}
}

func (e *evaluation) namespaces(ctx context.Context) ([]namespace, error) {
	objs, err := e.reader.list(ctx, namespaceGVR, namespaceGVK, "", nil)
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	out := make([]namespace, 0, len(objs))
	for _, o := range objs {
		out = append(out, namespace{name: o.GetName(), labels: o.GetLabels(), terminating: o.GetDeletionTimestamp() != nil})
	}
	return out, nil
}

// evaluateNamed evaluates the object t names in namespace ns.
func (e *evaluation) evaluateNamed(ctx context.Context, t *objectTemplate, gvr depclient.ScopedGVR, ns string, out *templateOutcome) {
	existing, err := e.reader.get(ctx, gvr, t.gvk, ns, t.name)
	var o objectOutcome
	switch {
	case err != nil:
		e.transient = append(e.transient, err)
		o.result = objectResult{reason: ReasonGetError,
			message: fmt.Sprintf("Error getting %s %s: %v", gvr.Resource, identifier(t.name, ns), err)}
	case t.complianceType.IsMustNotHave():
		o = e.mustNotHave(ctx, t, gvr, existing)
	case existing == nil:
		o = e.missing(ctx, t, gvr, ns)
	default:
		o = e.found(ctx, t, gvr, existing)
	}
	o.result.namespace, o.result.names = ns, []string{t.name}
	e.add(out, t, ns, t.name, o)
}

// evaluateUnnamed evaluates the objects of t's kind in namespace ns (those
// its objectSelector selects): for musthave and mustonlyhave one matching
// object complies; for mustnothave none may match.
func (e *evaluation) evaluateUnnamed(ctx context.Context, t *objectTemplate, gvr depclient.ScopedGVR, ns string, out *templateOutcome) {
	objs, err := e.reader.list(ctx, gvr, t.gvk, ns, t.selector)
	if err != nil {
		e.transient = append(e.transient, err)
		out.results = append(out.results, objectResult{namespace: ns, reason: ReasonGetError,
			message: fmt.Sprintf("Error listing %s%s: %v", gvr.Resource, inNamespace(ns), err)})
		return
	}
	var matching []*unstructured.Unstructured
	present := 0
	for i := range objs {
		if objs[i].GetDeletionTimestamp() != nil {
			continue
		}
		present++
		if e.matches(t, &objs[i]) {
			matching = append(matching, &objs[i])
		}
	}
	slices.SortFunc(matching, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	mustNot := t.complianceType.IsMustNotHave()
	if len(matching) == 0 {
		res := objectResult{namespace: ns, reason: ReasonNotFound}
		switch {
		case mustNot:
			res.reason, res.compliant = ReasonNotFoundAsExpected, true
		case present > 0:
			res.reason = ReasonFoundNoMatch
		}
		out.results = append(out.results, res)
		apiVersion, kind := t.gvk.ToAPIVersionAndKind()
		out.related = append(out.related, relatedObject(apiVersion, kind, ns, condensedName, res.compliant, res.reason, nil))
		return
	}
	for _, obj := range matching {
		o := objectOutcome{result: objectResult{reason: ReasonFoundAsExpected, compliant: true}, obj: obj}
		if mustNot {
			o = e.mustNotHave(ctx, t, gvr, obj)
		}
		o.result.namespace, o.result.names = ns, []string{obj.GetName()}
		e.add(out, t, ns, obj.GetName(), o)
	}
}

// condensedName names, in a related object, none of the objects of a
// template without a name: the objects of its kind in that namespace, when
// none matches (OCM's "-").
const condensedName = "-"

// evaluateSelected evaluates a template without a name whose
// objectSelector chooses its objects, as OCM does: each object the selector
// selects in the namespaces is evaluated as if the template named it (so
// enforce updates or recreates every one). A mustnothave template concerns
// only the selected objects that match it; when none does, it complies in
// every namespace and lists the selected objects. When the selector selects
// nothing, the template complies and lists nothing.
func (e *evaluation) evaluateSelected(ctx context.Context, t *objectTemplate, gvr depclient.ScopedGVR, namespaces []string) templateOutcome {
	out := templateOutcome{resource: gvr.Resource}
	var selected []*unstructured.Unstructured
	for _, ns := range namespaces {
		objs, err := e.reader.list(ctx, gvr, t.gvk, ns, t.selector)
		if err != nil {
			e.transient = append(e.transient, err)
			return errorOutcome(gvr.Resource, ReasonGetError, fmt.Sprintf("Error listing %s%s: %v", gvr.Resource, inNamespace(ns), err))
		}
		for i := range objs {
			selected = append(selected, &objs[i])
		}
	}
	if len(selected) == 0 {
		out.results = []objectResult{{compliant: true,
			message: fmt.Sprintf("No objects of kind %s were matched from the policy objectSelector", t.gvk.Kind)}}
		return out
	}
	slices.SortFunc(selected, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	if t.complianceType.IsMustNotHave() {
		e.selectedMustNotHave(ctx, t, gvr, namespaces, selected, &out)
		return out
	}
	for _, obj := range selected {
		named := t.named(obj.GetName())
		o := e.found(ctx, named, gvr, obj)
		o.result.namespace, o.result.names = obj.GetNamespace(), []string{obj.GetName()}
		e.add(&out, named, obj.GetNamespace(), obj.GetName(), o)
	}
	return out
}

// selectedMustNotHave evaluates a mustnothave template over the objects its
// objectSelector selected.
func (e *evaluation) selectedMustNotHave(ctx context.Context, t *objectTemplate, gvr depclient.ScopedGVR, namespaces []string,
	selected []*unstructured.Unstructured, out *templateOutcome,
) {
	targeted := slices.DeleteFunc(slices.Clone(selected), func(obj *unstructured.Unstructured) bool { return !e.matches(t, obj) })
	if len(targeted) == 0 {
		for _, ns := range namespaces {
			out.results = append(out.results, objectResult{namespace: ns, reason: ReasonNotFoundAsExpected, compliant: true})
		}
		apiVersion, kind := t.gvk.ToAPIVersionAndKind()
		for _, obj := range selected {
			out.related = append(out.related, relatedObject(apiVersion, kind, obj.GetNamespace(), obj.GetName(), true, "", nil))
		}
		return
	}
	for _, obj := range targeted {
		named := t.named(obj.GetName())
		o := e.mustNotHave(ctx, named, gvr, obj)
		o.result.namespace, o.result.names = obj.GetNamespace(), []string{obj.GetName()}
		e.add(out, named, obj.GetNamespace(), obj.GetName(), o)
	}
}

// named returns t for the object called name: a copy whose object
// definition carries the name, so that a recreate creates that object.
func (t *objectTemplate) named(name string) *objectTemplate {
	c := *t
	c.name = name
	c.object = compare.DeepCopy(t.object).(map[string]any)
	meta, _ := c.object["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		c.object["metadata"] = meta
	}
	meta["name"] = name
	return &c
}

func (e *evaluation) matches(t *objectTemplate, obj *unstructured.Unstructured) bool {
	mode, metadataMode := t.mode, t.metadataMode
	if t.complianceType.IsMustNotHave() {
		mode, metadataMode = Subset, Subset
	}
	ok, _ := compareObject(t.object, obj.Object, mode, metadataMode)
	return ok
}

// missing handles a musthave or mustonlyhave object that does not exist.
func (e *evaluation) missing(ctx context.Context, t *objectTemplate, gvr depclient.ScopedGVR, ns string) objectOutcome {
	if !e.enforce {
		return objectOutcome{result: objectResult{reason: ReasonNotFound}}
	}
	obj := &unstructured.Unstructured{Object: t.newObject(ns)}
	created, err := resourceFor(e.r.dynamic, gvr, ns).Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	if apierrors.IsAlreadyExists(err) { // the watcher's cache lags: handle the object there is
		if existing, getErr := (directReader{client: e.r.dynamic}).get(ctx, gvr, t.gvk, ns, t.name); getErr == nil && existing != nil {
			return e.found(ctx, t, gvr, existing)
		}
	}
	if err != nil {
		if ns != "" && (apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)) {
			e.watchNamespace(ctx, ns) // created when the namespace is (again)
		}
		return objectOutcome{result: e.apiFailure(err, ReasonCreateError, fmt.Sprintf(
			"%s %s is missing, and cannot be created, reason: `%v`", gvr.Resource, identifier(t.name, ns), err))}
	}
	if _, hasStatus := t.object["status"]; hasStatus { // a new object's status is not there yet: see next time
		return objectOutcome{obj: created, result: objectResult{reason: ReasonCreatedStatusUnchecked, message: gvr.Resource + " " +
			identifier(t.name, ns) + " was created successfully, the status of the object will be verified in the next evaluation"}}
	}
	return objectOutcome{result: objectResult{reason: ReasonCreated, compliant: true}, obj: created}
}

// found handles a musthave or mustonlyhave object that exists. When the
// update conflicts — the watcher's cache may lag behind the API server —
// the object is read from the API server and handled once more.
func (e *evaluation) found(ctx context.Context, t *objectTemplate, gvr depclient.ScopedGVR, existing *unstructured.Unstructured) objectOutcome {
	o, err := e.fix(ctx, t, gvr, existing)
	if apierrors.IsConflict(err) {
		fresh, getErr := directReader{client: e.r.dynamic}.get(ctx, gvr, t.gvk, existing.GetNamespace(), existing.GetName())
		if getErr == nil && fresh != nil {
			o, err = e.fix(ctx, t, gvr, fresh)
		}
	}
	if err != nil {
		o.result = e.apiFailure(err, ReasonUpdateError, fmt.Sprintf(
			"Error updating the object `%s`, the error is `%v`", existing.GetName(), err))
	}
	return o
}

// fix compares an existing object with the template and, under enforce,
// updates it to comply; it returns the update's error. An object that
// differs only where the API server would put the same values back
// (defaults) or leave them out (zero values it omits) complies: a
// server-side dry-run update tells. So a zero value the template sets and
// the object lacks is a difference until the dry run says otherwise, as in
// OCM: an empty label the API server keeps is missing, an empty field it
// omits is not. An update the
// API server refuses as invalid (an immutable field) is a recreate under
// recreateOption IfRequired or Always, and otherwise a violation that waits
// for a change; Always recreates on every update (recreate.go).
func (e *evaluation) fix(ctx context.Context, t *objectTemplate, gvr depclient.ScopedGVR, existing *unstructured.Unstructured) (objectOutcome, error) {
	o := objectOutcome{result: objectResult{reason: ReasonFoundAsExpected, compliant: true}, obj: existing}
	matches, desired := compareObject(t.object, existing.Object, keysPresent(t.mode), keysPresent(t.metadataMode))
	switch {
	case matches:
		return o, nil
	case compare.Equal(desired, existing.Object): // only status differs: nothing to write, a diff to show
		return objectOutcome{result: objectResult{reason: ReasonFoundNoMatch}, obj: existing,
			diff: e.recordDiff(ctx, t, existing, withTemplateStatus(t, existing.Object, desired))}, nil
	}
	res := resourceFor(e.r.dynamic, gvr, existing.GetNamespace())
	want := &unstructured.Unstructured{Object: desired}
	dry, err := res.Update(ctx, want, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
	switch {
	case err == nil && sameCompared(t.object, dry.Object, existing.Object):
		o.dryRunMatch = true
		return o, nil
	case err != nil && !apierrors.IsInvalid(err) && !apierrors.IsConflict(err):
		return objectOutcome{result: e.apiFailure(err, ReasonUpdateError, dryRunFailure(existing.GetName(), err)), obj: existing}, nil
	}
	o = objectOutcome{result: objectResult{reason: ReasonFoundNoMatch}, obj: existing, diff: e.recordDiff(ctx, t, existing, desired)}
	if !e.enforce {
		return o, nil
	}
	switch recreateAction(t.recreate, err) {
	case actionRefuse:
		msg := gvr.Resource + " " + identifier(existing.GetName(), existing.GetNamespace()) + immutableMessage
		e.invalid = append(e.invalid, msg)
		o.result = objectResult{reason: ReasonUpdateError, message: msg}
		return o, nil
	case actionRecreate:
		return e.recreate(ctx, t, gvr, existing, o)
	}
	updated, err := res.Update(ctx, want, metav1.UpdateOptions{FieldValidation: metav1.FieldValidationStrict})
	if err != nil {
		return o, err
	}
	o.obj = updated
	if tv, ok := t.object["status"]; ok && !compare.Matches(tv, updated.Object["status"], t.mode) {
		return o, nil // updated, and still not as specified: the status, which no update writes, differs
	}
	o.result = objectResult{reason: ReasonUpdated, compliant: true}
	return o, nil
}

// recordDiff returns the difference between existing and desired when the
// template's recordDiff is InStatus (the default of most kinds,
// recordDiffFor), logs it when it is Log, and returns censoredDiff when it
// is censored.
func (e *evaluation) recordDiff(ctx context.Context, t *objectTemplate, existing *unstructured.Unstructured, desired map[string]any) string {
	switch recordDiffFor(t.recordDiff, t.gvk) {
	case recordDiffCensored:
		return censoredDiff
	case policyv1.RecordDiffInStatus, policyv1.RecordDiffLog:
	default:
		return ""
	}
	id := existing.GetName()
	if ns := existing.GetNamespace(); ns != "" {
		id = ns + "/" + id
	}
	diff := objectDiff(id, existing.Object, desired)
	if t.recordDiff == policyv1.RecordDiffLog {
		ctrl.LoggerFrom(ctx).Info("Object differs from its template", "policy", klog.KObj(e.policy),
			"object", id, "kind", t.gvk.Kind, "diff", diff)
		return ""
	}
	return diff
}

// mustNotHave handles a mustnothave template: an object that matches it
// (with only a kind and name, any object of that name) violates it. An
// object being deleted counts as gone.
func (e *evaluation) mustNotHave(ctx context.Context, t *objectTemplate, gvr depclient.ScopedGVR, existing *unstructured.Unstructured) objectOutcome {
	if existing == nil || existing.GetDeletionTimestamp() != nil || !e.matches(t, existing) {
		return objectOutcome{result: objectResult{reason: ReasonNotFoundAsExpected, compliant: true}}
	}
	if !e.enforce {
		return objectOutcome{result: objectResult{reason: ReasonFoundUnwanted}, obj: existing}
	}
	uid := existing.GetUID()
	err := resourceFor(e.r.dynamic, gvr, existing.GetNamespace()).Delete(ctx, existing.GetName(),
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return objectOutcome{result: e.apiFailure(err, ReasonDeleteError, fmt.Sprintf(
			"%s %s exists, and cannot be deleted, reason: `%v`", gvr.Resource,
			identifier(existing.GetName(), existing.GetNamespace()), err)), obj: existing}
	}
	return objectOutcome{result: objectResult{reason: ReasonDeleted, compliant: true}}
}

// apiFailure is the result of a write the API server refused. Refusals
// that a retry cannot fix wait for a change of the policy (invalid objects)
// or of the cluster (forbidden, not found...); the others are retried with
// backoff.
func (e *evaluation) apiFailure(err error, reason, message string) objectResult {
	switch {
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		e.invalid = append(e.invalid, message)
	case !permanent(err):
		e.transient = append(e.transient, err)
	}
	return objectResult{reason: reason, message: message}
}

// dryRunFailure is OCM's message for a dry-run update of the object name
// that the API server refused for another reason than an invalid (such as
// immutable) field: a field the kind does not have is named by the strict
// decoding error.
func dryRunFailure(name string, err error) string {
	if strings.Contains(err.Error(), "strict decoding error:") {
		return fmt.Sprintf("Error validating the object %s, the error is `%v`", name, err)
	}
	return fmt.Sprintf("Error issuing a dry run update request for the object `%v`, the error is `%v`", name, err)
}

func permanent(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) ||
		apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) ||
		apierrors.IsUnsupportedMediaType(err) || apierrors.IsRequestEntityTooLargeError(err)
}

// watchNamespace watches namespace ns, when watching.
func (e *evaluation) watchNamespace(ctx context.Context, ns string) {
	if !e.watching {
		return
	}
	if _, err := e.reader.get(ctx, namespaceGVR, namespaceGVK, "", ns); err != nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Cannot watch a namespace", "namespace", ns, "error", err.Error())
	}
}

// add adds the outcome of one object to out. When the evaluation
// watches, the object itself is kept for customMessage (message.go).
func (e *evaluation) add(out *templateOutcome, t *objectTemplate, ns, name string, o objectOutcome) {
	out.results = append(out.results, o.result)
	switch o.result.reason {
	case ReasonCreated, ReasonCreatedStatusUnchecked, ReasonUpdated, ReasonDeleted:
		out.remediated = true
	}
	apiVersion, kind := t.gvk.ToAPIVersionAndKind()
	rel := relatedObject(apiVersion, kind, ns, name, o.result.compliant,
		relatedReason(o.result), e.properties(apiVersion, kind, ns, name, o))
	out.related = append(out.related, rel)
	if e.watching && o.obj != nil {
		if out.objects == nil {
			out.objects = map[policyv1.ObjectResource]map[string]any{}
		}
		out.objects[rel.Object] = o.obj.Object
	}
}

// relatedReason is the reason of a related object: the result's, or for
// errors the error's message.
func relatedReason(r objectResult) string {
	if _, known := phrases[r.reason]; known || r.message == "" {
		return r.reason
	}
	return r.message
}

// properties are the facts about an existing object that pruning needs:
// whether this policy created it (remembered while its UID is the same,
// and across a recreate by this policy).
func (e *evaluation) properties(apiVersion, kind, ns, name string, o objectOutcome) *policyv1.ObjectProperties {
	if o.obj == nil {
		return nil
	}
	uid := string(o.obj.GetUID())
	created := o.result.reason == ReasonCreated || o.result.reason == ReasonCreatedStatusUnchecked
	key := policyv1.ObjectResource{APIVersion: apiVersion, Kind: kind, Metadata: policyv1.ObjectMetadata{Name: name, Namespace: ns}}
	if prev, ok := e.previous[key]; ok && createdByPolicy(prev) &&
		(prev.Properties.UID == uid || prev.Properties.UID == string(o.replacedUID)) {
		created = true
	}
	diff := o.diff
	switch {
	case o.result.reason == ReasonUpdated && diff != "" && o.replacedUID == "": // updated in place, not recreated
		e.r.updates.remember(e.policy, key, o.obj.GetResourceVersion(), diff)
	case o.result.reason == ReasonFoundAsExpected && diff == "":
		diff = e.r.updates.diff(e.policy, key, o.obj.GetResourceVersion())
	}
	return &policyv1.ObjectProperties{CreatedByPolicy: &created, UID: uid, MatchesAfterDryRun: o.dryRunMatch, Diff: diff}
}

func identifier(name, ns string) string {
	return "[" + name + "]" + inNamespace(ns)
}

func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in namespace " + ns
}
