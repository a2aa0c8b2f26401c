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
	// terminating says that the namespace has a deletionTimestamp.
	terminating bool
}

// namespaceSelector is a parsed policy namespaceSelector.
type namespaceSelector struct {
	target policyv1.Target
	labels labels.Selector
	// terminating says whether terminating namespaces are selected.
	terminating bool
}

// parseNamespaceSelector checks sel's patterns and label selector. It is
// called before the namespaces are listed, so a selector that cannot parse
// never watches namespaces: no namespace change can correct it.
func parseNamespaceSelector(sel policyv1.NamespaceSelector) (*namespaceSelector, error) {
	for _, field := range []struct {
		name     string
		patterns []policyv1.NonEmptyString
	}{{"include", sel.Include}, {"exclude", sel.Exclude}} {
		for _, p := range field.patterns {
			if _, err := filepath.Match(string(p), ""); err != nil {
				return nil, fmt.Errorf("error parsing '%s' pattern '%s': %w", field.name, p, err)
			}
		}
	}
	lsel := labels.Everything()
	if sel.LabelSelector != nil {
		var err error
		if lsel, err = metav1.LabelSelectorAsSelector(sel.LabelSelector); err != nil {
			return nil, fmt.Errorf("error parsing namespace LabelSelector: %w", err)
		}
	}
	return &namespaceSelector{target: sel.Target, labels: lsel, terminating: includesTerminating(sel.TerminatingInclusion)}, nil
}

// includesTerminating reports whether terminatingInclusion selects
// terminating namespaces: IfMatch does, Never does not, and Default (or
// empty) does as the agent's default, which is OCM's default, IfMatch.
//
// Note: OCM's controller flag --default-terminating-namespace-inclusion can
// make Default drop them; the agent has no such flag.
func includesTerminating(ti policyv1.TerminatingInclusion) bool {
	return ti != policyv1.TerminatingNever
}

// selectNamespaces returns, sorted, the names of the namespaces sel
// chooses: a namespace must match an include pattern (or, with no include
// patterns, any name when a label selector is set), the label selector, and
// no exclude pattern, and be selected when terminating (terminatingInclusion).
// Patterns are filepath.Match globs. A selector with neither include patterns
// nor a label selector chooses nothing.
func (s *namespaceSelector) selectNamespaces(all []namespace) []string {
	sel := s.target
	if len(sel.Include) == 0 && sel.LabelSelector == nil {
		return nil
	}
	var names []string
	for _, ns := range all {
		if ns.terminating && !s.terminating {
			continue
		}
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
