package templatesync

import (
	"context"
	"errors"
	"fmt"
	"sync"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compare"
	"github.com/canopy-policy/canopy/pkg/depgraph"
	"github.com/canopy-policy/canopy/pkg/templatekinds"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// strict makes the API server refuse unknown and duplicate fields, so that
// a typo in a template is reported instead of silently dropped, as OCM's
// framework-addon asks since v0.17.0 (see refused).
var strict = client.FieldValidation("Strict")

// observe reads every dependency and template object of plan: those of
// local kinds from the informers (local.go), the others through the
// dependency watcher, which (re)starts watches on them and stops the
// watches this Policy no longer needs.
func (r *Reconciler) observe(ctx context.Context, policy *policyv1.Policy, plan []Template) (_ observation, retErr error) {
	id := watcherID(client.ObjectKeyFromObject(policy))
	release, err := r.watches.Hold(ctx) // waits for the watcher to start
	if err != nil {
		return observation{}, err
	}
	defer release() // the watcher never stops with this batch open
	if err := r.watcher.StartQueryBatch(id); err != nil {
		return observation{}, fmt.Errorf("starting the watch batch of policy %s: %w", klog.KObj(policy), err)
	}
	defer func() {
		if err := r.watcher.EndQueryBatch(id); err != nil {
			retErr = errors.Join(retErr, fmt.Errorf("ending the watch batch of policy %s: %w", klog.KObj(policy), err))
		}
	}()
	observed := observation{deps: map[depgraph.Key]Observation{}, templates: map[string]*unstructured.Unstructured{}}
	for _, t := range plan {
		if t.Object == nil {
			continue
		}
		for _, d := range t.Deps {
			if _, done := observed.deps[d.Key]; done {
				continue
			}
			o, err := r.observeOne(ctx, id, d.Key)
			if err != nil {
				return observation{}, fmt.Errorf("reading dependency %s: %w", d.Key, err)
			}
			observed.deps[d.Key] = o
		}
		// Watch the template too, so that one deleted or changed by hand is put back.
		obj, err := r.readTemplate(ctx, id, t.Object)
		if err != nil {
			ctrl.LoggerFrom(ctx).V(4).Info("Not watching template", "template", t.Name, "error", err.Error())
			continue
		}
		observed.templates[templateKey(t.Object)] = obj
	}
	return observed, nil
}

// observation is what observe read.
type observation struct {
	// deps are the dependencies' states.
	deps map[depgraph.Key]Observation
	// templates are the template objects as the informers or the
	// watcher's cache hold them, by templateKey: nil when absent. A
	// template that could not be read has no entry.
	templates map[string]*unstructured.Unstructured
}

// cachedTemplate returns the cached copy of desired's object, nil when it
// does not exist, and whether it was read at all.
func (o observation) cachedTemplate(desired *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	obj, read := o.templates[templateKey(desired)]
	return obj, read
}

func templateKey(u *unstructured.Unstructured) string {
	return u.GroupVersionKind().GroupKind().String() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// readTemplate reads the template object of desired: from the
// informers for a local kind, through (and so watched by) the dependency
// watcher otherwise. It is nil when the object does not exist.
func (r *Reconciler) readTemplate(ctx context.Context, id depclient.ObjectIdentifier, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if k := keyOf(desired); r.local(k) {
		return r.readLocal(ctx, k)
	}
	return r.watcher.Get(id, desired.GroupVersionKind(), desired.GetNamespace(), desired.GetName())
}

func (r *Reconciler) observeOne(ctx context.Context, id depclient.ObjectIdentifier, k depgraph.Key) (Observation, error) {
	if k.Version == "" || k.Kind == "" || k.Name == "" {
		return Observation{Unmapped: true}, nil
	}
	if r.local(k) {
		return r.observeLocal(ctx, k)
	}
	obj, err := r.watcher.Get(id, k.GroupVersionKind(), k.Namespace, k.Name)
	if errors.Is(err, depclient.ErrNoVersionedResource) {
		return Observation{Unmapped: true}, nil
	}
	if err != nil {
		return Observation{}, err
	}
	if obj == nil {
		return Observation{}, nil
	}
	state, _, _ := unstructured.NestedString(obj.Object, "status", "compliant")
	return Observation{Found: true, Compliance: policyv1.ComplianceState(state)}, nil
}

// write creates or updates the template object desired. It starts from
// the cached copy of the object when there is one (which spares an API read
// per template and reconcile), and reads the API server otherwise, or when
// the cached copy proved stale: a template created or changed a moment ago
// that the cache has not seen yet ends the write in AlreadyExists or a
// conflict, and is written once more from the API server's copy.
func (r *Reconciler) write(ctx context.Context, policy *policyv1.Policy, desired *unstructured.Unstructured, observed observation) error {
	existing, cached := observed.cachedTemplate(desired)
	if cached && existing != nil {
		existing = existing.DeepCopy() // the dependency watcher's cache is shared
	}
	if !cached {
		return r.writeLive(ctx, policy, desired)
	}
	err := r.writeOver(ctx, policy, desired, existing)
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return r.writeLive(ctx, policy, desired)
	}
	return err
}

// writeLive writes desired over the API server's copy of the object.
func (r *Reconciler) writeLive(ctx context.Context, policy *policyv1.Policy, desired *unstructured.Unstructured) error {
	existing, err := readObject(ctx, r.ManagedClient, desired.GroupVersionKind(), client.ObjectKeyFromObject(desired))
	if err != nil {
		return r.unmapped(ctx, policy, desired, err)
	}
	return r.writeOver(ctx, policy, desired, existing)
}

// writeOver creates desired when existing is nil, or makes existing carry
// desired (see refused for the API server's errors).
func (r *Reconciler) writeOver(ctx context.Context, policy *policyv1.Policy, desired, existing *unstructured.Unstructured) error {
	log := ctrl.LoggerFrom(ctx)
	if existing == nil {
		if err := r.ManagedClient.Create(ctx, desired.DeepCopy(), strict); err != nil {
			return r.refused(ctx, policy, desired, false, err)
		}
		log.Info("Created template", "policy", klog.KObj(policy), "kind", desired.GetKind(), "template", desired.GetName())
		return nil
	}
	if !ownedBy(policy, existing) {
		return r.record(ctx, policy, desired.GetName(), desired, policyv1.NonCompliant, conflictMessage(desired, ownerOf(existing)))
	}
	if !merge(existing, desired) {
		return nil
	}
	if err := r.ManagedClient.Update(ctx, existing, strict); err != nil {
		return r.refused(ctx, policy, desired, true, err)
	}
	log.Info("Updated template", "policy", klog.KObj(policy), "kind", desired.GetKind(), "template", desired.GetName())
	return nil
}

// ownedBy reports whether the template object obj is policy's: labelled
// with its name and, when cluster-scoped, with its namespace.
func ownedBy(policy *policyv1.Policy, obj *unstructured.Unstructured) bool {
	labels := obj.GetLabels()
	if labels[policyv1.PolicyLabel] != policy.Name {
		return false
	}
	return obj.GetNamespace() != "" || labels[policyv1.ClusterNamespaceLabel] == policy.Namespace
}

// ownerOf names the Policy the labels of obj give as its owner: its name,
// and for a cluster-scoped object its namespace too; empty when none.
func ownerOf(obj *unstructured.Unstructured) string {
	labels := obj.GetLabels()
	owner := labels[policyv1.PolicyLabel]
	if ns := labels[policyv1.ClusterNamespaceLabel]; obj.GetNamespace() == "" && owner != "" && ns != "" {
		return ns + "/" + owner
	}
	return owner
}

func conflictMessage(desired *unstructured.Unstructured, owner string) string {
	if owner == "" {
		return fmt.Sprintf("%s %s already exists and belongs to no policy: template names must be unique; nothing was overwritten",
			desired.GetKind(), desired.GetName())
	}
	return fmt.Sprintf("%s %s already exists and belongs to Policy %s: template names must be unique on the cluster; nothing was overwritten",
		desired.GetKind(), desired.GetName(), owner)
}

// refused reports a write the API server rejected as invalid (an unknown
// field under strict validation among them), or of a version it does not
// serve, as a NonCompliant template, and returns other errors, wrapped,
// for a retry.
func (r *Reconciler) refused(ctx context.Context, policy *policyv1.Policy, desired *unstructured.Unstructured, update bool, err error) error {
	if meta.IsNoMatchError(err) {
		return r.unmapped(ctx, policy, desired, err)
	}
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return r.record(ctx, policy, desired.GetName(), desired, policyv1.NonCompliant, refusedMessage(desired.GetName(), update, err))
	}
	verb := "creating"
	if update {
		verb = "updating"
	}
	return fmt.Errorf("%s %s %s: %w", verb, desired.GetKind(), desired.GetName(), err)
}

// refusedMessage is the compliance message of a template write the API
// server refused, in OCM's words (framework-addon,
// controllers/templatesync/template_sync.go): the API server's error names
// the unknown fields, so the user learns which ones to remove.
func refusedMessage(name string, update bool, err error) string {
	if update {
		return fmt.Sprintf("%sFailed to update policy template %s: %v", templating.TemplateErrorPrefix, name, err)
	}
	return fmt.Sprintf("%sFailed to create policy template: %v", templating.TemplateErrorPrefix, err)
}

// merge makes existing carry desired (content, labels, annotations,
// owner) and reports whether it had to change anything.
//
// Note: the API server adds defaults to what templatesync writes, so
// existing is up to date when it was written from the same desired object
// (the hash annotation says so) and still holds every desired field (it
// was not changed by hand); a plain comparison would rewrite forever.
func merge(existing, desired *unstructured.Unstructured) bool {
	if upToDate(existing, desired) {
		return false
	}
	for k := range existing.Object {
		if _, ok := desired.Object[k]; !ok && !reserved[k] {
			delete(existing.Object, k)
		}
	}
	for k, v := range desired.Object {
		if !reserved[k] {
			existing.Object[k] = v
		}
	}
	existing.SetLabels(desired.GetLabels())
	existing.SetAnnotations(desired.GetAnnotations())
	existing.SetOwnerReferences(desired.GetOwnerReferences())
	return true
}

// reserved are the top-level fields templatesync does not copy.
var reserved = map[string]bool{"metadata": true, "status": true, "apiVersion": true, "kind": true}

func upToDate(existing, desired *unstructured.Unstructured) bool {
	if !equality.Semantic.DeepEqual(existing.GetLabels(), desired.GetLabels()) ||
		!equality.Semantic.DeepEqual(existing.GetAnnotations(), desired.GetAnnotations()) ||
		!equality.Semantic.DeepEqual(existing.GetOwnerReferences(), desired.GetOwnerReferences()) {
		return false
	}
	for k, v := range desired.Object {
		if !reserved[k] && !compare.Matches(v, existing.Object[k], upToDateMode) {
			return false
		}
	}
	return true
}

// upToDateMode compares a desired field with the written one: maps may
// hold the defaults the API server added, lists are sequences, a zero
// value matches a missing one (the API server drops nulls), and strings
// compare as written: a template is text, not a quantity.
var upToDateMode = compare.Mode{InOrder: true, Literal: true}

// deleteTemplate deletes the template object of desired if it exists and
// belongs to policy.
func (r *Reconciler) deleteTemplate(ctx context.Context, policy *policyv1.Policy, desired *unstructured.Unstructured) error {
	existing, err := readObject(ctx, r.ManagedClient, desired.GroupVersionKind(), client.ObjectKeyFromObject(desired))
	if existing == nil || err != nil || !deletable(policy, existing) {
		return err
	}
	return r.deleteExisting(ctx, policy, existing)
}

// deletable reports whether existing belongs to policy and is not being
// deleted already.
func deletable(policy *policyv1.Policy, existing *unstructured.Unstructured) bool {
	return ownedBy(policy, existing) && existing.GetDeletionTimestamp().IsZero()
}

// deleteExisting deletes the template object existing of policy.
func (r *Reconciler) deleteExisting(ctx context.Context, policy *policyv1.Policy, existing *unstructured.Unstructured) error {
	if err := r.ManagedClient.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s %s: %w", existing.GetKind(), existing.GetName(), err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted template", "policy", klog.KObj(policy), "kind", existing.GetKind(), "template", existing.GetName())
	return nil
}

// prune deletes the templates labelled for policy that plan does not
// name, in every template kind.
func (r *Reconciler) prune(ctx context.Context, policy *policyv1.Policy, plan []Template, kinds templateKinds) error {
	keep := map[string]bool{}
	for _, t := range plan {
		keep[t.Name] = true
	}
	// The kinds are listed at once, not one after another: each list is a
	// round trip to the API server, and a new Policy's first reconcile
	// held a worker for all of them.
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	i := 0
	for gk, version := range kinds {
		slot := &errs[i]
		wg.Go(func() { *slot = r.pruneKind(ctx, policy, gk.WithVersion(version), keep) })
		i++
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pruneKind deletes policy's templates of kind gvk that keep does not name.
func (r *Reconciler) pruneKind(ctx context.Context, policy *policyv1.Policy, gvk schema.GroupVersionKind, keep map[string]bool) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	owned := client.MatchingLabels{policyv1.PolicyLabel: policy.Name}
	if templatekinds.ClusterScoped(gvk.GroupKind()) {
		owned[policyv1.ClusterNamespaceLabel] = policy.Namespace
	}
	if err := r.ManagedClient.List(ctx, list, client.InNamespace(policy.Namespace), owned); err != nil {
		return fmt.Errorf("listing %s: %w", gvk.GroupKind(), err)
	}
	var errs []error
	for i := range list.Items {
		obj := &list.Items[i]
		if keep[obj.GetName()] || !obj.GetDeletionTimestamp().IsZero() {
			continue
		}
		if err := r.ManagedClient.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", gvk.Kind, obj.GetName(), err))
			continue
		}
		r.Recorder.Forget(types.NamespacedName{Namespace: policy.Namespace, Name: obj.GetName()})
		ctrl.LoggerFrom(ctx).Info("Deleted removed template", "policy", klog.KObj(policy), "kind", gvk.Kind, "template", obj.GetName())
	}
	return errors.Join(errs...)
}
