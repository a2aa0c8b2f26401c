package api_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestRootInClusterNamespace checks that the admission policy refuses a
// root Policy in a namespace that OCM's registration labels as a managed
// cluster's (open-cluster-management.io/cluster-name=<its name>), and lets
// replicas, and roots in other namespaces, through.
func TestRootInClusterNamespace(t *testing.T) {
	c := apiServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	labelled := func(value string) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "api-cluster-"}}
		g.Expect(c.Create(ctx, ns)).To(Succeed())
		t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
		if value == "" {
			value = ns.Name
		}
		ns.Labels = map[string]string{clusterv1.ClusterNameLabelKey: value}
		g.Expect(c.Update(ctx, ns)).To(Succeed())
		return ns.Name
	}
	cluster := labelled("")

	root := newPolicy(cluster, "root")
	// The admission policy becomes active shortly after it is created.
	g.Eventually(func() error {
		err := c.Create(ctx, root.DeepCopy())
		if err == nil {
			g.Expect(c.Delete(ctx, root.DeepCopy())).To(Succeed())
			return errors.New("created; the admission policy is not active yet")
		}
		return err
	}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(And(
		Satisfy(apierrors.IsInvalid),
		MatchError(ContainSubstring("a root policy cannot be created in namespace "+cluster+", the namespace of managed cluster "+cluster)),
		MatchError(ContainSubstring("create the policy in another namespace")),
	))

	replica := newPolicy(cluster, "some-namespace.root")
	replica.Labels = map[string]string{policyv1.RootPolicyLabel: replica.Name}
	g.Expect(c.Create(ctx, replica)).To(Succeed(), "replicas are exempt")
	g.Expect(c.Create(ctx, newPolicy(createNamespace(t, c), "root"))).To(Succeed(), "a namespace without the label")
	g.Expect(c.Create(ctx, newPolicy(labelled("another-cluster"), "root"))).To(Succeed(),
		"a namespace labelled with another name is not that cluster's")
}
