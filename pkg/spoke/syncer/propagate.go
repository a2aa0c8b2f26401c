package syncer

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/hierarchy"
)

// propagation is the live-propagation configuration of the cluster: the
// union of the enforced HierarchyPolicies' spec.propagation (under inform
// nothing is written, and propagation has nothing to report but writes).
type propagation struct {
	kinds                     []schema.GroupKind
	labelKeys, annotationKeys []string
}

// propagationOf merges the propagation settings of policies. It is pure.
func propagationOf(policies []hierarchyv1alpha1.HierarchyPolicy) propagation {
	kinds := map[schema.GroupKind]bool{}
	labels, annotations := map[string]bool{}, map[string]bool{}
	for _, p := range policies {
		if p.Spec.Propagation == nil || !p.DeletionTimestamp.IsZero() || !p.Spec.RemediationAction.IsEnforce() {
			continue
		}
		for _, k := range p.Spec.Propagation.Kinds {
			kinds[schema.GroupKind{Group: k.Group, Kind: k.Kind}] = true
		}
		for _, k := range p.Spec.Propagation.LabelKeys {
			labels[k] = true
		}
		for _, k := range p.Spec.Propagation.AnnotationKeys {
			annotations[k] = true
		}
	}
	return propagation{
		kinds:          slices.SortedFunc(maps.Keys(kinds), compareGroupKinds),
		labelKeys:      slices.Sorted(maps.Keys(labels)),
		annotationKeys: slices.Sorted(maps.Keys(annotations)),
	}
}

// sourceOf returns the namespace ns copies from: its parent, or else its
// template; "" when it is in no tree.
func sourceOf(ns *corev1.Namespace) string {
	if p := ns.Labels[hierarchyv1alpha1.ParentLabel]; p != "" {
		return p
	}
	return ns.Labels[hierarchyv1alpha1.TemplateLabel]
}

// propagateInto makes namespace ns's copies match its source namespace:
// labels and annotations by key pattern, then the objects of each kind.
// Without a source, its update-mode copies are deleted (it left the tree).
func (r *Reconciler) propagateInto(ctx context.Context, ns *corev1.Namespace, conf propagation) error {
	if hierarchy.IsReserved(ns.Name) || !ns.DeletionTimestamp.IsZero() {
		return nil
	}
	srcName := sourceOf(ns)
	src := &corev1.Namespace{}
	if srcName != "" {
		if err := r.ManagedClient.Get(ctx, client.ObjectKey{Name: srcName}, src); err != nil {
			// Note: a missing source holds every deletion: it has not synced.
			return client.IgnoreNotFound(fmt.Errorf("reading source namespace %s of %s: %w", srcName, ns.Name, err))
		}
		if err := r.propagateMetadata(ctx, ns, src, conf); err != nil {
			return err
		}
	}
	var errs []error
	for _, gk := range conf.kinds {
		if err := r.propagateKind(ctx, ns.Name, srcName, gk); err != nil {
			errs = append(errs, err)
		}
	}
	return joinErrs(errs)
}

// propagateMetadata copies src's labels and annotations whose keys match
// the patterns onto ns.
func (r *Reconciler) propagateMetadata(ctx context.Context, ns, src *corev1.Namespace, conf propagation) error {
	want := ns.DeepCopy()
	copyMatching(&want.Labels, src.Labels, conf.labelKeys)
	copyMatching(&want.Annotations, src.Annotations, conf.annotationKeys)
	if maps.Equal(want.Labels, ns.Labels) && maps.Equal(want.Annotations, ns.Annotations) {
		return nil
	}
	if err := r.ManagedClient.Patch(ctx, want, client.MergeFrom(ns)); err != nil {
		return fmt.Errorf("propagating labels to namespace %s: %w", ns.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Propagated namespace metadata", "namespace", ns.Name, "from", src.Name)
	return nil
}

// copyMatching copies the entries of from whose keys match a pattern.
// The tree's own labels never propagate.
func copyMatching(into *map[string]string, from map[string]string, patterns []string) {
	for k, v := range from {
		if k == hierarchyv1alpha1.TypeLabel || k == hierarchyv1alpha1.ParentLabel || k == hierarchyv1alpha1.TemplateLabel {
			continue
		}
		for _, p := range patterns {
			if ok, _ := path.Match(p, k); ok {
				if *into == nil {
					*into = map[string]string{}
				}
				(*into)[k] = v
				break
			}
		}
	}
}

// propagateKind plans, with the shared planner, and applies the copies of
// kind gk in namespace ns from namespace src ("" = none).
func (r *Reconciler) propagateKind(ctx context.Context, ns, src string, gk schema.GroupKind) error {
	sources, err := r.listKind(ctx, gk, src)
	if err != nil {
		return err
	}
	present, err := r.listKind(ctx, gk, ns)
	if err != nil {
		return err
	}
	if err := r.markGenerated(ctx, present); err != nil {
		return err
	}
	creates, updates := copiesOf(sources, ns, src)
	// observed: the objects named like a copy, and the update-mode copies
	// (those are deleted when their source goes or the namespace moves)
	names := map[string]bool{}
	for _, c := range append(slices.Clone(creates), updates...) {
		names[c.GetName()] = true
	}
	var observed []*unstructured.Unstructured
	for _, u := range present {
		a := u.GetAnnotations()
		if names[u.GetName()] || (a[hierarchyv1alpha1.FromAnnotation] != "" && a[hierarchyv1alpha1.PropagateAnnotation] == hierarchyv1alpha1.PropagateUpdate) {
			observed = append(observed, u)
		}
	}
	actions := filterOps(plan(creates, observed, rules{}), opCreate, opConflict)
	for _, a := range plan(updates, observed, rules{}) {
		if !slices.ContainsFunc(creates, func(c *unstructured.Unstructured) bool { return c.GetName() == a.object.GetName() }) {
			actions = append(actions, a)
		}
	}
	o := outcome{namespace: ns, actions: actions}
	r.apply(ctx, &o, true)
	return joinErrs(o.failed.all())
}

// copiesOf renders the copies, in namespace ns, of the objects of sources
// (in namespace src) annotated to propagate, split by mode. It is pure.
func copiesOf(sources []*unstructured.Unstructured, ns, src string) (creates, updates []*unstructured.Unstructured) {
	for _, s := range sources {
		mode := s.GetAnnotations()[hierarchyv1alpha1.PropagateAnnotation]
		if mode != hierarchyv1alpha1.PropagateCreate && mode != hierarchyv1alpha1.PropagateUpdate {
			continue
		}
		c := cleanCopy(s)
		c.SetNamespace(ns)
		lbls := c.GetLabels()
		if lbls == nil {
			lbls = map[string]string{}
		}
		lbls[hierarchyv1alpha1.ManagedByLabel] = hierarchyv1alpha1.ManagedByValue
		c.SetLabels(lbls)
		ann := c.GetAnnotations()
		ann[hierarchyv1alpha1.FromAnnotation] = src
		ann[hierarchyv1alpha1.SourceAnnotation] = "propagated from namespace " + src
		c.SetAnnotations(ann)
		if mode == hierarchyv1alpha1.PropagateCreate {
			creates = append(creates, c)
		} else {
			updates = append(updates, c)
		}
	}
	return creates, updates
}

// listKind lists the objects of kind gk in namespace ns ("" lists nothing).
func (r *Reconciler) listKind(ctx context.Context, gk schema.GroupKind, ns string) ([]*unstructured.Unstructured, error) {
	if ns == "" {
		return nil, nil
	}
	mapping, err := r.mapper.RESTMapping(gk)
	if err != nil {
		return nil, fmt.Errorf("resolving kind %s: %w", gk, err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(mapping.GroupVersionKind.GroupVersion().WithKind(gk.Kind + "List"))
	if err := r.ManagedReader.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing %s in namespace %s: %w", gk, ns, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// propagate runs live propagation for namespace name.
func (r *Reconciler) propagate(ctx context.Context, name string, policies []hierarchyv1alpha1.HierarchyPolicy) error {
	conf := propagationOf(policies)
	if len(conf.kinds) == 0 && len(conf.labelKeys) == 0 && len(conf.annotationKeys) == 0 {
		return nil
	}
	for _, gk := range conf.kinds {
		if err := r.watch(ctx, gk); err != nil {
			return err
		}
	}
	ns := &corev1.Namespace{}
	if err := r.ManagedClient.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading namespace %s: %w", name, err)
	}
	if err := r.propagateInto(ctx, ns, conf); err != nil {
		return fmt.Errorf("propagating into namespace %s: %w", klog.KObj(ns), err)
	}
	return nil
}

// sourceIndex indexes the cached Namespaces by the namespaces they copy
// from (the values of ParentLabel and TemplateLabel).
const sourceIndex = "hierarchy.canopy.io/source"

// indexSources is the indexer of sourceIndex.
func indexSources(o client.Object) []string {
	var out []string
	for _, key := range []string{hierarchyv1alpha1.ParentLabel, hierarchyv1alpha1.TemplateLabel} {
		if v := o.GetLabels()[key]; v != "" {
			out = append(out, v)
		}
	}
	return out
}

// children returns the namespaces whose source is ns.
//
// Note: from an index, names only and no copies: this runs for every event
// of a namespace or of an object in one. A label selector scanned every
// cached Namespace instead (make bench: a tenth of the syncer's CPU at
// 3,000 namespaces, and the events of a restart waited on it).
func (r *Reconciler) children(ctx context.Context, ns string) []string {
	list := &corev1.NamespaceList{}
	if err := r.ManagedClient.List(ctx, list, client.MatchingFields{sourceIndex: ns}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Cannot list namespaces", "source", ns)
		return nil
	}
	out := make([]string, 0, len(list.Items))
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	return out
}

// markGenerated sets PropagateAnnotation on the objects whose controller
// carries PropagateGeneratedAnnotation, so that what a controller generates
// from a propagated object propagates too.
func (r *Reconciler) markGenerated(ctx context.Context, objs []*unstructured.Unstructured) error {
	owners := map[types.UID]string{}
	for _, u := range objs {
		ref := metav1.GetControllerOf(u)
		if ref == nil || u.GetAnnotations()[hierarchyv1alpha1.PropagateAnnotation] != "" {
			continue
		}
		mode, seen := owners[ref.UID]
		if !seen {
			owner := &unstructured.Unstructured{}
			owner.SetAPIVersion(ref.APIVersion)
			owner.SetKind(ref.Kind)
			err := r.ManagedReader.Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: ref.Name}, owner)
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("reading the owner %s %s of %s: %w", ref.Kind, ref.Name, keyOf(u), err)
			}
			mode = owner.GetAnnotations()[hierarchyv1alpha1.PropagateGeneratedAnnotation]
			owners[ref.UID] = mode
		}
		if mode != hierarchyv1alpha1.PropagateCreate && mode != hierarchyv1alpha1.PropagateUpdate {
			continue
		}
		patch := client.RawPatch(types.MergePatchType,
			fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, hierarchyv1alpha1.PropagateAnnotation, mode))
		if err := r.ManagedClient.Patch(ctx, u, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("marking %s to propagate: %w", keyOf(u), err)
		}
		ctrl.LoggerFrom(ctx).Info("Marked a generated object to propagate", "object", klog.KObj(u), "mode", mode)
	}
	return nil
}
