package syncer

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
)

// failures are what failed while evaluating one scope. Each kind of failure
// has a field of its own, so that none needs a reserved index and none can
// hide another.
type failures struct {
	// read is the failed read of the scope's observed state: nothing was
	// planned after it.
	read error
	// kinds are the live-propagation kinds the cluster does not serve, in
	// the order of spec.propagation.kinds.
	kinds []error
	// writes are the failed writes, by index in the outcome's actions.
	writes map[int]error
}

// setWrite records that the write of action i failed with err.
func (f *failures) setWrite(i int, err error) {
	if f.writes == nil {
		f.writes = map[int]error{}
	}
	f.writes[i] = err
}

// write returns the failure of action i's write, nil when it did not fail.
func (f failures) write(i int) error { return f.writes[i] }

// count returns how many reads and writes failed.
func (f failures) count() int {
	n := len(f.kinds) + len(f.writes)
	if f.read != nil {
		n++
	}
	return n
}

// all returns every failure: the read, then the kinds, then the writes in
// action order.
func (f failures) all() []error {
	var out []error
	if f.read != nil {
		out = append(out, f.read)
	}
	out = append(out, f.kinds...)
	for _, i := range slices.Sorted(maps.Keys(f.writes)) {
		out = append(out, f.writes[i])
	}
	return out
}

// unservedKinds returns an error for each kind of p's live propagation that
// mapper does not know: such a kind is never copied, and the user must see
// why. It is pure.
func unservedKinds(mapper meta.RESTMapper, p *hierarchyv1alpha1.HierarchyPolicy) []error {
	if p.Spec.Propagation == nil {
		return nil
	}
	var out []error
	for _, k := range p.Spec.Propagation.Kinds {
		gk := schema.GroupKind{Group: k.Group, Kind: k.Kind}
		if _, err := mapper.RESTMapping(gk); err != nil {
			out = append(out, fmt.Errorf("propagation kind %s: %w", gk, err))
		}
	}
	return out
}
