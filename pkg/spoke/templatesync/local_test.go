package templatesync

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func TestDependsOn(t *testing.T) {
	dep := func(kind, ns, name string) policyv1.PolicyDependency {
		d := policyv1.PolicyDependency{Name: name, Compliance: policyv1.Compliant}
		d.Kind, d.Namespace = kind, ns
		return d
	}
	p := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "p"},
		Spec: policyv1.PolicySpec{
			Dependencies: []policyv1.PolicyDependency{dep("Policy", "", "first"), dep("Widget", "other", "w")},
			PolicyTemplates: []policyv1.PolicyTemplate{{
				ObjectDefinition:  runtime.RawExtension{Raw: []byte(`{"kind":"ConfigurationPolicy","metadata":{"name":"cp"}}`)},
				ExtraDependencies: []policyv1.PolicyDependency{dep("ConfigurationPolicy", "", "other-cp")},
			}, {
				ObjectDefinition: runtime.RawExtension{Raw: []byte(`not json`)},
			}},
		},
	}
	got := dependsOn(p)
	slices.Sort(got)
	want := []string{"ConfigurationPolicy/c1/cp", "ConfigurationPolicy/c1/other-cp", "Policy/c1/first", "Widget/c1/w", "Widget/other/w"}
	if !slices.Equal(got, want) {
		t.Errorf("dependsOn = %v, want %v", got, want)
	}
	if got := dependsOn(&policyv1.ConfigurationPolicy{}); got != nil {
		t.Errorf("dependsOn(not a Policy) = %v, want nil", got)
	}
}

func TestNotStatusOnly(t *testing.T) {
	base := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Generation: 1, Labels: map[string]string{"a": "b"}}}
	status := base.DeepCopy()
	status.Status.ComplianceState = policyv1.Compliant
	if notStatusOnly(base, status) {
		t.Error("a status change counted as more")
	}
	if complianceOf(base) == complianceOf(status) {
		t.Error("the compliance change was not seen")
	}
	if got := complianceOf(&policyv1.ConfigurationPolicy{Status: policyv1.ConfigurationPolicyStatus{ComplianceState: policyv1.Compliant}}); got != policyv1.Compliant {
		t.Errorf("complianceOf(ConfigurationPolicy) = %q", got)
	}
	for name, change := range map[string]func(p *policyv1.Policy){
		"generation":  func(p *policyv1.Policy) { p.Generation++ },
		"labels":      func(p *policyv1.Policy) { p.Labels["a"] = "c" },
		"annotations": func(p *policyv1.Policy) { p.Annotations = map[string]string{"x": "y"} },
		"owners":      func(p *policyv1.Policy) { p.OwnerReferences = []metav1.OwnerReference{{Name: "o"}} },
		"deletion":    func(p *policyv1.Policy) { p.DeletionTimestamp = &metav1.Time{} },
	} {
		updated := base.DeepCopy()
		change(updated)
		if !notStatusOnly(base, updated) {
			t.Errorf("a change of %s was not seen", name)
		}
	}
}
