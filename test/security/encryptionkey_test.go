package security_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/deploy/spoke/rbac"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/hubrbac"
	"github.com/canopy-policy/canopy/pkg/spoke"
	"github.com/canopy-policy/canopy/pkg/templating"
	"github.com/canopy-policy/canopy/test/inproc"
)

// TestAgentReadsOnlyItsKey checks, with SubjectAccessReviews and real
// requests, that an agent's hub identity may read its cluster's encryption
// key (Secret policy-encryption-key in its cluster namespace, by name or by
// a list or watch selecting that name, as its informer does) and nothing
// else: not another Secret of its namespace, not another cluster's key, and
// it may not change its own.
func TestAgentReadsOnlyItsKey(t *testing.T) {
	suite.Get(t) // starts env on first use
	g := NewWithT(t)
	for _, id := range []identity{
		{name: "cluster1, issued by OCM", cfg: env.Managed[0].HubConfig, user: hubrbac.User("cluster1"),
			groups: hubrbac.Groups("cluster1"), own: "cluster1", other: "cluster2"},
		{name: "cluster2, issued by OCM", cfg: env.Managed[1].HubConfig, user: hubrbac.User("cluster2"),
			groups: hubrbac.Groups("cluster2"), own: "cluster2", other: "cluster1"},
	} {
		t.Run(id.name, func(t *testing.T) {
			key := templating.EncryptionKeySecret
			for _, c := range []secretAccess{
				{verb: "get", name: key, namespace: id.own, allowed: true},
				{verb: "list", name: key, namespace: id.own, allowed: true},
				{verb: "watch", name: key, namespace: id.own, allowed: true},
				{verb: "update", name: key, namespace: id.own},
				{verb: "patch", name: key, namespace: id.own},
				{verb: "delete", name: key, namespace: id.own},
				{verb: "create", namespace: id.own},
				{verb: "list", namespace: id.own},
				{verb: "get", name: "other", namespace: id.own},
				{verb: "get", name: key, namespace: id.other},
				{verb: "list", name: key, namespace: id.other},
				{verb: "get", name: key, namespace: "default"},
			} {
				g.Expect(secretAllowed(t, id, c)).To(Equal(c.allowed), "SubjectAccessReview: %s secret %q in %s", c.verb, c.name, c.namespace)
			}
			expectKeyRequests(t, id)
		})
	}
}

// secretAccess is one request on a Secret (any Secret when name is empty)
// an identity may or may not make.
type secretAccess struct {
	verb, name, namespace string
	allowed               bool
}

// secretAllowed asks the hub whether id may do c.
func secretAllowed(t *testing.T, id identity, c secretAccess) bool {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: id.user, Groups: id.groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: c.verb, Resource: "secrets", Name: c.name, Namespace: c.namespace,
		},
	}}
	got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Status.Allowed
}

// expectKeyRequests reads Secrets on the hub as id: its own key succeeds,
// the rest is Forbidden.
func expectKeyRequests(t *testing.T, id identity) {
	g := NewWithT(t)
	ctx := t.Context()
	agent, err := client.New(id.cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	mine := createSecret(t, id.own, templating.EncryptionKeySecret)
	createSecret(t, id.own, "not-the-key")
	createSecret(t, id.other, templating.EncryptionKeySecret)
	forbidden := Satisfy(apierrors.IsForbidden)
	byName := client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", templating.EncryptionKeySecret)}

	got := &corev1.Secret{}
	g.Expect(agent.Get(ctx, client.ObjectKeyFromObject(mine), got)).To(Succeed())
	g.Expect(got.Data).To(Equal(mine.Data))
	list := &corev1.SecretList{}
	g.Expect(agent.List(ctx, list, client.InNamespace(id.own), byName)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	kube, err := kubernetes.NewForConfig(id.cfg)
	g.Expect(err).NotTo(HaveOccurred())
	w, err := kube.CoreV1().Secrets(id.own).Watch(ctx, metav1.ListOptions{FieldSelector: byName.String()})
	g.Expect(err).NotTo(HaveOccurred())
	w.Stop()

	g.Expect(agent.Get(ctx, client.ObjectKey{Namespace: id.own, Name: "not-the-key"}, &corev1.Secret{})).To(forbidden)
	g.Expect(agent.List(ctx, &corev1.SecretList{}, client.InNamespace(id.own))).To(forbidden)
	g.Expect(agent.Get(ctx, client.ObjectKey{Namespace: id.other, Name: templating.EncryptionKeySecret}, &corev1.Secret{})).To(forbidden)
	g.Expect(agent.List(ctx, &corev1.SecretList{}, client.InNamespace(id.other), byName)).To(forbidden)
	_, err = kube.CoreV1().Secrets(id.own).Watch(ctx, metav1.ListOptions{})
	g.Expect(err).To(forbidden)
	changed := mine.DeepCopy()
	changed.Data = map[string][]byte{templating.EncryptionKeyField: []byte("chosen-by-the-agent")}
	g.Expect(agent.Update(ctx, changed)).To(forbidden)
	g.Expect(agent.Delete(ctx, mine.DeepCopy())).To(forbidden)
}

// createSecret creates a Secret as the hub's administrator, deleted when
// the test ends. One that exists already (a key the hub made for an
// earlier test) is returned as it is, and left.
func createSecret(t *testing.T, namespace, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data:       map[string][]byte{templating.EncryptionKeyField: []byte("0123456789abcdef0123456789abcdef")},
	}
	err := env.Hub.Client.Create(t.Context(), s)
	if apierrors.IsAlreadyExists(err) {
		err = env.Hub.Client.Get(t.Context(), client.ObjectKeyFromObject(s), s)
		if err == nil {
			return s
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Hub.Client.Delete(context.Background(), s) })
	return s
}

// keyCopyUser is the agent's managed cluster identity in
// TestRestrictedAgentCopiesKey.
const keyCopyUser = "canopy-agent-keycopy"

// TestRestrictedAgentCopiesKey runs the agent with only its generated
// minimal ClusterRole (deploy/spoke/rbac/role.yaml) and its hub identity:
// that is enough to copy the cluster's encryption key to the managed
// cluster and to delete the copy with the hub's key, and no other Secret
// of the cluster namespace is copied.
func TestRestrictedAgentCopiesKey(t *testing.T) {
	suite.Get(t) // starts env on first use
	logErrorsOnFailure(t)
	g := NewWithT(t)
	ctx := t.Context()
	mc := env.Cluster("cluster2")
	running, err := inproc.RunAgent(context.Background(), minimalIdentity(t, mc, keyCopyUser), spoke.Options{
		HubConfig: mc.HubConfig, ClusterName: mc.Name, Evaluators: spoke.NoEvaluators,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(running.Stop()).To(Succeed()) })

	other := createSecret(t, mc.Name, "not-the-key")
	hubKey := createSecret(t, mc.Name, templating.EncryptionKeySecret)
	copied := &corev1.Secret{}
	g.Eventually(func() error {
		return mc.Client.Get(ctx, client.ObjectKeyFromObject(hubKey), copied)
	}, eventually, poll).Should(Succeed())
	g.Expect(copied.Data).To(Equal(hubKey.Data))
	g.Expect(mc.Client.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Secret{})).To(Satisfy(apierrors.IsNotFound))

	g.Expect(env.Hub.Client.Delete(ctx, hubKey)).To(Succeed())
	g.Eventually(func() error {
		return mc.Client.Get(ctx, client.ObjectKeyFromObject(hubKey), &corev1.Secret{})
	}, eventually, poll).Should(Satisfy(apierrors.IsNotFound))
}

// minimalIdentity returns a managed cluster identity, user, holding only
// the generated canopy-agent ClusterRole; the role and its binding are
// deleted when the test ends.
func minimalIdentity(t *testing.T, mc *testenv.ManagedCluster, user string) *rest.Config {
	t.Helper()
	g := NewWithT(t)
	role, err := rbac.ClusterRole()
	g.Expect(err).NotTo(HaveOccurred())
	role.Name = user
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, obj := range []client.Object{role, binding} {
		g.Expect(mc.Client.Create(t.Context(), obj)).To(Succeed())
		t.Cleanup(func() { _ = mc.Client.Delete(context.Background(), obj) })
	}
	cfg, err := mc.AddUser(user)
	g.Expect(err).NotTo(HaveOccurred())
	return cfg
}
