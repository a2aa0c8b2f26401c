package depgraph

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// Key identifies the object a dependency names.
type Key struct {
	// Group, Version and Kind say what the object is.
	Group, Version, Kind string
	// Namespace is empty for cluster-scoped objects.
	Namespace string
	// Name is the object's name.
	Name string
}

// GroupVersionKind returns the kind of the object k names.
func (k Key) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
}

// Ref returns the object as Pending messages name it.
func (k Key) Ref() compliance.DependencyRef {
	return compliance.DependencyRef{Kind: k.Kind, Name: k.Name}
}

// String returns "Kind name", the form used in Pending messages.
func (k Key) String() string { return k.Ref().String() }

// Dependency is a resolved dependency: an object and the compliance it must
// report.
type Dependency struct {
	Key
	// Compliance is the required value of the object's status.compliant.
	Compliance policyv1.ComplianceState
}

// defaultVersions are the apiVersions assumed for well-known policy kinds
// when a dependency omits apiVersion, as OCM's examples do.
var defaultVersions = map[string]string{
	"Policy":              policyv1.GroupVersion.String(),
	"ConfigurationPolicy": policyv1.GroupVersion.String(),
	"CertificatePolicy":   policyv1.GroupVersion.String(),
	"OperatorPolicy":      policyv1.GroupVersion.String(),
	"PolicySet":           policyv1.GroupName + "/v1beta1",
	"HierarchyPolicy":     "hierarchy.canopy.io/v1alpha1",
}

// Resolve returns the dependencies of one template: policyDeps (the
// Policy's spec.dependencies) united with the template's extra ones, in
// order, without repeats. Kinds of the policy group, and the template kinds
// in templateKinds, are looked up in namespace (the cluster namespace). It
// fails when one object is required with two different compliances.
func Resolve(namespace string, templateKinds map[schema.GroupKind]bool, policyDeps, extra []policyv1.PolicyDependency) ([]Dependency, error) {
	var out []Dependency
	seen := map[Key]policyv1.ComplianceState{}
	var conflicts []string
	for _, d := range slices.Concat(policyDeps, extra) {
		dep := resolveOne(namespace, templateKinds, d)
		if prev, ok := seen[dep.Key]; ok {
			if prev != dep.Compliance {
				conflicts = append(conflicts, fmt.Sprintf("%s is required both %s and %s", dep.Key, prev, dep.Compliance))
			}
			continue
		}
		seen[dep.Key] = dep.Compliance
		out = append(out, dep)
	}
	if len(conflicts) > 0 {
		return nil, fmt.Errorf("conflicting dependencies: %s", strings.Join(conflicts, "; "))
	}
	return out, nil
}

func resolveOne(namespace string, templateKinds map[schema.GroupKind]bool, d policyv1.PolicyDependency) Dependency {
	apiVersion := d.APIVersion
	if apiVersion == "" {
		apiVersion = defaultVersions[d.Kind]
	}
	gv, _ := schema.ParseGroupVersion(apiVersion) // a bad apiVersion shows as "no API mapping"
	key := Key{Group: gv.Group, Version: gv.Version, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name}
	if gv.Group == policyv1.GroupName || templateKinds[schema.GroupKind{Group: gv.Group, Kind: d.Kind}] {
		key.Namespace = namespace
	}
	return Dependency{Key: key, Compliance: d.Compliance}
}
