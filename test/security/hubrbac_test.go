package security_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/hubrbac"
)

// identity is an agent's hub identity under test.
type identity struct {
	name          string
	cfg           *rest.Config
	user          string
	groups        []string
	own, other    string // its cluster namespace, and another cluster's
	rootNamespace string
}

// TestAgentHubIdentity checks, with SubjectAccessReviews and real requests,
// that an agent's hub identity may work with the replicas of its own
// cluster namespace and nothing else. The identities are those OCM issued
// to each cluster's addon agent (the suite's clusters joined as an OCM
// fleet, inproc.JoinFleet), with the permissions Canopy's addon manager
// granted through its permission hook (pkg/hub/addon.Permission).
func TestAgentHubIdentity(t *testing.T) {
	suite.Get(t) // starts env on first use
	g := NewWithT(t)
	rootNS := controlplane.Namespace(t, env.Hub.Client)
	for _, id := range []identity{
		{name: "cluster1, issued by OCM", cfg: env.Managed[0].HubConfig, user: hubrbac.User("cluster1"),
			groups: hubrbac.Groups("cluster1"), own: "cluster1", other: "cluster2", rootNamespace: rootNS},
		{name: "cluster2, issued by OCM", cfg: env.Managed[1].HubConfig, user: hubrbac.User("cluster2"),
			groups: hubrbac.Groups("cluster2"), own: "cluster2", other: "cluster1", rootNamespace: rootNS},
	} {
		t.Run(id.name, func(t *testing.T) {
			for _, c := range accessChecks(id) {
				g.Expect(allowed(t, id, c)).To(Equal(c.allowed), "SubjectAccessReview: %s", c)
			}
			expectRequests(t, id)
		})
	}
}

// access is one request an identity may or may not make.
type access struct {
	verb, group, resource, subresource, namespace string
	allowed                                       bool
}

func (a access) String() string {
	return a.verb + " " + a.group + "/" + a.resource + "/" + a.subresource + " in " + a.namespace
}

func accessChecks(id identity) []access {
	const pg = policyv1.GroupName
	return []access{
		{verb: "get", group: pg, resource: "policies", namespace: id.own, allowed: true},
		{verb: "update", group: pg, resource: "policies", subresource: "status", namespace: id.own, allowed: true},
		{verb: "create", resource: "events", namespace: id.own, allowed: true},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: id.own, allowed: true},
		{verb: "create", group: pg, resource: "policies", namespace: id.own},
		{verb: "delete", group: pg, resource: "policies", namespace: id.own},
		{verb: "get", resource: "secrets", namespace: id.own},
		{verb: "get", group: pg, resource: "policies", namespace: id.other},
		{verb: "list", group: pg, resource: "policies", namespace: id.other},
		{verb: "update", group: pg, resource: "policies", subresource: "status", namespace: id.other},
		{verb: "create", resource: "events", namespace: id.other},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: id.other},
		{verb: "get", group: pg, resource: "policies", namespace: id.rootNamespace},
		{verb: "update", group: pg, resource: "policies", namespace: id.rootNamespace},
		{verb: "list", group: pg, resource: "policies"},
		{verb: "list", group: pg, resource: "placementbindings", namespace: id.rootNamespace},
		{verb: "get", group: "cluster.open-cluster-management.io", resource: "managedclusters"},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: id.own},
	}
}

// allowed asks the hub whether id may do c.
func allowed(t *testing.T, id identity, c access) bool {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: id.user, Groups: id.groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: c.verb, Group: c.group, Resource: c.resource, Subresource: c.subresource, Namespace: c.namespace,
		},
	}}
	got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Status.Allowed
}

// expectRequests makes real requests as id: what it may do succeeds, the
// rest is Forbidden.
func expectRequests(t *testing.T, id identity) {
	g := NewWithT(t)
	ctx := t.Context()
	agent, err := client.New(id.cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	root := createPolicy(t, id.rootNamespace, "root")
	other := createReplica(t, id.other, id.rootNamespace+".root")
	mine := createReplica(t, id.own, id.rootNamespace+".root")
	forbidden := Satisfy(apierrors.IsForbidden)

	g.Expect(agent.Get(ctx, client.ObjectKeyFromObject(mine), &policyv1.Policy{})).To(Succeed())
	g.Expect(agent.Get(ctx, client.ObjectKeyFromObject(other), &policyv1.Policy{})).To(forbidden)
	g.Expect(agent.List(ctx, &policyv1.PolicyList{}, client.InNamespace(id.other))).To(forbidden)
	g.Expect(agent.Status().Update(ctx, other.DeepCopy())).To(forbidden)
	g.Expect(agent.Delete(ctx, other.DeepCopy())).To(forbidden)
	g.Expect(agent.Get(ctx, client.ObjectKeyFromObject(root), &policyv1.Policy{})).To(forbidden)
	g.Expect(agent.List(ctx, &policyv1.PolicyList{})).To(forbidden)
	g.Expect(agent.Update(ctx, root.DeepCopy())).To(forbidden)
	g.Expect(agent.Delete(ctx, root.DeepCopy())).To(forbidden)
	g.Expect(agent.Create(ctx, newPolicy(id.own, "made-by-agent"))).To(forbidden)
	g.Expect(agent.List(ctx, &corev1.SecretList{}, client.InNamespace(id.own))).To(forbidden)
	g.Expect(agent.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "x.", Namespace: id.other},
		InvolvedObject: corev1.ObjectReference{Kind: "Policy", Name: other.Name, Namespace: id.other}})).To(forbidden)
}

func newPolicy(namespace, name string) *policyv1.Policy {
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	p.Spec.PolicyTemplates = []policyv1.PolicyTemplate{}
	return p
}

// createPolicy creates a Policy as the hub's administrator, deleted when
// the test ends.
func createPolicy(t *testing.T, namespace, name string) *policyv1.Policy {
	t.Helper()
	return create(t, newPolicy(namespace, name))
}

// createReplica creates, in a cluster namespace, the replica name of a root
// (with the root-policy label replicas carry: the hub refuses a root there).
func createReplica(t *testing.T, namespace, name string) *policyv1.Policy {
	t.Helper()
	p := newPolicy(namespace, name)
	p.Labels = map[string]string{policyv1.RootPolicyLabel: name}
	return create(t, p)
}

func create(t *testing.T, p *policyv1.Policy) *policyv1.Policy {
	t.Helper()
	if err := env.Hub.Client.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Hub.Client.Delete(context.Background(), p) })
	return p
}
