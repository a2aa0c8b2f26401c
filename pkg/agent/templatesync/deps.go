package templatesync

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
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

// String returns "Kind name", the form used in Pending messages.
func (k Key) String() string { return k.Kind + " " + k.Name }

// Dependency is a resolved dependency: an object and the compliance it must
// report.
type Dependency struct {
	Key
	// Compliance is the required value of the object's status.compliant.
	Compliance policyv1.ComplianceState
}

// Observation is what the reconciler found of a dependency's object.
type Observation struct {
	// Unmapped is true when the API server knows no resource for the kind.
	Unmapped bool
	// Found is true when the object exists.
	Found bool
	// Compliance is the object's status.compliant; empty when it has none.
	Compliance policyv1.ComplianceState
}

// Reasons a dependency is not met.
const (
	// ReasonNotFound: the object does not exist.
	ReasonNotFound = "not found"
	// ReasonNoMapping: the API server serves no resource of that kind.
	ReasonNoMapping = "no API mapping for the kind"
	// ReasonNoCompliance: the object exists but has no status.compliant.
	ReasonNoCompliance = "no status.compliant"
)

// Unmet is a dependency that is not satisfied, and why.
type Unmet struct {
	Dependency
	// Reason is one of the Reason* constants or "want X got Y".
	Reason string
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

// Evaluate returns the dependencies of deps that are not met, given what
// was observed of each (a missing observation means not found).
func Evaluate(deps []Dependency, observed map[Key]Observation) []Unmet {
	var unmet []Unmet
	for _, d := range deps {
		if reason := unmetReason(d, observed[d.Key]); reason != "" {
			unmet = append(unmet, Unmet{Dependency: d, Reason: reason})
		}
	}
	return unmet
}

func unmetReason(d Dependency, o Observation) string {
	switch {
	case o.Unmapped || d.Version == "":
		return ReasonNoMapping
	case !o.Found:
		return ReasonNotFound
	case o.Compliance == "":
		return ReasonNoCompliance
	case o.Compliance != d.Compliance:
		return fmt.Sprintf("want %s got %s", d.Compliance, o.Compliance)
	default:
		return ""
	}
}

// PendingMessage returns the compliance message of a template whose
// dependencies unmet are not satisfied, without the leading state:
//
//	Dependencies were not satisfied: 2 are still pending (Policy a, ConfigurationPolicy b); Policy a: want Compliant got NonCompliant; ConfigurationPolicy b: not found
//
// With ignorePending, " but ignorePending is true" follows the list.
func PendingMessage(unmet []Unmet, ignorePending bool) string {
	names := make([]string, len(unmet))
	reasons := make([]string, len(unmet))
	for i, u := range unmet {
		names[i] = u.String()
		reasons[i] = u.String() + ": " + u.Reason
	}
	msg := fmt.Sprintf("Dependencies were not satisfied: %d are still pending (%s)", len(unmet), strings.Join(names, ", "))
	if ignorePending {
		msg += " but ignorePending is true"
	}
	return msg + "; " + strings.Join(reasons, "; ")
}
