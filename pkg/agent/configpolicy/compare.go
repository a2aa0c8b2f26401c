package configpolicy

import (
	"encoding/json"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Mode says how an object template is compared with an object on the
// cluster. Values are JSON values as decoded by apimachinery (maps, lists,
// strings, int64 or float64, bools, nil); a missing value is nil.
type Mode int

const (
	// Subset is musthave: a map holds every key of the template, each value
	// matching; a list holds, for each item of the template, a distinct
	// matching item, in any order and among any others.
	Subset Mode = iota
	// Exact is mustonlyhave: maps hold exactly the template's keys, lists
	// exactly the template's items (in any order), all the way down.
	Exact
)

// lastApplied is the annotation kubectl maintains; it is never compared.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Matches reports whether actual complies with template under mode.
//
// In both modes a template scalar that is the zero value of its type ("",
// 0, false), an empty map or list, and null match a missing value, as the
// API server omits empty fields. Numbers compare by value, and strings that
// are both resource quantities by quantity ("1Gi" matches "1024Mi").
func Matches(template, actual any, mode Mode) bool {
	switch t := template.(type) {
	case nil:
		return isZero(actual)
	case map[string]any:
		return mapMatches(t, actual, mode)
	case []any:
		return listMatches(t, actual, mode)
	default:
		if actual == nil {
			return isZero(t)
		}
		return scalarEqual(t, actual)
	}
}

func mapMatches(t map[string]any, actual any, mode Mode) bool {
	var a map[string]any
	switch v := actual.(type) {
	case nil:
	case map[string]any:
		a = v
	default:
		return false
	}
	for k, tv := range t {
		if !Matches(tv, a[k], mode) {
			return false
		}
	}
	if mode == Exact {
		for k, av := range a {
			if _, ok := t[k]; !ok && av != nil {
				return false
			}
		}
	}
	return true
}

func listMatches(t []any, actual any, mode Mode) bool {
	var a []any
	switch v := actual.(type) {
	case nil:
	case []any:
		a = v
	default:
		return false
	}
	if len(t) > len(a) || (mode == Exact && len(t) != len(a)) {
		return false
	}
	for _, j := range pairs(t, a, mode) {
		if j < 0 {
			return false
		}
	}
	return true
}

// pairs pairs each item of t with a distinct item of a that it matches, as
// many as possible (a maximum bipartite matching): pairs[i] is the index in
// a of t[i]'s partner, or -1.
func pairs(t, a []any, mode Mode) []int {
	ok := make([][]bool, len(t))
	for i := range t {
		ok[i] = make([]bool, len(a))
		for j := range a {
			ok[i][j] = Matches(t[i], a[j], mode)
		}
	}
	owner := make([]int, len(a))
	for j := range owner {
		owner[j] = -1
	}
	for i := range t {
		augment(i, ok, owner, make([]bool, len(a)))
	}
	res := make([]int, len(t))
	for i := range res {
		res[i] = -1
	}
	for j, i := range owner {
		if i >= 0 {
			res[i] = j
		}
	}
	return res
}

// augment looks for an augmenting path from t item i (Kuhn's algorithm).
func augment(i int, ok [][]bool, owner []int, seen []bool) bool {
	for j := range owner {
		if !ok[i][j] || seen[j] {
			continue
		}
		seen[j] = true
		if owner[j] < 0 || augment(owner[j], ok, owner, seen) {
			owner[j] = i
			return true
		}
	}
	return false
}

// Merge returns actual changed as little as possible to comply with
// template under mode: actual itself (a copy) when it complies already.
// Under Subset, map keys and list items the template does not mention are
// kept, and a template list item that matches no item replaces the item of
// the same "name" (so a container is updated, not added twice) or is
// appended. Under Exact, the result has only the template's keys and items.
// A null in the template removes the key.
func Merge(template, actual any, mode Mode) any {
	if Matches(template, actual, mode) {
		return deepCopy(actual)
	}
	switch t := template.(type) {
	case nil:
		return nil
	case map[string]any:
		return mergeMap(t, actual, mode)
	case []any:
		return mergeList(t, actual, mode)
	default:
		return t
	}
}

func mergeMap(t map[string]any, actual any, mode Mode) map[string]any {
	a, _ := actual.(map[string]any)
	out := map[string]any{}
	if mode == Subset {
		for k, v := range a {
			out[k] = deepCopy(v)
		}
	}
	for k, tv := range t {
		if v := Merge(tv, a[k], mode); v != nil {
			out[k] = v
		} else {
			delete(out, k)
		}
	}
	return out
}

func mergeList(t []any, actual any, mode Mode) []any {
	a, _ := actual.([]any)
	partner := pairs(t, a, mode)
	if mode == Exact {
		out := make([]any, 0, len(t))
		for i, tv := range t {
			if partner[i] >= 0 {
				out = append(out, deepCopy(a[partner[i]]))
			} else {
				out = append(out, Merge(tv, nil, mode))
			}
		}
		return out
	}
	out := deepCopy(a).([]any)
	used := make([]bool, len(a))
	for _, j := range partner {
		if j >= 0 {
			used[j] = true
		}
	}
	for i, tv := range t {
		if partner[i] >= 0 {
			continue
		}
		if j := sameName(tv, a, used); j >= 0 {
			out[j], used[j] = Merge(tv, a[j], mode), true
			continue
		}
		out = append(out, Merge(tv, nil, mode))
	}
	return out
}

// sameName returns the index of the first unused map item of a whose
// "name" equals the non-empty "name" of item, or -1.
func sameName(item any, a []any, used []bool) int {
	m, ok := item.(map[string]any)
	if !ok {
		return -1
	}
	name, ok := m["name"].(string)
	if !ok || name == "" {
		return -1
	}
	for j, av := range a {
		if am, ok := av.(map[string]any); ok && !used[j] && am["name"] == name {
			return j
		}
	}
	return -1
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	default:
		n, ok := number(v)
		return ok && n == 0
	}
}

func scalarEqual(t, a any) bool {
	switch tv := t.(type) {
	case string:
		av, ok := a.(string)
		return ok && (tv == av || quantityEqual(tv, av))
	case bool:
		av, ok := a.(bool)
		return ok && av == tv
	}
	if ti, ok := t.(int64); ok {
		if ai, ok := a.(int64); ok {
			return ti == ai
		}
	}
	tn, ok1 := number(t)
	an, ok2 := number(a)
	return ok1 && ok2 && tn == an
}

func quantityEqual(a, b string) bool {
	qa, err := resource.ParseQuantity(a)
	if err != nil {
		return false
	}
	qb, err := resource.ParseQuantity(b)
	return err == nil && qa.Cmp(qb) == 0
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// deepCopy copies JSON values; other values are returned as they are.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

// compareObject compares an object on the cluster with an object template:
// the template's top-level fields under mode, except apiVersion and kind,
// and of metadata only labels and annotations, under metadataMode. It
// returns whether the object complies, and the object changed to comply
// (everything the template does not set kept). status is compared but
// never changed: it cannot be written through the object.
func compareObject(template, existing map[string]any, mode, metadataMode Mode) (bool, map[string]any) {
	desired := deepCopy(existing).(map[string]any)
	matches := true
	for key, tv := range template {
		switch key {
		case "apiVersion", "kind":
		case "metadata":
			if !compareMetadata(tv, existing, desired, metadataMode) {
				matches = false
			}
		case "status":
			matches = matches && Matches(tv, existing[key], mode)
		default:
			if Matches(tv, existing[key], mode) {
				continue
			}
			matches = false
			setOrDelete(desired, key, Merge(tv, existing[key], mode))
		}
	}
	return matches, desired
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
		if Matches(tv, ev, mode) {
			continue
		}
		matches = false
		merged := Merge(tv, ev, mode)
		keepLastApplied(em[field], merged)
		setOrDelete(dm, field, merged)
	}
	return matches
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

func setOrDelete(m map[string]any, key string, v any) {
	if v == nil {
		delete(m, key)
		return
	}
	m[key] = v
}

// sameCompared reports whether a and b are equal in every field the
// template compares: its top-level fields other than apiVersion, kind and
// metadata, and the labels and annotations when it sets them.
func sameCompared(template, a, b map[string]any) bool {
	for key := range template {
		switch key {
		case "apiVersion", "kind":
		case "metadata":
			tm, _ := template["metadata"].(map[string]any)
			am, _ := a["metadata"].(map[string]any)
			bm, _ := b["metadata"].(map[string]any)
			for _, field := range []string{"labels", "annotations"} {
				if _, ok := tm[field]; ok && !equality.Semantic.DeepEqual(am[field], bm[field]) {
					return false
				}
			}
		default:
			if !equality.Semantic.DeepEqual(a[key], b[key]) {
				return false
			}
		}
	}
	return true
}
