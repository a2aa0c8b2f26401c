package syncer

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

func clusterRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// TestClusterScopedTable walks the cluster-scoped guarantee table
// (docs/api/hierarchy-v1alpha1.md, "Declared tree") with the foo-corp examples: pod-accountant (never declared) is untouched, namespace-reader
// (declared, different) is updated, quota-viewer is created, then deleted
// when removed from the policy.
func TestClusterScopedTable(t *testing.T) {
	f := newFixture(t)
	accountant := f.object(&rbacv1.ClusterRole{}, `{metadata: {name: pod-accountant-$S}, rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]}`)
	f.object(&rbacv1.ClusterRole{}, `{metadata: {name: namespace-reader-$S}, rules: [{apiGroups: [""], resources: [namespaces], verbs: [get]}]}`)
	const spec = `
spec:
  remediationAction: enforce
  clusterResources:
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: namespace-reader-$S}, rules: [{apiGroups: [""], resources: [namespaces], verbs: [get, list, watch]}]}
`
	f.policy("metadata: {name: foo-corp}" + spec + `  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: quota-viewer-$S}, rules: [{apiGroups: [""], resources: [resourcequotas], verbs: [get]}]}`)

	// declared, different → updated; declared, missing → created
	f.g.Eventually(f.evaluated("foo-corp"), eventually, poll).Should(Equal(policyv1.Compliant))
	reader := clusterRole("namespace-reader-$S")
	f.g.Expect(f.exists(reader)(f.g)).To(BeTrue())
	f.g.Expect(reader.Rules[0].Verbs).To(Equal([]string{"get", "list", "watch"}))
	f.g.Expect(reader.Labels).To(HaveKeyWithValue(hierarchyv1alpha1.ManagedByLabel, "canopy"))
	f.g.Expect(reader.Annotations).To(HaveKeyWithValue(hierarchyv1alpha1.SourceAnnotation,
		"HierarchyPolicy "+f.ns+"/foo-corp, clusterResources"))
	f.g.Expect(f.exists(clusterRole("quota-viewer-$S"))(f.g)).To(BeTrue())

	// declared, matches → no action: a hand edit is restored, and
	// restoring it is the only write
	patchRules(f, reader, []string{"get"})
	f.g.Eventually(func(g Gomega) []string {
		g.Expect(f.exists(reader)(g)).To(BeTrue())
		return reader.Rules[0].Verbs
	}, eventually, poll).Should(Equal([]string{"get", "list", "watch"}))

	// applied earlier, now removed → deleted; never declared → untouched
	f.updateSpec("foo-corp", spec)
	f.g.Eventually(f.exists(clusterRole("quota-viewer-$S")), eventually, poll).Should(BeFalse())
	f.g.Eventually(f.evaluated("foo-corp"), eventually, poll).Should(Equal(policyv1.Compliant))
	f.g.Expect(f.exists(clusterRole("namespace-reader-$S"))(f.g)).To(BeTrue())
	after := clusterRole("pod-accountant-$S")
	f.g.Expect(f.exists(after)(f.g)).To(BeTrue())
	f.g.Expect(after.ResourceVersion).To(Equal(accountant.GetResourceVersion()), "pod-accountant untouched")
	f.g.Eventually(f.events(), eventually, poll).Should(ContainElement(HavePrefix("Compliant; notification - ")))
}

func patchRules(f *fixture, role *rbacv1.ClusterRole, verbs []string) {
	f.t.Helper()
	orig := role.DeepCopy()
	role.Rules[0].Verbs = verbs
	f.g.Expect(f.c.Patch(f.t.Context(), role, client.MergeFrom(orig))).To(Succeed())
}

// fooCorpTree is the foo-corp namespace example: pod-creators declared on the
// abstract shipping-app-backend, inherited by its three namespaces.
const fooCorpTree = `
spec:
  remediationAction: enforce
  managedKinds: [{group: rbac.authorization.k8s.io, kind: Role}, {group: rbac.authorization.k8s.io, kind: RoleBinding}, {kind: ResourceQuota, merge: Minimum}]
  nodes:
  - {name: foo-corp-$S, abstract: true, labels: {org: foo-corp}, resources: [{apiVersion: v1, kind: ResourceQuota, metadata: {name: quota}, spec: {hard: {pods: "100", memory: 10Gi}}}]}
  - {name: online-$S, parent: foo-corp-$S, abstract: true}
  - name: shipping-app-backend-$S
    parent: online-$S
    abstract: true
    resources:
    - {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: pod-creators}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}, subjects: [{kind: Group, name: shipping-admins, apiGroup: rbac.authorization.k8s.io}]}
  - {name: shipping-prod-$S, parent: shipping-app-backend-$S, labels: {env: prod}}
  - {name: shipping-staging-$S, parent: shipping-app-backend-$S}
  - {name: shipping-dev-$S, parent: shipping-app-backend-$S, resources: [{apiVersion: v1, kind: ResourceQuota, metadata: {name: quota}, spec: {hard: {pods: "10"}}}]}
`

var shippingNamespaces = []string{"shipping-prod-$S", "shipping-staging-$S", "shipping-dev-$S"}

func binding(ns string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-creators"}}
}

// TestNamespaceScopedTable walks the namespace-scoped guarantee table
// (docs/api/hierarchy-v1alpha1.md, "Declared tree") with the foo-corp examples.
func TestNamespaceScopedTable(t *testing.T) {
	f := newFixture(t)
	f.policy("metadata: {name: foo-corp}" + fooCorpTree)

	// declared, missing → created, in every descendant of the abstract node
	f.g.Eventually(f.evaluated("foo-corp"), eventually, poll).Should(Equal(policyv1.Compliant))
	for _, ns := range shippingNamespaces {
		rb := binding(ns)
		f.g.Expect(f.exists(rb)(f.g)).To(BeTrue(), ns)
		f.g.Expect(rb.Subjects[0].Name).To(Equal("shipping-admins"))
		namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		f.g.Expect(f.exists(namespace)(f.g)).To(BeTrue())
		f.g.Expect(namespace.Labels).To(HaveKeyWithValue("org", "foo-corp"))
	}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "shipping-dev-$S", Name: "quota"}}
	f.g.Expect(f.exists(quota)(f.g)).To(BeTrue())
	f.g.Expect(quota.Spec.Hard.Pods().String()).To(Equal("10"), "merge: Minimum")
	f.g.Expect(quota.Spec.Hard.Memory().String()).To(Equal("10Gi"))
	st := f.status("foo-corp")(f.g)
	f.g.Expect(st.ManagedNamespaces).To(ConsistOf(f.expand("shipping-prod-$S"), f.expand("shipping-staging-$S"), f.expand("shipping-dev-$S")))
	f.g.Expect(st.Namespaces).To(ContainElement(hierarchyv1alpha1.NamespaceCounts{
		Name: f.expand("shipping-prod-$S"), Declared: 3, InSync: 3}))

	// declared, different → updated: a hand edit of shipping-prod's
	// pod-creators is restored
	prod := binding("shipping-prod-$S")
	f.g.Expect(f.exists(prod)(f.g)).To(BeTrue())
	orig := prod.DeepCopy()
	prod.Subjects[0].Name = "everyone"
	f.g.Expect(f.c.Patch(t.Context(), prod, client.MergeFrom(orig))).To(Succeed())
	f.g.Eventually(func(g Gomega) string {
		g.Expect(f.exists(prod)(g)).To(BeTrue())
		return prod.Subjects[0].Name
	}, eventually, poll).Should(Equal("shipping-admins"))
	f.g.Expect(prod.UID).To(Equal(orig.UID), "updated in place")

	// undeclared, exists → deleted: a hand-made secret-admin Role
	f.object(&rbacv1.Role{}, `{metadata: {name: secret-admin, namespace: shipping-prod-$S}}`)
	secretAdmin := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "shipping-prod-$S", Name: "secret-admin"}}
	f.g.Eventually(f.exists(secretAdmin), eventually, poll).Should(BeFalse())

	// someone declares secret-admin in shipping-prod → created
	withRole := strings_Replace(fooCorpTree, `- {name: shipping-prod-$S, parent: shipping-app-backend-$S, labels: {env: prod}}`,
		`- {name: shipping-prod-$S, parent: shipping-app-backend-$S, labels: {env: prod}, resources: [{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: secret-admin}, rules: [{apiGroups: [""], resources: [secrets], verbs: ["*"]}]}]}`)
	f.updateSpec("foo-corp", withRole)
	f.g.Eventually(f.exists(secretAdmin), eventually, poll).Should(BeTrue())

	// pod-creators removed from the tree → deleted in every descendant
	withoutBinding := dropLine(withRole, "kind: RoleBinding, metadata: {name: pod-creators}")
	f.updateSpec("foo-corp", withoutBinding)
	for _, ns := range shippingNamespaces {
		f.g.Eventually(f.exists(binding(ns)), eventually, poll).Should(BeFalse(), ns)
	}
	f.g.Eventually(f.evaluated("foo-corp"), eventually, poll).Should(Equal(policyv1.Compliant))
	f.g.Expect(f.exists(secretAdmin)(f.g)).To(BeTrue())

	// a node removed from the tree: its namespace, which Canopy created, is
	// deleted (envtest runs no namespace controller: it stays Terminating)
	f.updateSpec("foo-corp", dropLine(withoutBinding, "name: shipping-dev-$S"))
	f.g.Eventually(func(g Gomega) bool {
		ns := &corev1.Namespace{}
		g.Expect(f.c.Get(t.Context(), types.NamespacedName{Name: f.expand("shipping-dev-$S")}, ns)).To(Succeed())
		return ns.DeletionTimestamp != nil
	}, eventually, poll).Should(BeTrue())
}

// TestAdoptedNamespaceIsNeverDeleted: a namespace that existed before its
// node is labelled, not owned; removing the node leaves it.
func TestAdoptedNamespaceIsNeverDeleted(t *testing.T) {
	f := newFixture(t)
	f.object(&corev1.Namespace{}, `{metadata: {name: team-$S}}`)
	f.policy(`
metadata: {name: adopt}
spec:
  remediationAction: enforce
  nodes: [{name: team-$S, labels: {team: a}}]`)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-$S"}}
	f.g.Eventually(func(g Gomega) map[string]string {
		g.Expect(f.exists(ns)(g)).To(BeTrue())
		return ns.Labels
	}, eventually, poll).Should(HaveKeyWithValue("team", "a"))
	f.g.Expect(ns.Labels).NotTo(HaveKey(hierarchyv1alpha1.PolicyLabel))
	f.updateSpec("adopt", `spec: {remediationAction: enforce}`)
	f.g.Eventually(f.evaluated("adopt"), eventually, poll).Should(Equal(policyv1.Compliant))
	f.g.Expect(f.exists(ns)(f.g)).To(BeTrue())
}

// TestInformWritesNothing: under inform the plan is reported as
// NonCompliant, in status and in a compliance event, and nothing is written.
func TestInformWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.policy("metadata: {name: foo-corp}\n" + strings_Replace(fooCorpTree, "remediationAction: enforce", "remediationAction: inform") +
		`  clusterResources: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: quota-viewer-$S}}]`)
	f.g.Eventually(f.evaluated("foo-corp"), eventually, poll).Should(Equal(policyv1.NonCompliant))
	st := f.status("foo-corp")(f.g)
	f.g.Expect(st.RelatedObjects).To(ContainElement(policyv1.RelatedObject{
		Object: policyv1.ObjectResource{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole",
			Metadata: policyv1.ObjectMetadata{Name: f.expand("quota-viewer-$S")}},
		Compliant: "NonCompliant", Reason: "would create: declared but missing"}))
	f.g.Expect(st.Namespaces).To(ContainElement(hierarchyv1alpha1.NamespaceCounts{
		Name: f.expand("shipping-dev-$S"), Declared: 3, InSync: 0, Planned: 3}))
	c := meta.FindStatusCondition(st.Conditions, ConditionInSync)
	f.g.Expect(c.Reason).To(Equal(ReasonPlanned))
	f.g.Eventually(f.events(), eventually, poll).Should(ConsistOf(
		HavePrefix("NonCompliant; violation - 10 changes are planned; set remediationAction to enforce to apply them; ClusterRole " + f.expand("quota-viewer-$S") + ": would create: declared but missing; ")))
	f.g.Expect(f.exists(clusterRole("quota-viewer-$S"))(f.g)).To(BeFalse())
	f.g.Expect(f.exists(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shipping-dev-$S"}})(f.g)).To(BeFalse())
	t.Logf("status under inform: %s", statusYAML(f, "foo-corp"))
}

// TestInvalidTreeDeletesNothing: a cycle holds every deletion, the status
// says why, and fixing the tree releases them.
func TestInvalidTreeDeletesNothing(t *testing.T) {
	f := newFixture(t)
	const valid = `
spec:
  remediationAction: enforce
  managedKinds: [{group: rbac.authorization.k8s.io, kind: Role}]
  nodes:
  - {name: app-$S}
`
	f.policy("metadata: {name: tree}" + valid +
		`  clusterResources: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: viewer-$S}}]`)
	f.g.Eventually(f.evaluated("tree"), eventually, poll).Should(Equal(policyv1.Compliant))
	f.g.Expect(f.exists(clusterRole("viewer-$S"))(f.g)).To(BeTrue())

	f.updateSpec("tree", valid+`  - {name: x-$S, parent: y-$S}
  - {name: y-$S, parent: x-$S}`)
	f.g.Eventually(f.evaluated("tree"), eventually, poll).Should(Equal(policyv1.NonCompliant))
	f.object(&rbacv1.Role{}, `{metadata: {name: secret-admin, namespace: app-$S}}`)
	f.g.Eventually(f.relatedReasons("tree"), eventually, poll).Should(ContainElements(
		"ClusterRole "+f.expand("viewer-$S")+": hold: no longer declared; deletion held while the tree is invalid",
		"Role secret-admin: hold: not declared, and its kind is managed; deletion held while the tree is invalid"))
	c := meta.FindStatusCondition(f.status("tree")(f.g).Conditions, ConditionTreeValid)
	f.g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	f.g.Expect(c.Message).To(Equal(f.expand("Every deletion is held until the tree is fixed: node x-$S: cycle x-$S → y-$S → x-$S; node y-$S: cycle y-$S → x-$S → y-$S")))
	f.g.Expect(f.exists(clusterRole("viewer-$S"))(f.g)).To(BeTrue())
	f.g.Expect(f.exists(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "app-$S", Name: "secret-admin"}})(f.g)).To(BeTrue())
	t.Logf("status of an invalid tree: %s", statusYAML(f, "tree"))

	f.updateSpec("tree", valid)
	f.g.Eventually(f.exists(clusterRole("viewer-$S")), eventually, poll).Should(BeFalse())
	f.g.Eventually(f.exists(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "app-$S", Name: "secret-admin"}}), eventually, poll).Should(BeFalse())
}

// TestInvalidClusterResourceHoldsEveryDeletion: a problem in
// clusterResources holds the deletions in the namespaces too, whichever
// controller syncs them (a namespace's own key did not count it).
func TestInvalidClusterResourceHoldsEveryDeletion(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: tree}
spec:
  remediationAction: enforce
  managedKinds: [{group: rbac.authorization.k8s.io, kind: Role}]
  nodes:
  - {name: held-$S}
  clusterResources: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}]
`)
	f.g.Eventually(f.evaluated("tree"), eventually, poll).Should(Equal(policyv1.NonCompliant))
	c := meta.FindStatusCondition(f.status("tree")(f.g).Conditions, ConditionTreeValid)
	f.g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "held-$S", Name: "by-hand"}}
	f.object(&rbacv1.Role{}, `{metadata: {name: by-hand, namespace: held-$S}}`)
	f.g.Eventually(f.relatedReasons("tree"), eventually, poll).Should(ContainElement(
		"Role by-hand: hold: not declared, and its kind is managed; deletion held while the tree is invalid"))
	f.g.Consistently(f.exists(role), 3*time.Second, poll).Should(BeTrue())
}

// TestConflictIsReported: an object of another manager is reported, not
// overwritten.
func TestConflictIsReported(t *testing.T) {
	f := newFixture(t)
	helm := f.object(&rbacv1.ClusterRole{}, `{metadata: {name: helm-role-$S, labels: {app.kubernetes.io/managed-by: Helm}}}`)
	f.policy(`
metadata: {name: conflict}
spec:
  remediationAction: enforce
  clusterResources: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: helm-role-$S}, rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]}]`)
	f.g.Eventually(f.evaluated("conflict"), eventually, poll).Should(Equal(policyv1.NonCompliant))
	st := f.status("conflict")(f.g)
	f.g.Expect(st.RelatedObjects[0].Reason).To(Equal("conflict: declared, but it is managed by Helm; left alone"))
	f.g.Expect(meta.FindStatusCondition(st.Conditions, ConditionInSync).Reason).To(Equal(ReasonConflicts))
	after := clusterRole("helm-role-$S")
	f.g.Expect(f.exists(after)(f.g)).To(BeTrue())
	f.g.Expect(after.ResourceVersion).To(Equal(helm.GetResourceVersion()))
}
