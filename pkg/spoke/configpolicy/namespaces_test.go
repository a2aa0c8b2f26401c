package configpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func TestSelectNamespaces(t *testing.T) {
	all := []namespace{
		{name: "team-a", labels: map[string]string{"env": "prod"}},
		{name: "team-b", labels: map[string]string{"env": "dev"}},
		{name: "team-sandbox", labels: map[string]string{"env": "prod"}},
		{name: "kube-system"},
		{name: "default"},
		{name: "team-old", labels: map[string]string{"env": "prod"}, terminating: true},
	}
	inc := func(p ...policyv1.NonEmptyString) []policyv1.NonEmptyString { return p }
	tests := []struct {
		name    string
		sel     policyv1.Target
		ti      policyv1.TerminatingInclusion
		want    []string
		wantErr string
	}{
		{name: "empty selects nothing", sel: policyv1.Target{}},
		{name: "include glob", sel: policyv1.Target{Include: inc("team-*")}, want: []string{"team-a", "team-b", "team-old", "team-sandbox"}},
		{name: "include and exclude", sel: policyv1.Target{Include: inc("team-*", "default"), Exclude: inc("*-sandbox")},
			want: []string{"default", "team-a", "team-b", "team-old"}},
		{name: "labels alone", sel: policyv1.Target{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			want: []string{"team-a", "team-old", "team-sandbox"}},
		{name: "empty label selector selects all", sel: policyv1.Target{LabelSelector: &metav1.LabelSelector{}, Exclude: inc("kube-*")},
			want: []string{"default", "team-a", "team-b", "team-old", "team-sandbox"}},
		// terminatingInclusion: OCM's pkg/common/namespace_selection.go (filter).
		{name: "terminating namespaces are selected by IfMatch", sel: policyv1.Target{Include: inc("team-*")}, ti: policyv1.TerminatingIfMatch,
			want: []string{"team-a", "team-b", "team-old", "team-sandbox"}},
		{name: "and by Default", sel: policyv1.Target{Include: inc("team-*")}, ti: policyv1.TerminatingDefault,
			want: []string{"team-a", "team-b", "team-old", "team-sandbox"}},
		{name: "but never by Never", sel: policyv1.Target{Include: inc("team-*")}, ti: policyv1.TerminatingNever,
			want: []string{"team-a", "team-b", "team-sandbox"}},
		{name: "Never with labels", sel: policyv1.Target{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			ti: policyv1.TerminatingNever, want: []string{"team-a", "team-sandbox"}},
		{name: "IfMatch still needs a match", sel: policyv1.Target{Include: inc("team-*"), Exclude: inc("*-old")}, ti: policyv1.TerminatingIfMatch,
			want: []string{"team-a", "team-b", "team-sandbox"}},
		{name: "include, labels and expressions", sel: policyv1.Target{Include: inc("team-*"), LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "dev"}}},
		}, Exclude: inc("team-sandbox")}, want: []string{"team-a", "team-b", "team-old"}},
		{name: "bad operator", sel: policyv1.Target{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}},
		}}, wantErr: `"Near" is not a valid label selector operator`},
		{name: "bad pattern", sel: policyv1.Target{Include: inc("team-[")}, wantErr: "syntax error in pattern"},
		{name: "bad exclude pattern", sel: policyv1.Target{Include: inc("*"), Exclude: inc("[")}, wantErr: "syntax error in pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			parsed, err := parseNamespaceSelector(policyv1.NamespaceSelector{Target: tt.sel, TerminatingInclusion: tt.ti})
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(parsed.selectNamespaces(all)).To(Equal(tt.want))
		})
	}
}
