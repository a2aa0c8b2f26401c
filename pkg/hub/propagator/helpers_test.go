package propagator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
)

// configurationPolicy is a policy template, as JSON.
const configurationPolicy = `{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",` +
	`"metadata":{"name":%q},"spec":{"remediationAction":"inform","severity":"low","object-templates":[` +
	`{"complianceType":"musthave","objectDefinition":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"prod"}}}]}}`

func newPolicy(ns, name string) *policyv1.Policy {
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: policyv1.PolicySpec{
			RemediationAction: policyv1.Inform,
			PolicyTemplates: []policyv1.PolicyTemplate{{
				ObjectDefinition: runtime.RawExtension{Raw: fmt.Appendf(nil, configurationPolicy, name+"-template")},
			}},
		},
	}
}

func newBinding(ns, name, placement string, subjects ...policyv1.Subject) *policyv1.PlacementBinding {
	return &policyv1.PlacementBinding{
		ObjectMeta:   metav1.ObjectMeta{Name: name, Namespace: ns},
		PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: placement},
		Subjects:     subjects,
	}
}

func policySubject(name string) policyv1.Subject {
	return policyv1.Subject{APIGroup: policyv1.GroupName, Kind: policyv1.PolicyKind, Name: name}
}

func setSubject(name string) policyv1.Subject {
	return policyv1.Subject{APIGroup: policyv1.GroupName, Kind: policyv1beta1.PolicySetKind, Name: name}
}

func newPolicySet(ns, name string, members ...string) *policyv1beta1.PolicySet {
	set := &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	set.Spec.Policies = []policyv1.NonEmptyString{}
	for _, m := range members {
		set.Spec.Policies = append(set.Spec.Policies, policyv1.NonEmptyString(m))
	}
	return set
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		NewWithT(t).Expect(env.Hub.Client.Create(t.Context(), obj)).To(Succeed(), "creating %T %s", obj, obj.GetName())
	}
}

// placeOn makes the Placement name exist and select clusters, as OCM's
// placement controller would.
func placeOn(t *testing.T, ns, name string, clusters ...string) {
	t.Helper()
	g := NewWithT(t)
	pl := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	pl.Spec.ClusterSets = []string{"default"}
	if err := env.Hub.Client.Create(t.Context(), pl); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(env.SetPlacementDecisions(t.Context(), ns, name, clusters...)).To(Succeed())
}

// update gets obj afresh, applies change and updates it, retrying conflicts.
func update[T client.Object](t *testing.T, obj T, change func(T)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		if err := env.Hub.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return env.Hub.Client.Update(t.Context(), obj)
	}).Should(Succeed())
}

// replicaClusters returns the namespaces of the replicas of ns/name, sorted.
func replicaClusters(ctx context.Context, ns, name string) ([]string, error) {
	list := &policyv1.PolicyList{}
	if err := env.Hub.Client.List(ctx, list, client.MatchingLabels{policyv1.RootPolicyLabel: ns + "." + name}); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Namespace)
	}
	slices.Sort(out)
	return out, nil
}

// expectReplicasOn waits until the replicas of ns/name are exactly on clusters.
func expectReplicasOn(t *testing.T, ns, name string, clusters ...string) {
	t.Helper()
	NewWithT(t).Eventually(func() ([]string, error) { return replicaClusters(t.Context(), ns, name) }).
		Should(Equal(clusters), "replicas of %s/%s", ns, name)
}

func getReplica(g Gomega, ctx context.Context, cluster, ns, name string) *policyv1.Policy {
	p := &policyv1.Policy{}
	g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: ns + "." + name}, p)).To(Succeed())
	return p
}

func getPolicy(g Gomega, ctx context.Context, ns, name string) *policyv1.Policy {
	p := &policyv1.Policy{}
	g.Expect(env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)).To(Succeed())
	return p
}

// propagated returns the Propagated condition of p, or an empty one.
func propagated(p *policyv1.Policy) metav1.Condition {
	if c := meta.FindStatusCondition(p.Status.Conditions, propagator.ConditionPropagated); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// expectCondition waits until the Propagated condition of ns/name has
// reason and its message contains every part.
func expectCondition(t *testing.T, ns, name, reason string, parts ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		p := getPolicy(g, t.Context(), ns, name)
		c := propagated(p)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(p.Generation))
		for _, part := range parts {
			g.Expect(c.Message).To(ContainSubstring(part))
		}
	}).Should(Succeed())
}

// setReplicaCompliance writes a replica's status.compliant as an agent does.
func setReplicaCompliance(t *testing.T, cluster, ns, name string, state policyv1.ComplianceState) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		p := getReplica(g, t.Context(), cluster, ns, name)
		p.Status.ComplianceState = state
		g.Expect(env.Hub.Client.Status().Update(t.Context(), p)).To(Succeed())
	}).Should(Succeed())
}

func clusterStatus(cluster string, state policyv1.ComplianceState) policyv1.CompliancePerClusterStatus {
	return policyv1.CompliancePerClusterStatus{ClusterName: cluster, ClusterNamespace: cluster, ComplianceState: state}
}

func decisions(clusters ...string) []policyv1.PlacementDecision {
	var out []policyv1.PlacementDecision
	for _, c := range clusters {
		out = append(out, policyv1.PlacementDecision{ClusterName: c, ClusterNamespace: c})
	}
	return out
}
