package syncer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/compare"
	"github.com/canopy-policy/canopy/pkg/hierarchy"
)

// synchronizeSuffix ends the provenance annotation of the objects of a
// synchronized generator: once the generator is gone, it is what says that
// they go too.
const synchronizeSuffix = " (synchronize)"

// generatorID is the GeneratedByLabel value of g's objects.
func (t *tree) generatorID(g hierarchyv1alpha1.Generator) string { return t.Policy + "." + g.Name }

// generated renders the objects generator g declares in namespaces, from
// template (its data, or the clone source). It is pure.
func (t *tree) generated(g hierarchyv1alpha1.Generator, template *unstructured.Unstructured, namespaces []string) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(namespaces))
	for _, ns := range namespaces {
		u := template.DeepCopy()
		u.SetNamespace(ns)
		where := "generator " + g.Name
		if g.Synchronize {
			where += synchronizeSuffix
		}
		t.Render(u, where)
		lbls := u.GetLabels()
		lbls[hierarchyv1alpha1.GeneratedByLabel] = t.generatorID(g)
		u.SetLabels(lbls)
		out = append(out, u)
	}
	return out
}

// selected returns the namespaces g's selector chooses among all: never a
// reserved or terminating one. It is pure.
func selected(g hierarchyv1alpha1.Generator, all []corev1.Namespace) ([]string, error) {
	sel, err := metav1.LabelSelectorAsSelector(&g.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("generator %s: namespaceSelector: %w", g.Name, err)
	}
	var out []string
	for i := range all {
		ns := &all[i]
		if !hierarchy.IsReserved(ns.Name) && ns.DeletionTimestamp.IsZero() && sel.Matches(labels.Set(ns.Labels)) {
			out = append(out, ns.Name)
		}
	}
	return out, nil
}

// template returns g's object before rendering: its data, or a clean copy
// of its clone source (nil when the source does not exist).
func (r *Reconciler) template(ctx context.Context, g hierarchyv1alpha1.Generator) (*unstructured.Unstructured, error) {
	if g.Data != nil {
		u, err := hierarchy.Decode(*g.Data)
		if err != nil {
			return nil, fmt.Errorf("generator %s: data: %w", g.Name, err)
		}
		return u, nil
	}
	if g.Clone == nil {
		return nil, fmt.Errorf("generator %s has neither data nor clone", g.Name)
	}
	src := &unstructured.Unstructured{}
	src.SetAPIVersion(g.Clone.APIVersion)
	src.SetKind(g.Clone.Kind)
	err := r.ManagedReader.Get(ctx, types.NamespacedName{Namespace: g.Clone.Namespace, Name: g.Clone.Name}, src)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("generator %s: reading its clone source: %w", g.Name, err)
	}
	return cleanCopy(src), nil
}

// cleanCopy keeps an object's content, name, labels and annotations, and
// drops what the API server or Canopy set on the source.
func cleanCopy(src *unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range src.Object {
		if k != "metadata" && k != "status" {
			u.Object[k] = compare.DeepCopy(v)
		}
	}
	u.SetName(src.GetName())
	lbls := src.GetLabels()
	delete(lbls, hierarchyv1alpha1.PolicyLabel)
	delete(lbls, hierarchyv1alpha1.GeneratedByLabel)
	u.SetLabels(lbls)
	ann := src.GetAnnotations()
	delete(ann, hierarchyv1alpha1.SourceAnnotation)
	delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
	u.SetAnnotations(ann)
	return u
}

// syncGenerators plans, and under enforce applies, the objects of every
// generator of the policy, and deletes those of its removed synchronized
// generators. owned are the generated objects the sweep found (nil in a
// namespace key's reconcile, which only looks at namespace only). The outcomes
// are per namespace.
func (r *Reconciler) syncGenerators(ctx context.Context, p *hierarchyv1alpha1.HierarchyPolicy, t *tree,
	owned []*unstructured.Unstructured, only string, enforce bool) ([]outcome, error) {
	all := &corev1.NamespaceList{}
	if err := r.ManagedClient.List(ctx, all); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	byGenerator := map[string][]*unstructured.Unstructured{}
	for _, u := range owned {
		id := u.GetLabels()[hierarchyv1alpha1.GeneratedByLabel]
		byGenerator[id] = append(byGenerator[id], u)
	}
	var actions []action
	declared := map[string]int{}
	var errs []error
	for _, g := range p.Spec.Generators {
		a, n, err := r.planGenerator(ctx, t, g, all.Items, byGenerator[t.generatorID(g)], only)
		if err != nil {
			errs = append(errs, err)
		}
		delete(byGenerator, t.generatorID(g))
		actions = append(actions, a...)
		for ns, c := range n {
			declared[ns] += c
		}
	}
	for id, objs := range byGenerator { // removed generators: only synchronized ones clean up
		var gone []*unstructured.Unstructured
		for _, u := range objs {
			if strings.HasSuffix(u.GetAnnotations()[hierarchyv1alpha1.SourceAnnotation], synchronizeSuffix) {
				gone = append(gone, u)
			}
		}
		actions = append(actions, plan(nil, gone, rules{policy: t.Policy, holdDeletes: !t.Valid(), generator: id})...)
	}
	return r.applyByNamespace(ctx, actions, declared, enforce), joinErrs(errs)
}

// planGenerator plans generator g in the namespaces it selects (only one,
// when only is set). It returns the actions and the declared count per
// namespace.
func (r *Reconciler) planGenerator(ctx context.Context, t *tree, g hierarchyv1alpha1.Generator, all []corev1.Namespace,
	owned []*unstructured.Unstructured, only string) ([]action, map[string]int, error) {
	namespaces, err := selected(g, all)
	if err != nil {
		return nil, nil, err
	}
	if only != "" {
		namespaces = filterOnly(namespaces, only)
	}
	tmpl, err := r.template(ctx, g)
	if err != nil {
		return nil, nil, err
	}
	r2 := rules{policy: t.Policy, generator: t.generatorID(g), holdDeletes: !t.Valid()}
	var desired []*unstructured.Unstructured
	var held []action
	if tmpl == nil { // the clone source has not synced: create nothing, delete nothing
		r2.holdDeletes = true
		src := &unstructured.Unstructured{}
		src.SetAPIVersion(g.Clone.APIVersion)
		src.SetKind(g.Clone.Kind)
		src.SetNamespace(g.Clone.Namespace)
		src.SetName(g.Clone.Name)
		held = append(held, action{op: opHold, object: src, reason: "clone source of generator " + g.Name + " not found; its deletions are held"})
	} else {
		desired = t.generated(g, tmpl, namespaces)
	}
	observed, err := r.getAll(ctx, desired)
	if err != nil {
		return nil, nil, err
	}
	for _, u := range owned {
		if only == "" || u.GetNamespace() == only {
			observed = append(observed, u)
		}
	}
	actions := plan(desired, dedupe(observed), r2)
	if !g.Synchronize { // create where missing; never update or delete
		actions = filterOps(actions, opCreate, opConflict)
	}
	counts := map[string]int{}
	for _, d := range desired {
		counts[d.GetNamespace()]++
	}
	return append(held, actions...), counts, nil
}

// applyByNamespace applies actions and returns one outcome per namespace.
func (r *Reconciler) applyByNamespace(ctx context.Context, actions []action, declared map[string]int, enforce bool) []outcome {
	byNS := map[string]*outcome{}
	get := func(ns string) *outcome {
		if byNS[ns] == nil {
			byNS[ns] = &outcome{namespace: ns, declared: declared[ns]}
		}
		return byNS[ns]
	}
	for ns := range declared {
		get(ns)
	}
	for _, a := range actions {
		o := get(a.object.GetNamespace())
		o.actions = append(o.actions, a)
	}
	var out []outcome
	for _, ns := range slices.Sorted(maps.Keys(byNS)) {
		o := byNS[ns]
		r.apply(ctx, o, enforce)
		out = append(out, *o)
	}
	return out
}

func filterOnly(namespaces []string, only string) []string {
	for _, ns := range namespaces {
		if ns == only {
			return []string{only}
		}
	}
	return nil
}

func filterOps(actions []action, keep ...op) []action {
	var out []action
	for _, a := range actions {
		for _, k := range keep {
			if a.op == k {
				out = append(out, a)
			}
		}
	}
	return out
}

func dedupe(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	byKey := map[objectKey]*unstructured.Unstructured{}
	for _, u := range objs {
		if _, dup := byKey[keyOf(u)]; !dup {
			byKey[keyOf(u)] = u // the first observation wins, as in plan
		}
	}
	return hierarchy.SortedObjects(byKey)
}

func joinErrs(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}
