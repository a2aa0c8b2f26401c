package configpolicy

import (
	"maps"
	"strings"

	"github.com/canopy-policy/canopy/pkg/compare"
)

// Mode says how an object template is compared with an object on the
// cluster: Subset (musthave) or Exact (mustonlyhave), the rules of
// pkg/compare.
type Mode = compare.Mode

var (
	// Subset is musthave: see compare.Subset.
	Subset = compare.Subset
	// Exact is mustonlyhave: see compare.Exact.
	Exact = compare.Exact
)

// keysPresent is mode with every key the template sets required in the
// object (compare.Mode.Present): how an object the template names is
// compared before the dry run that settles zero values (evaluation.fix).
func keysPresent(mode Mode) Mode {
	mode.Present = true
	return mode
}

// lastApplied is the annotation kubectl maintains; it is never compared.
// A namespace's annotations that begin with sccPrefix are OpenShift's (the
// UID and SELinux ranges of its pods): they are kept, as OCM keeps them,
// whatever the template says.
const (
	lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
	sccPrefix   = "openshift.io/sa.scc."
)

// compareObject compares an object on the cluster with an object template:
// the template's top-level fields under mode, except apiVersion and kind,
// and of metadata only labels and annotations, under metadataMode. It
// returns whether the object complies, and the object changed to comply
// (everything the template does not set kept). status is compared but
// never changed: it cannot be written through the object.
func compareObject(template, existing map[string]any, mode, metadataMode Mode) (bool, map[string]any) {
	desired := compare.DeepCopy(existing).(map[string]any)
	matches := true
	for key, tv := range template {
		switch key {
		case "apiVersion", "kind":
		case "metadata":
			if !compareMetadata(tv, existing, desired, metadataMode) {
				matches = false
			}
		case "status":
			matches = matches && compare.Matches(tv, existing[key], mode)
		default:
			if compare.Matches(tv, existing[key], mode) {
				continue
			}
			matches = false
			setMerged(desired, key, compare.Merge(tv, existing[key], mode), mode)
		}
	}
	if mode.NoExtra {
		for key := range existing {
			if _, set := template[key]; !set && !keptUnlisted(existing, key) {
				matches = false
				delete(desired, key)
			}
		}
	}
	return matches, desired
}

// keptUnlisted reports whether mustonlyhave keeps the top-level field key
// of obj although the template does not list it, as OCM does: apiVersion,
// kind, metadata and status, and the secrets and imagePullSecrets that
// Kubernetes manages on a ServiceAccount.
func keptUnlisted(obj map[string]any, key string) bool {
	switch key {
	case "apiVersion", "kind", "metadata", "status":
		return true
	case "secrets", "imagePullSecrets":
		return obj["apiVersion"] == "v1" && obj["kind"] == "ServiceAccount"
	}
	return false
}

// compareMetadata compares the labels and annotations of the template's
// metadata with existing's, merging them into desired when they differ.
func compareMetadata(tmeta any, existing, desired map[string]any, mode Mode) bool {
	tm, _ := tmeta.(map[string]any)
	em, _ := existing["metadata"].(map[string]any)
	dm, _ := desired["metadata"].(map[string]any)
	if dm == nil {
		dm = map[string]any{}
		desired["metadata"] = dm
	}
	matches := true
	for _, field := range []string{"labels", "annotations"} {
		tv, ok := tm[field]
		if !ok {
			continue
		}
		tv, ev := withoutLastApplied(tv), withoutLastApplied(em[field])
		if field == "annotations" && existing["kind"] == "Namespace" {
			tv = withSCCAnnotations(tv, ev)
		}
		if compare.Matches(tv, ev, mode) {
			continue
		}
		matches = false
		merged := compare.Merge(tv, ev, mode)
		keepLastApplied(em[field], merged)
		setMerged(dm, field, merged, mode)
	}
	return matches
}

// withTemplateStatus returns desired with the template's status merged
// into existing's: what the object would be if its status complied, for a
// diff that shows how the status differs (status itself is never written).
func withTemplateStatus(t *objectTemplate, existing, desired map[string]any) map[string]any {
	tv, ok := t.object["status"]
	if !ok {
		return desired
	}
	out := compare.DeepCopy(desired).(map[string]any)
	setMerged(out, "status", compare.Merge(tv, existing["status"], keysPresent(t.mode)), keysPresent(t.mode))
	return out
}

// withSCCAnnotations returns the template's annotations with a namespace's
// OpenShift SCC annotations (sccPrefix) from existing that it does not set.
func withSCCAnnotations(template, existing any) any {
	em, ok := existing.(map[string]any)
	tm, isMap := template.(map[string]any)
	if !ok || !isMap {
		return template
	}
	out := tm
	for k, v := range em {
		if _, set := tm[k]; set || !strings.HasPrefix(k, sccPrefix) {
			continue
		}
		if len(out) == len(tm) {
			out = maps.Clone(tm)
		}
		out[k] = v
	}
	return out
}

// keepLastApplied copies kubectl's annotation from existing into merged, so
// that enforcing annotations never drops it.
func keepLastApplied(existing, merged any) {
	em, ok := existing.(map[string]any)
	if !ok {
		return
	}
	kept, ok := em[lastApplied]
	if m, isMap := merged.(map[string]any); ok && isMap {
		m[lastApplied] = kept
	}
}

func withoutLastApplied(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if _, has := m[lastApplied]; !has {
		return v
	}
	out := maps.Clone(m)
	delete(out, lastApplied)
	return out
}

// setMerged sets m[key] to v, what compare.Merge made of the template's
// value, by compare.Merge's own rule for map keys: a nil removes the key,
// except under Present, where it is a null the template sets (a required
// field may be nullable).
func setMerged(m map[string]any, key string, v any, mode Mode) {
	if v == nil && !mode.Present {
		delete(m, key)
		return
	}
	m[key] = v
}

// sameCompared reports whether a and b are equal in every field an update
// can change: the top-level fields of either other than apiVersion, kind
// and metadata, and the labels and annotations when the template sets
// them.
func sameCompared(template, a, b map[string]any) bool {
	tm, _ := template["metadata"].(map[string]any)
	am, _ := a["metadata"].(map[string]any)
	bm, _ := b["metadata"].(map[string]any)
	for _, field := range []string{"labels", "annotations"} {
		if _, ok := tm[field]; ok && !compare.Equal(withoutLastApplied(am[field]), withoutLastApplied(bm[field])) {
			return false
		}
	}
	for _, obj := range []map[string]any{a, b} {
		for key := range obj {
			switch key {
			case "apiVersion", "kind", "metadata":
			default:
				if !compare.Equal(a[key], b[key]) {
					return false
				}
			}
		}
	}
	return true
}
