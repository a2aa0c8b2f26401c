package configpolicy

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compare"
	"github.com/canopy-policy/canopy/pkg/dryrun"
)

// plannedObjects are the objects one object template of a dry run
// resolved to: those its create and update actions write.
type plannedObjects struct {
	objects []*objectTemplate
	// sensitive says that resolving them read a Secret or decrypted a value.
	sensitive bool
	// written is the definition as written: object-templates-raw, or the
	// objectDefinition (JSON) of the object template.
	written []byte
	// fromRaw says that written is object-templates-raw.
	fromRaw bool
}

// addObjects sets the Object of the create and update actions of object
// template index: the object enforce would send, as dryrun.Shown shows
// it, its resolved values masked when resolving it read a Secret or
// decrypted a value.
//
// Note: the templates are resolved once more here, the evaluation keeping
// no resolved object; a dry run reads from the API server, so both
// resolutions see the same cluster unless it changes in between.
func (e *evaluation) addObjects(ctx context.Context, rs *resolution, index int, ot policyv1.ObjectTemplate, actions []dryrun.Action) {
	var planned *plannedObjects
	for i := range actions {
		a := &actions[i]
		if a.Op != OpCreate && a.Op != OpUpdate {
			continue
		}
		if planned == nil {
			planned = e.planned(ctx, rs, index, ot)
		}
		a.Object = e.actionObject(ctx, planned, a)
	}
}

// planned resolves object template index as the evaluation did.
func (e *evaluation) planned(ctx context.Context, rs *resolution, index int, ot policyv1.ObjectTemplate) *plannedObjects {
	p := &plannedObjects{written: ot.ObjectDefinition.Raw}
	if rs != nil && rs.fromRaw {
		p.written, p.fromRaw, p.sensitive = []byte(e.policy.Spec.ObjectTemplatesRaw), true, rs.sensitive
	}
	t, terr := parseTemplate(e.policy.Name, index, ot)
	if terr != nil {
		return p
	}
	if !rs.templated(ot) {
		p.objects = []*objectTemplate{t}
		return p
	}
	gvr, failed := e.mapping(ctx, t)
	if failed != nil {
		return p
	}
	targets, failed := e.targets(ctx, index, ot, t, gvr)
	if failed != nil {
		return p
	}
	set, failed := e.resolveTargets(rs, index, ot, t, gvr, targets)
	if failed != nil {
		return p
	}
	p.objects, p.sensitive = set.objects, p.sensitive || set.sensitive
	return p
}

// find returns the planned object called name in namespace ns: the one
// of that identity, else the only one of that name, else the definition
// of an unnamed template named name (an objectSelector's object); or nil.
func (p *plannedObjects) find(ns, name string) *objectTemplate {
	var byName []*objectTemplate
	for _, d := range p.objects {
		switch {
		case d.name == name && d.namespace == ns:
			return d
		case d.name == name:
			byName = append(byName, d)
		}
	}
	switch {
	case len(byName) == 1:
		return byName[0]
	case len(p.objects) == 1 && p.objects[0].name == "" && name != "":
		return p.objects[0].named(name)
	}
	return nil
}

// actionObject is the object action a writes, as shown; nil when it
// cannot be told (the object changed since it was evaluated, say).
func (e *evaluation) actionObject(ctx context.Context, p *plannedObjects, a *dryrun.Action) map[string]any {
	d := p.find(a.Namespace, a.Name)
	if d == nil {
		return nil
	}
	var obj map[string]any
	if a.Op == OpCreate {
		obj = d.newObject(a.Namespace)
	} else {
		gvr, err := e.r.watcher.GVKToGVR(d.gvk)
		if err != nil {
			return nil
		}
		existing, err := e.reader.get(ctx, gvr, d.gvk, a.Namespace, a.Name)
		if err != nil || existing == nil {
			return nil
		}
		_, obj = compareObject(d.object, existing.Object, d.mode, d.metadataMode)
	}
	shown := dryrun.Shown(obj)
	if p.sensitive {
		p.mask(shown, d)
	}
	return shown
}

// mask replaces in shown, the object planned from d, every value that
// resolving d may have put there: each value of a field d sets that the
// definition as written does not set to that same value, and anywhere in
// the object each string d resolved to (but its name and namespace) that
// the definition does not hold as written. The kind, name and namespace
// stay: actions name the object.
func (p *plannedObjects) mask(shown map[string]any, d *objectTemplate) {
	identity := [][]string{{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "namespace"}}
	kept := make([]any, len(identity))
	for i, path := range identity {
		kept[i], _, _ = unstructured.NestedFieldNoCopy(shown, path...)
	}
	values := map[string]bool{}
	collectValues(d.object, values)
	delete(values, d.name)
	delete(values, d.namespace)
	for v := range values {
		if strings.Contains(string(p.written), v) {
			delete(values, v)
		}
	}
	maskStrings(shown, values, masker(values))
	var def map[string]any
	if !p.fromRaw {
		_ = utiljson.Unmarshal(p.written, &def) // not an object: nothing is as written
	}
	maskSet(shown, d.object, def, "")
	for i, path := range identity {
		if kept[i] != nil {
			_ = unstructured.SetNestedField(shown, kept[i], path...)
		}
	}
}

// maskStrings replaces in v each string of values by dryrun.Redacted, and
// in other strings each occurrence mask masks; it changes v in place.
func maskStrings(v any, values map[string]bool, mask *strings.Replacer) any {
	switch x := v.(type) {
	case string:
		if values[x] {
			return dryrun.Redacted
		}
		return mask.Replace(x)
	case map[string]any:
		for k, e := range x {
			x[k] = maskStrings(e, values, mask)
		}
	case []any:
		for i, e := range x {
			x[i] = maskStrings(e, values, mask)
		}
	}
	return v
}

// maskSet redacts, in obj, the fields that tmpl (the resolved definition)
// sets, down to where they differ from def (the definition as written; nil
// when unknown). path is where obj is in the object: the kind, name and
// namespace are not masked.
func maskSet(obj, tmpl, def map[string]any, path string) {
	for k, tv := range tmpl {
		switch {
		case path == "" && (k == "apiVersion" || k == "kind"),
			path == "metadata" && (k == "name" || k == "namespace"):
			continue
		}
		ov, present := obj[k]
		if !present {
			continue
		}
		wv := def[k]
		tm, tmplIsMap := tv.(map[string]any)
		om, objIsMap := ov.(map[string]any)
		if tmplIsMap && objIsMap {
			wm, _ := wv.(map[string]any)
			maskSet(om, tm, wm, strings.TrimPrefix(path+"."+k, "."))
			continue
		}
		if !compare.Equal(ov, wv) {
			obj[k] = redactLeaves(ov)
		}
	}
}

// redactLeaves returns v with every value but null replaced by
// dryrun.Redacted, keeping the keys of maps and the length of lists.
func redactLeaves(v any) any {
	return compare.MapLeaves(v, func(leaf any) any {
		if leaf == nil {
			return nil
		}
		return dryrun.Redacted
	})
}
