package vet

import (
	"testing"

	. "github.com/onsi/gomega"
)

// policyWith returns a Policy document of namespace ns ("" for none) with
// one ConfigurationPolicy template and the given spec.dependencies lines;
// its template is on line 8 when it has one dependency.
func policyWith(ns, name, template string, dependencies ...string) string {
	meta := "{name: " + name + ", namespace: " + ns + "}"
	if ns == "" {
		meta = "{name: " + name + "}"
	}
	s := "apiVersion: policy.open-cluster-management.io/v1\nkind: Policy\nmetadata: " + meta + "\nspec:\n"
	if len(dependencies) > 0 {
		s += "  dependencies:\n"
	}
	for _, d := range dependencies {
		s += "    - " + d + "\n"
	}
	return s + "  policy-templates:\n    - objectDefinition: {apiVersion: policy.open-cluster-management.io/v1, " +
		"kind: ConfigurationPolicy, metadata: {name: " + template + "}, spec: {object-templates: []}}\n"
}

// dependsOnPolicy is a dependency on Policy name.
func dependsOnPolicy(name string) string {
	return "{apiVersion: policy.open-cluster-management.io/v1, kind: Policy, name: " + name + ", compliance: Compliant}"
}

// dependencyCycleCases: policies and templates of one namespace waiting
// for each other, as templatesync's graph (pkg/depgraph) sees them.
var dependencyCycleCases = []findingCase{{
	name: "two policies waiting for each other",
	yaml: policyWith("policies", "a", "ta", dependsOnPolicy("b")) + "---\n" + policyWith("policies", "b", "tb", dependsOnPolicy("a")),
	want: []string{
		"f.yaml:8: error: [dependency-cycle] Policy policies/a: template ConfigurationPolicy ta: dependency cycle: Policy a -> Policy b -> Policy a",
		"f.yaml:17: error: [dependency-cycle] Policy policies/b: template ConfigurationPolicy tb: dependency cycle: Policy b -> Policy a -> Policy b",
	},
}, {
	name: "two templates of one policy waiting for each other",
	yaml: `apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata: {name: a, namespace: policies}
spec:
  policy-templates:
    - objectDefinition: {apiVersion: policy.open-cluster-management.io/v1, kind: ConfigurationPolicy, metadata: {name: one}, spec: {object-templates: []}}
      extraDependencies:
        - {apiVersion: policy.open-cluster-management.io/v1, kind: ConfigurationPolicy, name: two, compliance: Compliant}
    - objectDefinition: {apiVersion: policy.open-cluster-management.io/v1, kind: ConfigurationPolicy, metadata: {name: two}, spec: {object-templates: []}}
      extraDependencies:
        - {apiVersion: policy.open-cluster-management.io/v1, kind: ConfigurationPolicy, name: one, compliance: Compliant}
`,
	want: []string{
		"f.yaml:6: error: [dependency-cycle] Policy policies/a: template ConfigurationPolicy one: dependency cycle: " +
			"ConfigurationPolicy one -> ConfigurationPolicy two -> ConfigurationPolicy one",
		"f.yaml:9: error: [dependency-cycle] Policy policies/a: template ConfigurationPolicy two: dependency cycle: " +
			"ConfigurationPolicy two -> ConfigurationPolicy one -> ConfigurationPolicy two",
	},
}, {
	name: "a policy without namespace is in the default namespace",
	yaml: policyWith("", "a", "ta", dependsOnPolicy("b")) + "---\n" + policyWith("default", "b", "tb", dependsOnPolicy("a")),
	want: []string{
		"f.yaml:8: error: [dependency-cycle] Policy a: template ConfigurationPolicy ta: dependency cycle: Policy a -> Policy b -> Policy a",
		"f.yaml:17: error: [dependency-cycle] Policy default/b: template ConfigurationPolicy tb: dependency cycle: Policy b -> Policy a -> Policy b",
	},
}, {
	name: "policies of two namespaces with the same names",
	yaml: policyWith("team-a", "a", "ta", dependsOnPolicy("b")) + "---\n" + policyWith("team-b", "b", "tb", dependsOnPolicy("a")),
}, {
	name: "a chain is not a cycle",
	yaml: policyWith("policies", "a", "ta", dependsOnPolicy("b")) + "---\n" + policyWith("policies", "b", "tb"),
}}

func TestDependencyCycleFindings(t *testing.T) { runFindingCases(t, dependencyCycleCases) }

// TestDependencyCyclesDefaultNamespace checks that the namespace assumed
// for a Policy without one is Options.DefaultNamespace.
func TestDependencyCyclesDefaultNamespace(t *testing.T) {
	docs, _ := Parse("f.yaml", []byte(policyWith("", "a", "ta", dependsOnPolicy("b"))+"---\n"+
		policyWith("team-a", "b", "tb", dependsOnPolicy("a"))))
	for ns, want := range map[string]int{"team-a": 2, "default": 0} {
		checker, err := New(Options{DefaultNamespace: ns})
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		var cycles []Finding
		for _, f := range checker.Check(t.Context(), docs) {
			if f.Check == CheckDependencyCycle {
				cycles = append(cycles, f)
			}
		}
		NewWithT(t).Expect(cycles).To(HaveLen(want), "namespace %s assumed", ns)
	}
}
