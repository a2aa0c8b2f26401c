package syncer

import (
	"reflect"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/pkg/hierarchy"
)

func TestNewTreeMemoizesPerGeneration(t *testing.T) {
	g := NewWithT(t)
	p := policy(t, `
metadata: {name: cached, namespace: c1, uid: 4c0ffee0-0000-4000-8000-000000000001, generation: 1}
spec:
  nodes:
  - {name: a}
  - {name: b, parent: missing}
`)
	first := newTree(p)
	g.Expect(first.Problems).To(HaveLen(1), "b's parent is missing")
	first.Problems = append(first.Problems, "added by a caller") // as evaluate does
	g.Expect(newTree(p).Problems).To(Equal(hierarchy.Build(p).Problems), "a caller's appends stay its own")
	g.Expect(mapID(newTree(p).Nodes)).To(Equal(mapID(first.Nodes)), "the same generation is built once")

	p.Spec.Nodes[1].Parent = "a"
	g.Expect(newTree(p).Problems).To(HaveLen(1), "a changed spec of the same generation is not re-read")
	p.Generation = 2
	g.Expect(newTree(p).Problems).To(BeEmpty(), "a new generation is built again")

	p.UID, p.Generation = "", 0
	g.Expect(mapID(newTree(p).Nodes)).NotTo(Equal(mapID(newTree(p).Nodes)), "objects from files are not cached")
}

// mapID identifies a map by its address.
func mapID[K comparable, V any](m map[K]V) uintptr { return reflect.ValueOf(m).Pointer() }
