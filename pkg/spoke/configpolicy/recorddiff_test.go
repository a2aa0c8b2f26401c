package configpolicy

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestRecordDiff: relatedObjects[].properties.diff under each recordDiff,
// as OCM records it. Field names (properties.{createdByPolicy, uid, diff,
// matchesAfterDryRun}), the values Log/InStatus/None, the default (InStatus,
// censored for ConfigMap, Secret, OAuthAccessToken, OAuthAuthorizeTokens
// and Route) and the censored text are config-policy-controller's:
// api/v1/configurationpolicy_types.go (ObjectProperties, RecordDiff,
// RecordDiffWithDefault) and controllers/configurationpolicy_controller.go
// (handleDiff). A Secret's difference is never recorded, even under
// InStatus (where OCM would record it).
func TestRecordDiff(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.ServiceAccount{}, `{metadata: {name: sa, labels: {team: red}}}`)
	f.object(&corev1.ConfigMap{}, `{metadata: {name: cm}, data: {k: old}}`)
	f.object(&corev1.Secret{}, `{metadata: {name: s}, data: {k: b2xkLXNlY3JldC12YWx1ZQ==}}`) // old-secret-value
	policy := func(name, recordDiff, object string) {
		field := ""
		if recordDiff != "" {
			field = "recordDiff: " + recordDiff
		}
		f.policy(fmt.Sprintf(`
metadata: {name: %s}
spec:
  object-templates:
  - complianceType: musthave
    %s
    objectDefinition: %s`, name, field, object))
	}
	sa := `{apiVersion: v1, kind: ServiceAccount, metadata: {name: sa, namespace: $NS, labels: {team: blue}}}`
	cm := `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: $NS}, data: {k: new}}`
	secret := `{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: $NS}, data: {k: bmV3LXNlY3JldC12YWx1ZQ==}}` // new-secret-value
	policy("sa-default", "", sa)
	policy("sa-none", "None", sa)
	policy("sa-log", "Log", sa)
	policy("cm-default", "", cm)
	policy("cm-instatus", "InStatus", cm)
	policy("secret-default", "", secret)
	policy("secret-instatus", "InStatus", secret)

	props := func(name string) func(Gomega) *policyv1.ObjectProperties {
		return func(g Gomega) *policyv1.ObjectProperties {
			st := f.status(name)(g)
			g.Expect(st.ComplianceState).To(Equal(policyv1.NonCompliant))
			g.Expect(st.RelatedObjects).To(HaveLen(1))
			return st.RelatedObjects[0].Properties
		}
	}
	saDiff := fmt.Sprintf("--- %[1]s/sa : existing\n+++ %[1]s/sa : updated\n", f.ns)
	f.g.Eventually(props("sa-default"), eventually, poll).Should(HaveField("Diff",
		And(HavePrefix(saDiff), ContainSubstring("-    team: red\n+    team: blue"))))
	f.g.Eventually(props("sa-none"), eventually, poll).Should(HaveField("Diff", BeEmpty()))
	f.g.Eventually(props("sa-log"), eventually, poll).Should(HaveField("Diff", BeEmpty()), "Log logs, the status has none")
	f.g.Eventually(props("cm-default"), eventually, poll).Should(HaveField("Diff", censoredDiff))
	f.g.Eventually(props("cm-instatus"), eventually, poll).Should(HaveField("Diff", ContainSubstring("-  k: old\n+  k: new")))
	f.g.Eventually(props("secret-default"), eventually, poll).Should(HaveField("Diff", censoredDiff))
	f.g.Eventually(props("secret-instatus"), eventually, poll).Should(HaveField("Diff", redactedDiff))
	for _, name := range []string{"sa-default", "cm-instatus", "secret-instatus"} {
		p := props(name)(f.g)
		f.g.Expect(p.CreatedByPolicy).To(HaveValue(BeFalse()), name)
		f.g.Expect(p.UID).NotTo(BeEmpty(), name)
		f.g.Expect(p.MatchesAfterDryRun).To(BeFalse(), name)
	}
	for _, name := range []string{"secret-default", "secret-instatus"} {
		f.g.Expect(fmt.Sprint(f.status(name)(f.g))).NotTo(Or(ContainSubstring("secret-value"), ContainSubstring("LXNlY3JldC12YWx1ZQ")), name)
	}
}

func TestRecordDiffFor(t *testing.T) {
	core := func(kind string) schema.GroupVersionKind { return schema.GroupVersionKind{Version: "v1", Kind: kind} }
	tests := []struct {
		rd   policyv1.RecordDiff
		gvk  schema.GroupVersionKind
		want policyv1.RecordDiff
	}{
		{"", core("ServiceAccount"), policyv1.RecordDiffInStatus},
		{"", core("ConfigMap"), recordDiffCensored},
		{"", core("Secret"), recordDiffCensored},
		{"", schema.GroupVersionKind{Group: "oauth.openshift.io", Version: "v1", Kind: "OAuthAccessToken"}, recordDiffCensored},
		{"", schema.GroupVersionKind{Group: "oauth.openshift.io", Version: "v1", Kind: "OAuthAuthorizeTokens"}, recordDiffCensored},
		{"", schema.GroupVersionKind{Group: "route.openshift.io", Version: "v1", Kind: "Route"}, recordDiffCensored},
		{"", schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "ConfigMap"}, policyv1.RecordDiffInStatus},
		{policyv1.RecordDiffNone, core("ServiceAccount"), policyv1.RecordDiffNone},
		{policyv1.RecordDiffInStatus, core("ConfigMap"), policyv1.RecordDiffInStatus},
		{policyv1.RecordDiffLog, core("Secret"), policyv1.RecordDiffLog},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %s", tt.rd, tt.gvk), func(t *testing.T) {
			NewWithT(t).Expect(recordDiffFor(tt.rd, tt.gvk)).To(Equal(tt.want))
		})
	}
}

// TestObjectDiffTruncated: a diff longer than 50 lines (after the 3 of
// the header) is cut with OCM's header (config-policy-controller
// controllers/configurationpolicy_utils.go, generateDiff).
func TestObjectDiffTruncated(t *testing.T) {
	g := NewWithT(t)
	existing, desired := map[string]any{}, map[string]any{}
	for i := range 60 {
		existing[fmt.Sprintf("k%02d", i)] = "old"
		desired[fmt.Sprintf("k%02d", i)] = "new"
	}
	diff := objectDiff("ns/a", existing, desired)
	lines := strings.Split(diff, "\n")
	g.Expect(lines[0]).To(Equal("# Truncated: showing 50/125 diff lines:"))
	g.Expect(lines[1:4]).To(Equal([]string{"--- ns/a : existing", "+++ ns/a : updated", "@@ -1,61 +1,61 @@"}))
	g.Expect(lines).To(HaveLen(1 + 53))
}
