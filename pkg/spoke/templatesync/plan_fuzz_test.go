package templatesync

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/depgraph"
)

// FuzzPlanTemplates plans a Policy whose one template is arbitrary bytes:
// planning never panics, is deterministic, and a template that is not
// created always says why.
func FuzzPlanTemplates(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"a"}}`), "Policy", "p")
	f.Add([]byte(`{"kind":"Foo","metadata":{"name":"a"}}`), "Widget", "w")
	f.Add([]byte(`{"metadata":"x"}`), "", "")
	f.Add([]byte(`not json`), "ConfigurationPolicy", "a")
	f.Fuzz(func(t *testing.T, raw []byte, depKind, depName string) {
		policy := &policyv1.Policy{}
		policy.Namespace, policy.Name = "cluster1", "p"
		dep := policyv1.PolicyDependency{Name: depName, Compliance: policyv1.Compliant}
		dep.Kind = depKind
		policy.Spec.Dependencies = []policyv1.PolicyDependency{dep}
		policy.Spec.PolicyTemplates = []policyv1.PolicyTemplate{{ObjectDefinition: runtime.RawExtension{Raw: raw}}}
		in := Inputs{TemplateKinds: map[schema.GroupKind]bool{{Group: policyv1.GroupName, Kind: "ConfigurationPolicy"}: true}, Graph: depgraph.Graph{}}
		first, second := Plan(policy, in), Plan(policy, in)
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("not deterministic: %v then %v", first, second)
		}
		for _, tmpl := range first {
			if tmpl.Object == nil && tmpl.Problem == "" {
				t.Fatalf("template %q is not created and says nothing", tmpl.Name)
			}
		}
	})
}
