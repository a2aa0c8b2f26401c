package syncer

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/hierarchy"
)

// obj reads a YAML object.
func obj(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const (
	roleV1    = `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: namespace-reader}, rules: [{apiGroups: [""], resources: [namespaces], verbs: [get]}]}`
	roleV2    = `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: namespace-reader}, rules: [{apiGroups: [""], resources: [namespaces], verbs: [get, list]}]}`
	ours      = `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: quota-viewer, labels: {hierarchy.canopy.io/policy: foo-corp}}}`
	unrelated = `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: pod-accountant}}`
	rbBinding = `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: pod-creators, namespace: shipping-prod}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pod-creator}, subjects: [{kind: Group, name: shipping-admins, apiGroup: rbac.authorization.k8s.io}]}`
	edited    = `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: pod-creators, namespace: shipping-prod, resourceVersion: "7"}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pod-creator}, subjects: [{kind: Group, name: everyone, apiGroup: rbac.authorization.k8s.io}]}`
	handMade  = `{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: secret-admin, namespace: shipping-prod}}`
)

var rbacStrict = map[schema.GroupKind]bool{{Group: "rbac.authorization.k8s.io", Kind: "Role"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}: true}

// TestPlanSeedTables walks both guarantee tables of docs/api/hierarchy-v1alpha1.md ("Declared
// tree") row by row.
func TestPlanSeedTables(t *testing.T) {
	cluster := rules{policy: "foo-corp"}
	namespaced := rules{policy: "foo-corp", strict: rbacStrict}
	tests := []struct {
		name     string
		desired  []string
		observed []string
		r        rules
		want     []string // "op kind name: reason"
	}{
		{"cluster: declared, matches → no action", []string{roleV1}, []string{roleV1}, cluster, nil},
		{"cluster: declared, different → update", []string{roleV2}, []string{roleV1}, cluster,
			[]string{"update ClusterRole namespace-reader: declared but different"}},
		{"cluster: declared, missing → create", []string{roleV1}, nil, cluster,
			[]string{"create ClusterRole namespace-reader: declared but missing"}},
		{"cluster: undeclared, exists → no action (pod-accountant)", nil, []string{unrelated}, cluster, nil},
		{"cluster: undeclared, missing → no action", nil, nil, cluster, nil},
		{"cluster: applied earlier, now removed → delete (quota-viewer)", nil, []string{ours}, cluster,
			[]string{"delete ClusterRole quota-viewer: no longer declared"}},
		{"namespace: declared, matches → no action", []string{rbBinding}, []string{rbBinding}, namespaced, nil},
		{"namespace: declared, different → update", []string{rbBinding}, []string{edited}, namespaced,
			[]string{"update RoleBinding shipping-prod/pod-creators: declared but different"}},
		{"namespace: declared, missing → create", []string{rbBinding}, nil, namespaced,
			[]string{"create RoleBinding shipping-prod/pod-creators: declared but missing"}},
		{"namespace: undeclared, exists → delete (secret-admin)", nil, []string{handMade}, namespaced,
			[]string{"delete Role shipping-prod/secret-admin: not declared, and its kind is managed"}},
		{"namespace: undeclared, missing → no action", nil, nil, namespaced, nil},
		{"invalid tree holds the deletion", nil, []string{handMade}, rules{policy: "foo-corp", strict: rbacStrict, holdDeletes: true},
			[]string{"hold Role shipping-prod/secret-admin: not declared, and its kind is managed; deletion held while the tree is invalid"}},
		{"another manager's object is a conflict, not overwritten", []string{roleV2},
			[]string{`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: namespace-reader, labels: {app.kubernetes.io/managed-by: helm}}}`}, cluster,
			[]string{"conflict ClusterRole namespace-reader: declared, but it is managed by helm; left alone"}},
		{"another manager's object of a managed kind is not deleted", nil,
			[]string{`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: x, namespace: ns1, labels: {hierarchy.canopy.io/policy: other}}}`}, namespaced,
			[]string{"conflict Role ns1/x: not declared, and its kind is managed, but it belongs to HierarchyPolicy other; left alone"}},
		{"reserved namespaces are never touched", []string{`{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: kube-system}}`},
			[]string{`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: x, namespace: kube-system}}`}, namespaced, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := plan(objs(t, tt.desired), objs(t, tt.observed), tt.r)
			g.Expect(summary(got)).To(Equal(tt.want))
		})
	}
}

// TestPlanUpdateInPlace checks that an update keeps the observed object's
// identity (resourceVersion) and its other labels.
func TestPlanUpdateInPlace(t *testing.T) {
	g := NewWithT(t)
	observed := obj(t, edited)
	observed.SetLabels(map[string]string{"team": "a"})
	got := plan(objs(t, []string{rbBinding}), []*unstructured.Unstructured{observed}, rules{policy: "p"})
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0].object.GetResourceVersion()).To(Equal("7"))
	g.Expect(got[0].object.GetLabels()).To(HaveKeyWithValue("team", "a"))
	g.Expect(equivalent(obj(t, rbBinding), got[0].object)).To(BeTrue())
}

// TestEquivalentIgnoresServerFields: defaults and metadata the API server
// adds are not differences; a hand edit of a ConfigMap's data is.
func TestEquivalentIgnoresServerFields(t *testing.T) {
	tests := []struct {
		name, declared, observed string
		want                     bool
	}{
		{"server metadata and defaults", `{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {pods: "10", memory: 1Gi}}}`,
			`{apiVersion: v1, kind: ResourceQuota, metadata: {name: q, uid: u, resourceVersion: "3", creationTimestamp: "2025-01-01T00:00:00Z"}, spec: {hard: {pods: "10", memory: 1024Mi}, scopes: []}, status: {used: {pods: "1"}}}`, true},
		{"quantity differs", `{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {pods: "10"}}}`,
			`{apiVersion: v1, kind: ResourceQuota, metadata: {name: q}, spec: {hard: {pods: "11"}}}`, false},
		{"extra data key in a ConfigMap", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "1"}}`,
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "1", b: "2"}}`, false},
		{"declared label removed", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: {team: a}}}`,
			`{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}`, false},
		{"extra list item", roleV1, roleV2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(equivalent(obj(t, tt.declared), obj(t, tt.observed))).To(Equal(tt.want))
		})
	}
}

func TestPlanSkipsTerminating(t *testing.T) {
	g := NewWithT(t)
	o := obj(t, handMade)
	now := metav1.Now()
	o.SetDeletionTimestamp(&now)
	g.Expect(plan(nil, []*unstructured.Unstructured{o}, rules{policy: "p", strict: rbacStrict})).To(BeEmpty())
	g.Expect(plan(objs(t, []string{handMade}), []*unstructured.Unstructured{o}, rules{policy: "p"})).To(BeEmpty())
}

func objs(t testing.TB, docs []string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, d := range docs {
		out = append(out, obj(t, d))
	}
	return out
}

func summary(actions []action) []string {
	var out []string
	for _, a := range actions {
		out = append(out, string(a.op)+" "+keyOf(a.object).String()+": "+a.reason)
	}
	return out
}

// FuzzPlan checks the planner's invariants on arbitrary objects: it never
// touches reserved namespaces, never deletes a declared object, never
// deletes while holding, deletes only strict kinds or its own objects, and
// a plan applied to the observed state leaves nothing to do.
func FuzzPlan(f *testing.F) {
	f.Add("a", "ns1", "Role", "p", true, false, "x", "ns1", "RoleBinding", false)
	f.Add("a", "kube-system", "Role", "", false, true, "a", "kube-system", "Role", true)
	f.Add("q", "", "ClusterRole", "p", false, false, "q", "", "ClusterRole", true)
	f.Fuzz(func(t *testing.T, oName, oNS, oKind, oPolicy string, strict, hold bool, dName, dNS, dKind string, declare bool) {
		observed := fuzzObject(oName, oNS, oKind, oPolicy)
		var desired []*unstructured.Unstructured
		if declare {
			desired = append(desired, fuzzObject(dName, dNS, dKind, "p"))
		}
		r := rules{policy: "p", holdDeletes: hold, strict: map[schema.GroupKind]bool{}}
		if strict {
			r.strict[observed.GroupVersionKind().GroupKind()] = true
		}
		actions := plan(desired, []*unstructured.Unstructured{observed}, r)
		for _, a := range actions {
			if hierarchy.IsReserved(a.object.GetNamespace()) {
				t.Fatalf("touches a reserved namespace: %v", summary(actions))
			}
			if a.op == opDelete && (hold || (!strict && oPolicy != "p") || (declare && keyOf(desired[0]) == keyOf(a.object))) {
				t.Fatalf("forbidden deletion: %v", summary(actions))
			}
		}
		after := applyPlan([]*unstructured.Unstructured{observed}, actions)
		for _, a := range plan(desired, after, r) {
			if a.changes() {
				t.Fatalf("not idempotent: %v then %v", summary(actions), a)
			}
		}
	})
}

func fuzzObject(name, ns, kind, policy string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(ns)
	if policy != "" {
		u.SetLabels(map[string]string{hierarchyv1alpha1.PolicyLabel: policy})
	}
	return u
}

// applyPlan is what the API server does with a plan.
func applyPlan(observed []*unstructured.Unstructured, actions []action) []*unstructured.Unstructured {
	byKey := map[objectKey]*unstructured.Unstructured{}
	for _, o := range observed {
		byKey[keyOf(o)] = o
	}
	for _, a := range actions {
		switch a.op {
		case opCreate, opUpdate:
			byKey[keyOf(a.object)] = a.object
		case opDelete:
			delete(byKey, keyOf(a.object))
		}
	}
	return hierarchy.SortedObjects(byKey)
}
