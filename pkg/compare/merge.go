package compare

// Merge returns actual changed as little as possible to match template
// under mode: a copy of actual itself when it matches already. Map keys the
// template does not set are kept unless mode is NoExtra; a null in the
// template removes the key (sets it to null when mode is Present). A
// sequence (InOrder) is merged item by item to the template's length. In a
// bag, a template item that matches no item replaces the item of the same
// "name" (so a container is updated, not added twice) or is appended; with
// NoExtra the bag has only the template's items. Under Present, an item
// that matches an unused item but for zero values missing from it is
// merged into that item first.
func Merge(template, actual any, mode Mode) any {
	if Matches(template, actual, mode) {
		return DeepCopy(actual)
	}
	switch t := template.(type) {
	case nil:
		return nil
	case map[string]any:
		return mergeMap(t, actual, mode)
	case []any:
		if mode.InOrder {
			return mergeSequence(t, actual, mode)
		}
		return mergeBag(t, actual, mode)
	default:
		return t
	}
}

func mergeMap(t map[string]any, actual any, mode Mode) map[string]any {
	a, _ := actual.(map[string]any)
	out := map[string]any{}
	if !mode.NoExtra {
		for k, v := range a {
			out[k] = DeepCopy(v)
		}
	}
	for k, tv := range t {
		if v := Merge(tv, a[k], mode); v != nil || mode.Present {
			out[k] = v
		} else {
			delete(out, k)
		}
	}
	return out
}

func mergeSequence(t []any, actual any, mode Mode) []any {
	a, _ := actual.([]any)
	out := make([]any, len(t))
	for i, tv := range t {
		var av any
		if i < len(a) {
			av = a[i]
		}
		out[i] = Merge(tv, av, mode)
	}
	return out
}

func mergeBag(t []any, actual any, mode Mode) []any {
	a, _ := actual.([]any)
	partner := pairs(t, a, mode)
	if mode.NoExtra {
		out := make([]any, 0, len(t))
		for i, tv := range t {
			if partner[i] >= 0 {
				out = append(out, DeepCopy(a[partner[i]]))
			} else {
				out = append(out, Merge(tv, nil, mode))
			}
		}
		return out
	}
	out := DeepCopy(a).([]any)
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
		if j := lenientPartner(tv, a, used, mode); j >= 0 {
			out[j], used[j] = Merge(tv, a[j], mode), true
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

// lenientPartner returns, under a Present mode, the index of the first
// unused item of a that item matches when a zero value also matches a
// missing one, or -1: the item differs from it only by values the API
// server may omit, and is merged into it rather than added beside it.
func lenientPartner(item any, a []any, used []bool, mode Mode) int {
	if !mode.Present {
		return -1
	}
	lenient := mode
	lenient.Present = false
	for j, av := range a {
		if !used[j] && Matches(item, av, lenient) {
			return j
		}
	}
	return -1
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

// DeepCopy returns a copy of the JSON value v that shares no map or list
// with it (other values are immutable, and returned as they are).
func DeepCopy(v any) any {
	return MapLeaves(v, same)
}

func same(v any) any { return v }

// MapLeaves returns a copy of the JSON value v, its maps and lists copied,
// with f applied to every other value in it: each string, number, bool and
// null.
func MapLeaves(v any, f func(any) any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = MapLeaves(e, f)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = MapLeaves(e, f)
		}
		return out
	default:
		return f(v)
	}
}
