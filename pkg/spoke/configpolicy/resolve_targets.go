package configpolicy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// evaluateResolved evaluates an object template that holds Go templates or
// encrypted values. Its definition is resolved for each object the
// namespaceSelector, the objectSelector and the definition's metadata
// point at — once per object when the templates use .Object, .ObjectName
// or .ObjectNamespace, else once — and the resolved objects are evaluated.
// Nothing is written unless every object resolves.
func (e *evaluation) evaluateResolved(ctx context.Context, rs *resolution, index int, ot policyv1.ObjectTemplate,
	t *objectTemplate, gvr depclient.ScopedGVR,
) templateOutcome {
	targets, failed := e.targets(ctx, index, ot, t, gvr)
	if failed != nil {
		return *failed
	}
	set, failed := e.resolveTargets(rs, index, ot, t, gvr, targets)
	if failed != nil {
		return *failed
	}
	if len(set.objects) == 0 {
		msg := msgNoMatched
		switch {
		case set.skipped:
			msg = msgAllSkipped
		case ot.ObjectSelector != nil:
			msg = msgNoSelected
		}
		return templateOutcome{resource: gvr.Resource,
			results: []objectResult{{compliant: true, message: fmt.Sprintf(msg, t.gvk.Kind)}}}
	}
	evaluate := func() templateOutcome {
		out := templateOutcome{resource: gvr.Resource}
		for _, d := range set.objects {
			if d.name != "" {
				e.evaluateNamed(ctx, d, gvr, d.namespace, &out)
			} else {
				e.evaluateUnnamed(ctx, d, gvr, d.namespace, &out)
			}
		}
		return out
	}
	if !set.sensitive {
		return evaluate()
	}
	return e.sensitively(ot.ObjectDefinition.Raw, set.objects, evaluate)
}

// targets returns the objects to resolve t for, in each namespace it
// applies to.
func (e *evaluation) targets(ctx context.Context, index int, ot policyv1.ObjectTemplate, t *objectTemplate,
	gvr depclient.ScopedGVR,
) ([]target, *templateOutcome) {
	namespaces, terr := e.targetNamespaces(ctx, t, gvr)
	if terr != nil {
		out := errorOutcome(gvr.Resource, terr.reason, terr.message)
		return nil, &out
	}
	withObject := usesObject.Match(ot.ObjectDefinition.Raw)
	var all []target
	for _, ns := range namespaces {
		more, failed := e.targetsIn(ctx, index, t, gvr, ns, withObject)
		if failed != nil {
			return nil, failed
		}
		all = append(all, more...)
	}
	return all, nil
}

// targetNamespaces returns the namespaces t applies to. A templated
// namespace is known only once resolved (""), unless the namespaceSelector
// selects namespaces: each is then resolved for, and must be what the
// namespace resolves to.
func (e *evaluation) targetNamespaces(ctx context.Context, t *objectTemplate, gvr depclient.ScopedGVR) ([]string, *templateError) {
	literal := *t
	if hasTemplate(t.name) {
		literal.name = "" // messages name the object only when its name is known
	}
	if !gvr.Namespaced || !hasTemplate(t.namespace) {
		return e.namespacesFor(ctx, &literal, gvr)
	}
	sel := e.policy.Spec.NamespaceSelector
	if len(sel.Include) == 0 && sel.LabelSelector == nil {
		return []string{""}, nil
	}
	literal.namespace = ""
	names, terr := e.namespacesFor(ctx, &literal, gvr)
	if terr != nil && terr.reason == ReasonMissingNamespace {
		return []string{""}, nil
	}
	return names, terr
}

// targetsIn returns the objects to resolve t for in namespace ns: the one
// it names, those its objectSelector selects when its name is empty or a
// template, or one whose name only resolution tells.
func (e *evaluation) targetsIn(ctx context.Context, index int, t *objectTemplate, gvr depclient.ScopedGVR, ns string,
	withObject bool,
) ([]target, *templateOutcome) {
	switch {
	case t.name != "" && !hasTemplate(t.name):
		tg := target{ns: ns, name: t.name}
		if withObject && (ns != "" || !gvr.Namespaced) {
			// Note: a read that fails leaves .Object empty; evaluating the object reports the failure.
			if obj, err := e.reader.get(ctx, gvr, t.gvk, ns, t.name); err == nil && obj != nil {
				tg.obj = contextObject(obj)
			}
		}
		return []target{tg}, nil
	case t.selector != nil:
		objs, err := e.reader.list(ctx, gvr, t.gvk, ns, t.selector)
		if err != nil {
			e.transient = append(e.transient, err)
			out := errorOutcome(gvr.Resource, ReasonObjectSelectorError, fmt.Sprintf("Error listing resources with "+
				"provided objectSelector in the object-template at index [%d]: %v", index, err))
			return nil, &out
		}
		return selectedTargets(ns, objs, withObject), nil
	}
	return []target{{ns: ns}}, nil
}

// selectedTargets are the objects an objectSelector selected, by name.
func selectedTargets(ns string, objs []unstructured.Unstructured, withObject bool) []target {
	slices.SortFunc(objs, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	targets := make([]target, 0, len(objs))
	for i := range objs {
		tg := target{ns: ns, name: objs[i].GetName()}
		if withObject {
			tg.obj = contextObject(&objs[i])
		}
		targets = append(targets, tg)
	}
	return targets
}

// resolveTargets resolves ot for each target, reusing a resolution for
// targets whose context variables it does not use. The first failure is
// the outcome.
func (e *evaluation) resolveTargets(rs *resolution, index int, ot policyv1.ObjectTemplate, t *objectTemplate,
	gvr depclient.ScopedGVR, targets []target,
) (resolvedSet, *templateOutcome) {
	raw := ot.ObjectDefinition.Raw
	byNamespace := usesObjectNamespace.Match(raw)
	byName := usesObjectName.Match(raw) || usesObject.Match(raw)
	type memo struct{ ns, name string }
	done := map[memo]resolved{}
	var set resolvedSet
	for _, tg := range targets {
		key := memo{}
		if byNamespace {
			key.ns = tg.ns
		}
		if byName {
			key.name = tg.name
		}
		r, ok := done[key]
		if !ok {
			var err error
			if r, err = rs.resolve(raw, templateContext(tg)); err != nil {
				out := e.templateFailure(gvr.Resource, err)
				return set, &out
			}
			done[key] = r
		}
		if r.skip {
			set.skipped = true
			continue
		}
		d, terr := e.settle(index, ot, t, gvr, tg, r.json)
		if terr != nil {
			e.invalid = append(e.invalid, terr.message)
			out := errorOutcome(gvr.Resource, terr.reason, terr.message)
			return set, &out
		}
		set.sensitive = set.sensitive || r.sensitive
		set.objects = append(set.objects, d)
	}
	return set, nil
}
