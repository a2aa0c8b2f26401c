package compare

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Mode says how a template value is compared with an actual one. The zero
// Mode is Subset; each field makes the comparison stricter in one way.
type Mode struct {
	// NoExtra: actual holds nothing the template does not, no other map key
	// (a null one aside, unless Present) and no other list item. Otherwise
	// actual may hold more, such as the defaults the API server fills in.
	NoExtra bool
	// InOrder makes lists sequences: actual has the template's length and
	// its item i matches the template's item i. Otherwise lists are bags:
	// each template item pairs with a distinct actual item it matches, in
	// any order.
	InOrder bool
	// Present makes every key the template sets required in actual,
	// whatever its value, and null match only null. Otherwise a template
	// value that is zero ("", 0, false, an empty map or list, null) also
	// matches a missing one, as the API server omits empty fields.
	Present bool
	// Literal compares strings as written, not as resource quantities.
	Literal bool
}

var (
	// Subset is a ConfigurationPolicy's musthave: a map holds every key of
	// the template, each value matching; a list holds, for each item of the
	// template, a distinct matching item, in any order and among others.
	Subset = Mode{}
	// Exact is mustonlyhave: maps hold exactly the template's keys, lists
	// exactly the template's items (in any order), all the way down.
	Exact = Mode{NoExtra: true}
	// Ordered is how the hierarchical syncer compares a declared field with
	// the observed object's: maps may hold more keys (the API server's
	// defaults), but lists are sequences and every declared key is present.
	Ordered = Mode{InOrder: true, Present: true}
	// Strict is equality with numbers compared by value: see Equal.
	Strict = Mode{NoExtra: true, InOrder: true, Present: true, Literal: true}
)

// Matches reports whether actual complies with template under mode. Both
// are JSON values as apimachinery decodes them; a missing value is nil.
func Matches(template, actual any, mode Mode) bool {
	switch t := template.(type) {
	case map[string]any:
		return mapMatches(t, actual, mode)
	case []any:
		return listMatches(t, actual, mode)
	case nil:
		if mode.Present {
			return actual == nil
		}
		return isZero(actual)
	default:
		if actual == nil {
			return !mode.Present && isZero(t)
		}
		return scalarEqual(t, actual, mode.Literal)
	}
}

// Equal reports whether a and b are the same JSON value, numbers compared
// by value (int64 1 equals float64 1 and json.Number "1"). It is Matches
// under Strict, and symmetric.
func Equal(a, b any) bool {
	return Matches(a, b, Strict)
}

func mapMatches(t map[string]any, actual any, mode Mode) bool {
	var a map[string]any
	switch v := actual.(type) {
	case nil:
		if mode.Present {
			return false
		}
	case map[string]any:
		a = v
	default:
		return false
	}
	for k, tv := range t {
		av, ok := a[k]
		if (!ok && mode.Present) || !Matches(tv, av, mode) {
			return false
		}
	}
	if mode.NoExtra {
		for k, av := range a {
			if _, ok := t[k]; !ok && (av != nil || mode.Present) {
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
		if mode.Present {
			return false
		}
	case []any:
		a = v
	default:
		return false
	}
	if mode.InOrder {
		if len(a) != len(t) {
			return false
		}
		for i := range t {
			if !Matches(t[i], a[i], mode) {
				return false
			}
		}
		return true
	}
	if len(t) > len(a) || (mode.NoExtra && len(t) != len(a)) {
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
		f, ok := float(v)
		return ok && f == 0
	}
}

func scalarEqual(t, a any, literal bool) bool {
	switch tv := t.(type) {
	case string:
		av, ok := a.(string)
		return ok && (tv == av || !literal && quantityEqual(tv, av))
	case bool:
		av, ok := a.(bool)
		return ok && av == tv
	}
	return numberEqual(t, a)
}

func quantityEqual(a, b string) bool {
	qa, err := resource.ParseQuantity(a)
	if err != nil {
		return false
	}
	qb, err := resource.ParseQuantity(b)
	return err == nil && qa.Cmp(qb) == 0
}

// numberEqual compares two numbers by value: exactly when both are
// integers (an int64 beyond 2^53 is not rounded), else as float64.
func numberEqual(a, b any) bool {
	if ai, ok := integer(a); ok {
		if bi, ok := integer(b); ok {
			return ai == bi
		}
	}
	af, ok1 := float(a)
	bf, ok2 := float(b)
	return ok1 && ok2 && af == bf
}

func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

func float(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	i, ok := integer(v)
	return float64(i), ok
}
