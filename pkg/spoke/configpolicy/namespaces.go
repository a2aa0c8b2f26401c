package configpolicy

import (
	"fmt"
	"path/filepath"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// namespace is what namespace selection needs of a namespace.
type namespace struct {
	name   string
	labels map[string]string
}

// namespaceSelector is a parsed policy namespaceSelector.
type namespaceSelector struct {
	target policyv1.Target
	labels labels.Selector
}

// parseNamespaceSelector checks sel's patterns and label selector. It is
// called before the namespaces are listed, so a selector that cannot parse
// never watches namespaces: no namespace change can correct it.
func parseNamespaceSelector(sel policyv1.Target) (*namespaceSelector, error) {
	for _, p := range slices.Concat(sel.Include, sel.Exclude) {
		if _, err := filepath.Match(string(p), ""); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	lsel := labels.Everything()
	if sel.LabelSelector != nil {
		var err error
		if lsel, err = metav1.LabelSelectorAsSelector(sel.LabelSelector); err != nil {
			return nil, err
		}
	}
	return &namespaceSelector{target: sel, labels: lsel}, nil
}

// selectNamespaces returns, sorted, the names of the namespaces sel
// chooses: a namespace must match an include pattern (or, with no include
// patterns, any name when a label selector is set), the label selector, and
// no exclude pattern. Patterns are filepath.Match globs. A selector with
// neither include patterns nor a label selector chooses nothing.
func (s *namespaceSelector) selectNamespaces(all []namespace) []string {
	sel := s.target
	if len(sel.Include) == 0 && sel.LabelSelector == nil {
		return nil
	}
	var names []string
	for _, ns := range all {
		if len(sel.Include) > 0 && !anyMatch(sel.Include, ns.name) {
			continue
		}
		if anyMatch(sel.Exclude, ns.name) || !s.labels.Matches(labels.Set(ns.labels)) {
			continue
		}
		names = append(names, ns.name)
	}
	slices.Sort(names)
	return names
}

func anyMatch(patterns []policyv1.NonEmptyString, name string) bool {
	for _, p := range patterns {
		if ok, _ := filepath.Match(string(p), name); ok {
			return true
		}
	}
	return false
}
