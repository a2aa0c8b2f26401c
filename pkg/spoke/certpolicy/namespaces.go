package certpolicy

import (
	"fmt"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// selectNamespaces returns, sorted, the names of the namespaces sel
// chooses, as OCM's namespaceSelector does (and configpolicy): a namespace
// must match an include glob (or, with none, any name when a label
// selector is set), the label selector, and no exclude glob. A selector
// with neither include globs nor a label selector chooses nothing.
func selectNamespaces(sel policyv1.Target, all []corev1.Namespace) ([]string, error) {
	for _, p := range slices.Concat(sel.Include, sel.Exclude) {
		if _, err := filepath.Match(string(p), ""); err != nil {
			return nil, fmt.Errorf("namespaceSelector pattern %q: %w", p, err)
		}
	}
	if len(sel.Include) == 0 && sel.LabelSelector == nil {
		return nil, nil
	}
	lsel := labels.Everything()
	if sel.LabelSelector != nil {
		var err error
		if lsel, err = metav1.LabelSelectorAsSelector(sel.LabelSelector); err != nil {
			return nil, fmt.Errorf("namespaceSelector: %w", err)
		}
	}
	var names []string
	for i := range all {
		ns := &all[i]
		if len(sel.Include) > 0 && !anyMatch(sel.Include, ns.Name) {
			continue
		}
		if anyMatch(sel.Exclude, ns.Name) || !lsel.Matches(labels.Set(ns.Labels)) {
			continue
		}
		names = append(names, ns.Name)
	}
	slices.Sort(names)
	return names, nil
}

func anyMatch(patterns []policyv1.NonEmptyString, name string) bool {
	for _, p := range patterns {
		if ok, _ := filepath.Match(string(p), name); ok {
			return true
		}
	}
	return false
}
