package operatorpolicy

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// TestMessages checks the condition messages against OCM's wording.
func TestMessages(t *testing.T) {
	for _, tc := range []struct {
		got  metav1.Condition
		want string
	}{
		{missingWantedCond("OperatorGroup"), "the OperatorGroup required by the policy was not found"},
		{missingNotWantedCond("Subscription"), "the Subscription is not present"},
		{foundNotWantedCond("Subscription"), "the Subscription is present"},
		{foundNotWantedCond("ClusterServiceVersion", "a.v1"), "the ClusterServiceVersion (a.v1) is present"},
		{foundNotWantedCond("ClusterServiceVersion", "a.v1", "a.v2"), "the ClusterServiceVersions (a.v1, a.v2) are present"},
		{deletedCond("ClusterServiceVersion", "a.v1"), "the ClusterServiceVersion (a.v1) was deleted"},
		{deletedCond("OperatorGroup"), "the OperatorGroup was deleted"},
		{deletingCond("CustomResourceDefinition", "x", "y"), "the CustomResourceDefinitions (x, y) have a deletion timestamp"},
		{keptCond("OperatorGroup"), "the policy specifies to keep the OperatorGroup"},
		{createdCond("Subscription"), "the Subscription required by the policy was created"},
		{mismatchCond("OperatorGroup"), "the OperatorGroup found on the cluster does not match the policy"},
		{updatedCond("Subscription"), "the Subscription was updated to match the policy"},
		{notApplicableCond("InstallPlan"), "MustNotHave policies ignore kind InstallPlan"},
		{invalidCausingUnknownCond("CatalogSource"),
			"the status of the CatalogSource could not be determined because the policy is invalid"},
		{installPlanUpgradeCond("Compliant", []string{"b.v2", "a.v2"}, []string{"b.v2"}),
			"an InstallPlan to update to [a.v2, b.v2] is available for approval but approval for [b.v2] is required"},
		{installPlanApprovedCond("a.v2"), "the InstallPlan for a.v2 was approved"},
		{allowedCSVCond("a.v1", "Failed", "InstallComponentFailed", "install strategy failed: boom"),
			"ClusterServiceVersion (a.v1) - install strategy failed: boom"},
		{disallowedCSVCond("a.v3"), "ClusterServiceVersion (a.v3) is not an approved version"},
		{deploymentCond("NonCompliant", true, []string{"a", "b"}), "the deployments a, b do not have their minimum availability"},
		{catalogSourceFindCond("Compliant", true, true, "cat"), "CatalogSource 'cat' was not found"},
		{validationCond([]error{errors.New("x"), errors.New("y")}), "x, y"},
	} {
		if tc.got.Message != tc.want {
			t.Errorf("message %q, want %q", tc.got.Message, tc.want)
		}
	}
}

// TestComplianceConfig checks which conditions affect compliance.
func TestComplianceConfig(t *testing.T) {
	g := NewWithT(t)
	g.Expect(installPlanUpgradeCond("Compliant", []string{"a"}, nil).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(installPlanUpgradeCond("NonCompliant", []string{"a"}, nil).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(deploymentCond("Compliant", true, []string{"a"}).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(deploymentCond("NonCompliant", true, []string{"a"}).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(catalogSourceFindCond("Compliant", true, false, "c").Status).To(Equal(metav1.ConditionFalse))
	g.Expect(catalogSourceFindCond("NonCompliant", true, false, "c").Status).To(Equal(metav1.ConditionTrue))
}

func TestComplianceCondition(t *testing.T) {
	now := metav1.Now()
	valid := func(p *policyv1beta1.OperatorPolicy) { setStatus(p, now, validationCond(nil)) }
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  string
		state policyv1.ComplianceState
	}{
		{name: "a condition missing", conds: []metav1.Condition{matchesCond("OperatorGroup")},
			want:  "NonCompliant; the policy spec is valid, the OperatorGroup matches what is required by the policy",
			state: policyv1.NonCompliant},
		{name: "invalid spec says only why", conds: []metav1.Condition{validationCond([]error{errors.New("bad")}),
			matchesCond("OperatorGroup")}, want: "NonCompliant; bad", state: policyv1.NonCompliant},
		{name: "missing namespace is not only why", conds: []metav1.Condition{
			validationCond([]error{errors.New("the operator namespace ('x') does not exist")})},
			want: "NonCompliant; the operator namespace ('x') does not exist", state: policyv1.NonCompliant},
		{name: "all healthy", conds: []metav1.Condition{matchesCond("OperatorGroup"), matchesCond("Subscription"),
			installPlansNoApprovalsCond, allowedCSVCond("a.v1", "Succeeded", "InstallSucceeded", "ok"), noCRDCond,
			deploymentCond("NonCompliant", false, nil), catalogSourceFindCond("Compliant", false, false, "c")},
			want: "Compliant; the policy spec is valid, the OperatorGroup matches what is required by the policy, " +
				"the Subscription matches what is required by the policy, no InstallPlans requiring approval were found, " +
				"ClusterServiceVersion (a.v1) - ok, no CRDs were found for the operator, no existing operator Deployments, " +
				"CatalogSource was found", state: policyv1.Compliant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := &policyv1beta1.OperatorPolicy{}
			valid(p)
			for _, c := range tc.conds {
				setStatus(p, now, c)
			}
			c, _ := p.Status.Condition(CondCompliant)
			g.Expect(c.Message).To(Equal(tc.want))
			g.Expect(p.Status.ComplianceState).To(Equal(tc.state))
		})
	}
}

// TestSetStatusKeepsCreatedByPolicy: an object the policy created stays
// so while its UID lives, and a condition unchanged keeps its time.
func TestSetStatusKeepsCreatedByPolicy(t *testing.T) {
	g := NewWithT(t)
	p := &policyv1beta1.OperatorPolicy{}
	first, later := metav1.Unix(100, 0), metav1.Unix(200, 0)
	r := ref{gvk: subscriptionGVK, namespace: "ns", name: "a", uid: "u1"}
	setStatus(p, first, createdCond("Subscription"), createdObj(r))
	setStatus(p, later, matchesCond("Subscription"), matchedObj(r))
	g.Expect(*p.Status.RelatedObjects[0].Properties.CreatedByPolicy).To(BeTrue())
	setStatus(p, later, matchesCond("Subscription"), matchedObj(ref{gvk: subscriptionGVK, namespace: "ns", name: "a", uid: "u2"}))
	g.Expect(p.Status.RelatedObjects[0].Properties.CreatedByPolicy).To(BeNil())
	c, _ := p.Status.Condition(CondSubscription)
	g.Expect(c.LastTransitionTime).To(Equal(later))
	setStatus(p, metav1.Unix(300, 0), matchesCond("Subscription"))
	c, _ = p.Status.Condition(CondSubscription)
	g.Expect(c.LastTransitionTime).To(Equal(later))
}

// TestBuildSubscription checks the validation of spec.subscription and the
// approval the policy chooses, with OCM's messages.
func TestBuildSubscription(t *testing.T) {
	for _, tc := range []struct {
		name, sub, action, approval string
		versions                    []string
		err, wantApproval           string
	}{
		{name: "not an object", sub: `[]`, err: "the policy spec.subscription is invalid: json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{name: "no name", sub: `{"namespace":"ns"}`, err: "name is required in spec.subscription"},
		{name: "bad name", sub: `{"name":"A_b"}`, err: "the name 'A_b' used for the subscription is invalid: " +
			"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with " +
			"an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
		{name: "bad namespace", sub: `{"name":"a","namespace":"N S"}`,
			err: "the namespace 'N S' used for the subscription is not a valid namespace identifier"},
		{name: "unknown field", sub: `{"name":"a","sourceNS":"x"}`,
			err: `the policy spec.subscription is invalid: json: unknown field "sourceNS"`},
		{name: "approval set", sub: `{"name":"a","installPlanApproval":"Automatic"}`,
			err: "installPlanApproval is prohibited in spec.subscription"},
		{name: "inform", sub: `{"name":"a"}`, action: "inform", approval: "Automatic", wantApproval: "Manual"},
		{name: "enforce, automatic", sub: `{"name":"a"}`, action: "enforce", approval: "Automatic", wantApproval: "Automatic"},
		{name: "enforce, automatic, versions", sub: `{"name":"a"}`, action: "enforce", approval: "Automatic",
			versions: []string{"a.v1"}, wantApproval: "Manual"},
		{name: "enforce, none", sub: `{"name":"a"}`, action: "enforce", approval: "None", wantApproval: "Manual"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := &policyv1beta1.OperatorPolicy{Spec: policyv1beta1.OperatorPolicySpec{
				RemediationAction: policyv1.RemediationAction(tc.action), UpgradeApproval: tc.approval,
				Subscription: runtime.RawExtension{Raw: []byte(tc.sub)}}}
			sub, err := buildSubscription(p, p.Spec.Subscription.Raw, tc.versions)
			if tc.err != "" {
				g.Expect(err).To(MatchError(tc.err))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sub.spec.InstallPlanApproval).To(Equal(tc.wantApproval))
		})
	}
}

func TestCanonicalVersions(t *testing.T) {
	g := NewWithT(t)
	g.Expect(canonicalVersions([]string{" a.v1 , a.v2", "", " ", "a.v3"})).To(Equal([]string{"a.v1", "a.v2", "a.v3"}))
	g.Expect(versionAllowed(nil, "", "x")).To(BeTrue())
	g.Expect(versionAllowed([]string{"a.v1"}, "a.v0", "a.v0")).To(BeTrue())
	g.Expect(versionAllowed([]string{"a.v1"}, "", "a.v2")).To(BeFalse())
}

func TestOpLabelName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(opLabelName("sub", "ns")).To(Equal("sub.ns"))
	long := opLabelName("a-very-long-subscription-name-that-goes-on-and-on", "and-a-namespace-that-is-long-")
	g.Expect(len(long)).To(BeNumerically("<=", 63))
	g.Expect(long).NotTo(HaveSuffix("-"))
}

// TestNextMinorChannels checks OCM's channel naming rule
// (operatorpolicy_controller.go, getNextMinorChannel).
func TestNextMinorChannels(t *testing.T) {
	channels := []string{"stable-4.14", "stable-4.16", "stable-4.15", "stable-5.0", "fast-4.16", "v4.15.x", "v4.16.x", "stable"}
	for _, tc := range []struct {
		selected string
		want     []string
	}{
		{"stable-4.14", []string{"stable-4.15", "stable-4.16"}},
		{"stable-4.16", nil},
		{"v4.15.x", []string{"v4.16.x"}},
		{"stable", nil},
		{"", nil},
	} {
		NewWithT(t).Expect(nextMinorChannels(channels, tc.selected)).To(Equal(tc.want), tc.selected)
	}
}

// TestBundleDependencies checks the CSVs approved with an operator, read
// from its InstallPlan's bundle lookups as OCM reads them
// (operatorpolicy_controller.go, getBundleDependencies).
func TestBundleDependencies(t *testing.T) {
	lookup := func(csv, pkg string, requires ...string) any {
		props := []string{`{"type":"olm.package","value":{"packageName":"` + pkg + `","version":"1.0.0"}}`}
		for _, r := range requires {
			props = append(props, `{"type":"olm.package.required","value":{"packageName":"`+r+`","versionRange":">=1"}}`)
		}
		return map[string]any{"identifier": csv, "properties": `{"properties":[` + strings.Join(props, ",") + `]}`}
	}
	ip := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"bundleLookups": []any{
		lookup("a.v1", "a", "b"), lookup("b.v1", "b", "c", "a"), lookup("c.v1", "c"), lookup("d.v1", "d", "c"),
	}}}}
	g := NewWithT(t)
	g.Expect(sets.List(bundleDependencies(ip, "a.v1"))).To(Equal([]string{"b.v1", "c.v1"}))
	g.Expect(sets.List(bundleDependencies(ip, "c.v1"))).To(BeEmpty())
	broken := ip.DeepCopy()
	_ = unstructured.SetNestedSlice(broken.Object, []any{map[string]any{"identifier": "a.v1", "properties": "{"},
		lookup("b.v1", "b")}, "status", "bundleLookups")
	g.Expect(sets.List(bundleDependencies(broken, "a.v1"))).To(BeEmpty(), "properties that do not parse end the search")
}

// TestRecordHistory: one entry per change of the Compliant message, the
// newest first, bounded.
func TestRecordHistory(t *testing.T) {
	g := NewWithT(t)
	p := &policyv1beta1.OperatorPolicy{}
	recordHistory(p, 2)
	g.Expect(p.Status.History).To(BeEmpty(), "nothing evaluated yet")
	for i, msg := range []string{"NonCompliant; a", "NonCompliant; a", "Compliant; b", "NonCompliant; c"} {
		setCondition(&p.Status, metav1.Condition{Type: CondCompliant, Status: "False", Reason: "r", Message: msg},
			metav1.Unix(int64(i), 0))
		recordHistory(p, 2)
	}
	g.Expect(p.Status.History).To(HaveLen(2))
	g.Expect(p.Status.History[0].Message).To(Equal("NonCompliant; c"))
	g.Expect(p.Status.History[0].LastTimestamp.Unix()).To(Equal(int64(3)))
	g.Expect(p.Status.History[1].Message).To(Equal("Compliant; b"))
	recordHistory(p, 0)
	g.Expect(p.Status.History).To(HaveLen(2), "unchanged message")
}

// TestComplianceConfigSummary: NoDeprecations and
// MinorChannelUpgradeAvailable count only when complianceConfig says
// NonCompliant, as in operatorpolicy_status.go
// (calculateComplianceCondition).
func TestComplianceConfigSummary(t *testing.T) {
	healthy := []metav1.Condition{validationCond(nil), matchesCond("OperatorGroup"), matchesCond("Subscription"),
		installPlansNoApprovalsCond, allowedCSVCond("a.v1", "Succeeded", "InstallSucceeded", "ok"), noCRDCond,
		deploymentCond("NonCompliant", false, nil), catalogSourceFindCond("Compliant", false, false, "c"),
		deprecationCond("a", deprecatedPackage, "gone."),
		minorChannelUpgradeCond("NonCompliant", []string{"stable-1.1"})}
	for _, tc := range []struct {
		name   string
		config policyv1beta1.ComplianceConfig
		suffix string
		state  policyv1.ComplianceState
	}{
		{name: "defaults", state: policyv1.Compliant, suffix: "CatalogSource was found"},
		{name: "deprecations", config: policyv1beta1.ComplianceConfig{DeprecationsPresent: "NonCompliant"},
			state: policyv1.NonCompliant, suffix: "CatalogSource was found, the requested a Package was deprecated. gone."},
		{name: "minor channel", config: policyv1beta1.ComplianceConfig{MinorChannelUpgradeAvailable: "NonCompliant"},
			state:  policyv1.NonCompliant,
			suffix: "CatalogSource was found, a newer version of the operator is available in channel(s): stable-1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := &policyv1beta1.OperatorPolicy{Spec: policyv1beta1.OperatorPolicySpec{ComplianceType: "musthave",
				ComplianceConfig: tc.config}}
			for _, c := range healthy {
				setStatus(p, metav1.Now(), c)
			}
			c, _ := p.Status.Condition(CondCompliant)
			g.Expect(c.Message).To(HaveSuffix(tc.suffix))
			g.Expect(p.Status.ComplianceState).To(Equal(tc.state))
		})
	}
}
