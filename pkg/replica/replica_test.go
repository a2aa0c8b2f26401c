package replica

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

func rootPolicy() *policyv1.Policy {
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{
			Name: "pol", Namespace: "ns", UID: "uid", ResourceVersion: "7", Generation: 3,
			Labels:          map[string]string{"team": "a", policyv1.GroupName + "/standards": "NIST"},
			Annotations:     map[string]string{"note": "x", policyv1.GroupName + "/categories": "CM", lastAppliedAnnotation: "{}"},
			Finalizers:      []string{"example.com/f"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "o"}},
		},
		Spec: policyv1.PolicySpec{
			RemediationAction: policyv1.Inform,
			PolicyTemplates: []policyv1.PolicyTemplate{{
				ObjectDefinition:  runtime.RawExtension{Raw: []byte(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy","metadata":{"name":"t"}}`)},
				ExtraDependencies: []policyv1.PolicyDependency{{TypeMeta: metav1.TypeMeta{Kind: "Policy"}, Name: "dep", Compliance: policyv1.Compliant}},
			}},
		},
		Status: policyv1.PolicyStatus{ComplianceState: policyv1.NonCompliant, Placement: []policyv1.Placement{{PlacementBinding: "b"}}},
	}
}

func TestBuild(t *testing.T) {
	g := NewWithT(t)
	root := rootPolicy()
	before := root.DeepCopy()
	r := Build(root, Cluster{Name: "c1"}, nil)

	g.Expect(root).To(Equal(before), "the root (a cache object) must not change")
	g.Expect(r.Namespace).To(Equal("c1"))
	g.Expect(r.Name).To(Equal("ns.pol"))
	g.Expect(r.Labels).To(Equal(map[string]string{
		"team": "a", policyv1.GroupName + "/standards": "NIST",
		policyv1.RootPolicyLabel: "ns.pol", policyv1.ClusterNameLabel: "c1", policyv1.ClusterNamespaceLabel: "c1",
		ManagedByLabel: ManagedByValue,
	}))
	g.Expect(r.Annotations).To(Equal(map[string]string{
		"note": "x", policyv1.GroupName + "/categories": "CM", argoCompareOptionsAnnotation: argoIgnoreExtraneous,
	}))
	g.Expect(r.Finalizers).To(BeEmpty())
	g.Expect(r.OwnerReferences).To(BeEmpty())
	g.Expect(r.UID).To(BeEmpty())
	g.Expect(r.ResourceVersion).To(BeEmpty())
	g.Expect(r.Status).To(Equal(policyv1.PolicyStatus{}))
	g.Expect(r.Spec.RemediationAction).To(Equal(policyv1.Inform))
	g.Expect(r.Spec.PolicyTemplates[0].ObjectDefinition).To(Equal(root.Spec.PolicyTemplates[0].ObjectDefinition))
	g.Expect(r.Spec.PolicyTemplates[0].ExtraDependencies).To(Equal([]policyv1.PolicyDependency{policyDependency("ns.dep", policyv1.Compliant)}))

	root.Spec.CopyPolicyMetadata = ptr.To(false)
	r = Build(root, Cluster{Name: "c1", Enforce: true}, nil)
	g.Expect(r.Labels).NotTo(HaveKey("team"))
	g.Expect(r.Labels).To(HaveKeyWithValue(policyv1.GroupName+"/standards", "NIST"))
	g.Expect(r.Annotations).To(Equal(map[string]string{
		policyv1.GroupName + "/categories": "CM", argoCompareOptionsAnnotation: argoIgnoreExtraneous,
	}))
	g.Expect(r.Spec.RemediationAction).To(Equal(policyv1.RemediationAction("enforce")))

	root.Spec.RemediationAction = policyv1.Enforce
	g.Expect(Build(root, Cluster{Name: "c1", Enforce: true}, nil).Spec.RemediationAction).To(Equal(policyv1.Enforce))
}

func TestAnnotationsDropRootOnlyOnes(t *testing.T) {
	g := NewWithT(t)
	root := rootPolicy()
	root.Annotations[templating.TriggerUpdateAnnotation] = "1"
	root.Annotations[templating.IVAnnotation] = "root's"
	r := Build(root, Cluster{Name: "c1"}, nil)
	g.Expect(r.Annotations).NotTo(HaveKey(templating.TriggerUpdateAnnotation))
	g.Expect(r.Annotations).NotTo(HaveKey(templating.IVAnnotation))
}

func dep(apiVersion, kind, namespace, name string) policyv1.PolicyDependency {
	return policyv1.PolicyDependency{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}, Namespace: namespace, Name: name,
		Compliance: policyv1.Compliant,
	}
}

func TestCanonicalDependencies(t *testing.T) {
	members := PolicySetMembers{
		{Namespace: "ns", Name: "set"}:    {"a", "b"},
		{Namespace: "other", Name: "set"}: {"c"},
		{Namespace: "ns", Name: "empty"}:  {},
	}
	const v1, v1beta1 = "policy.open-cluster-management.io/v1", "policy.open-cluster-management.io/v1beta1"
	for _, tc := range []struct {
		name string
		in   []policyv1.PolicyDependency
		want []policyv1.PolicyDependency
	}{
		{"nil stays nil", nil, nil},
		{"a policy in the root's namespace", []policyv1.PolicyDependency{dep(v1, "Policy", "", "p")},
			[]policyv1.PolicyDependency{dep(v1, "Policy", "", "ns.p")}},
		{"a policy without apiVersion", []policyv1.PolicyDependency{dep("", "Policy", "", "p")},
			[]policyv1.PolicyDependency{dep(v1, "Policy", "", "ns.p")}},
		{"a policy in another namespace", []policyv1.PolicyDependency{dep(v1, "Policy", "other", "p")},
			[]policyv1.PolicyDependency{dep(v1, "Policy", "", "other.p")}},
		{"an already canonical policy", []policyv1.PolicyDependency{dep(v1, "Policy", "", "other.p")},
			[]policyv1.PolicyDependency{dep(v1, "Policy", "", "other.p")}},
		{"a policy set expands to its members", []policyv1.PolicyDependency{dep(v1beta1, "PolicySet", "", "set")},
			[]policyv1.PolicyDependency{dep(v1, "Policy", "", "ns.a"), dep(v1, "Policy", "", "ns.b")}},
		{"a policy set in another namespace", []policyv1.PolicyDependency{dep(v1beta1, "PolicySet", "other", "set")},
			[]policyv1.PolicyDependency{dep(v1, "Policy", "", "other.c")}},
		{"an empty policy set", []policyv1.PolicyDependency{dep(v1beta1, "PolicySet", "", "empty")},
			[]policyv1.PolicyDependency{}},
		{"a missing policy set is kept", []policyv1.PolicyDependency{dep(v1beta1, "PolicySet", "", "gone")},
			[]policyv1.PolicyDependency{dep(v1beta1, "PolicySet", "", "gone")}},
		{"other kinds are kept", []policyv1.PolicyDependency{dep(v1, "ConfigurationPolicy", "", "cp"), dep("v1", "Namespace", "", "n")},
			[]policyv1.PolicyDependency{dep(v1, "ConfigurationPolicy", "", "cp"), dep("v1", "Namespace", "", "n")}},
		{"a Policy of another group is kept", []policyv1.PolicyDependency{dep("example.com/v1", "Policy", "", "p")},
			[]policyv1.PolicyDependency{dep("example.com/v1", "Policy", "", "p")}},
		{"duplicates are dropped, order kept",
			[]policyv1.PolicyDependency{dep(v1, "Policy", "", "b"), dep(v1beta1, "PolicySet", "", "set"), dep(v1, "Policy", "ns", "a")},
			[]policyv1.PolicyDependency{dep(v1, "Policy", "", "ns.b"), dep(v1, "Policy", "", "ns.a")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(CanonicalDependencies(tc.in, "ns", members)).To(Equal(tc.want))
		})
	}
}

func TestRootOf(t *testing.T) {
	g := NewWithT(t)
	key, ok := RootOf("ns.a.b")
	g.Expect(ok).To(BeTrue())
	g.Expect(key).To(Equal(types.NamespacedName{Namespace: "ns", Name: "a.b"}))
	for _, bad := range []string{"", "nodot", ".x", "x."} {
		_, ok := RootOf(bad)
		g.Expect(ok).To(BeFalse(), bad)
	}
	root := rootPolicy()
	key, ok = RootOf(Name(root))
	g.Expect(ok).To(BeTrue())
	g.Expect(key).To(Equal(types.NamespacedName{Namespace: root.Namespace, Name: root.Name}), "RootOf reads what Name writes")
	g.Expect(IsReplica(Build(root, Cluster{Name: "c1"}, nil))).To(BeTrue())
	g.Expect(IsReplica(root)).To(BeFalse())
}
