package security_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

const (
	eventually = 2 * time.Minute
	poll       = 200 * time.Millisecond
)

// placedPolicy creates, in a new hub namespace, a Policy delivering the
// template (YAML) to cluster, with remediationAction action, and returns
// the namespace.
func placedPolicy(t *testing.T, ns, cluster, name, action, template string) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	raw, err := yaml.YAMLToJSON([]byte(template))
	g.Expect(err).NotTo(HaveOccurred())
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	p.Spec.RemediationAction = policyv1.RemediationAction(action)
	p.Spec.PolicyTemplates = []policyv1.PolicyTemplate{{ObjectDefinition: runtime.RawExtension{Raw: raw}}}
	g.Expect(env.Hub.Client.Create(ctx, p)).To(Succeed())
	pb := &policyv1.PlacementBinding{
		ObjectMeta:   metav1.ObjectMeta{Namespace: ns, Name: name},
		PlacementRef: policyv1.PlacementSubject{APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: cluster},
		Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: name}},
	}
	g.Expect(env.Hub.Client.Create(ctx, pb)).To(Succeed())
	g.Expect(env.SetPlacementDecisions(ctx, ns, cluster, cluster)).To(Succeed())
}

// replicaHistory returns a function giving the compliance and the newest
// history message of each template of the replica of ns/name on cluster.
func replicaHistory(ctx context.Context, ns, name, cluster string) func() []string {
	return func() []string {
		p := &policyv1.Policy{}
		if err := env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: ns + "." + name}, p); err != nil {
			return []string{err.Error()}
		}
		out := []string{string(p.Status.ComplianceState)}
		for _, d := range p.Status.Details {
			if len(d.History) > 0 {
				out = append(out, d.History[0].Message)
			}
		}
		return out
	}
}

// managedNamespace creates a namespace on a managed cluster with labels,
// deleted when the test ends.
func managedNamespace(t *testing.T, c client.Client, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
}
