package syncer

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/canopy-policy/canopy/pkg/hierarchy/hierarchytest"
)

// policy decodes a HierarchyPolicy; fooCorp is the shared foo-corp tree.
var policy, fooCorp = hierarchytest.Policy, hierarchytest.FooCorp

func TestAffectedNamespaces(t *testing.T) {
	g := NewWithT(t)
	old := policy(t, fooCorp)
	changed := old.DeepCopy()
	changed.Spec.Nodes[2].Labels = map[string]string{"app": "shipping2"} // shipping-app-backend
	g.Expect(affectedNamespaces(old, changed)).To(Equal([]string{"shipping-dev", "shipping-prod", "shipping-staging"}))
	changed = old.DeepCopy()
	changed.Spec.Nodes[5].Labels = map[string]string{"team": "a"} // shipping-dev
	g.Expect(affectedNamespaces(old, changed)).To(Equal([]string{"shipping-dev"}))
	changed = old.DeepCopy()
	changed.Spec.Nodes = changed.Spec.Nodes[:5] // shipping-dev removed
	g.Expect(affectedNamespaces(old, changed)).To(Equal([]string{"shipping-dev"}))
}

func keys(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, keyOf(o).String())
	}
	return out
}
