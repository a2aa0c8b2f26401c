package secretsync_test

import (
	"encoding/base64"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/hubrbac"
	"github.com/canopy-policy/canopy/pkg/spoke/secretsync"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// randomKey returns a printable stand-in for a key, easy to search logs for.
func randomKey() []byte {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, 32)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return b
}

func keySecret(ns string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: templating.EncryptionKeySecret},
		Data:       data,
	}
}

// managedKey returns the managed cluster's copy of the key of c, nil when
// there is none.
func (c *cluster) managedKey(t *testing.T) func(g Gomega) *corev1.Secret {
	return func(g Gomega) *corev1.Secret {
		s := &corev1.Secret{}
		err := c.managed.Get(t.Context(), client.ObjectKey{Namespace: c.ns, Name: templating.EncryptionKeySecret}, s)
		if apierrors.IsNotFound(err) {
			return nil
		}
		g.Expect(err).NotTo(HaveOccurred())
		return s
	}
}

func withData(data map[string][]byte) OmegaMatcher {
	return And(Not(BeNil()), WithTransform(func(s *corev1.Secret) map[string][]byte { return s.Data }, Equal(data)))
}

// The hub's key is copied to the managed cluster, kept identical through
// rotations and hand edits, and deleted with the hub's; another Secret of
// the cluster namespace is never copied, and no key reaches a log.
func TestKeyCopiedUpdatedDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	c := newCluster(t)
	unrelated := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "unrelated"},
		Data:       map[string][]byte{"token": randomKey()},
	}
	g.Expect(c.hub.Create(ctx, unrelated)).To(Succeed())
	first := map[string][]byte{templating.EncryptionKeyField: randomKey()}
	hubKey := keySecret(c.ns, first)
	hubKey.Annotations = map[string]string{"backup.example.com/hub-only": "true"}
	g.Expect(c.hub.Create(ctx, hubKey)).To(Succeed())

	g.Eventually(c.managedKey(t)).WithContext(ctx).Should(withData(first))
	copied := c.managedKey(t)(g)
	g.Expect(copied.Type).To(Equal(corev1.SecretTypeOpaque))
	g.Expect(copied.Labels).To(Equal(map[string]string{secretsync.ManagedByLabel: secretsync.ManagedByValue}))
	g.Expect(copied.Annotations).NotTo(HaveKey("backup.example.com/hub-only"))
	g.Consistently(func() error {
		return c.managed.Get(ctx, client.ObjectKeyFromObject(unrelated), &corev1.Secret{})
	}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))

	// Rotation: the hub moves the key to previousKey and sets a new one.
	rotated := map[string][]byte{templating.EncryptionKeyField: randomKey(), templating.PreviousKeyField: first[templating.EncryptionKeyField]}
	hubKey.Data = rotated
	g.Expect(c.hub.Update(ctx, hubKey)).To(Succeed())
	g.Eventually(c.managedKey(t)).WithContext(ctx).Should(withData(rotated))

	// A copy changed or deleted by hand is put back.
	copied = c.managedKey(t)(g)
	copied.Data = map[string][]byte{templating.EncryptionKeyField: []byte("tampered")}
	g.Expect(c.managed.Update(ctx, copied)).To(Succeed())
	g.Eventually(c.managedKey(t)).WithContext(ctx).Should(withData(rotated))
	g.Expect(c.managed.Delete(ctx, c.managedKey(t)(g))).To(Succeed())
	g.Eventually(c.managedKey(t)).WithContext(ctx).Should(withData(rotated))

	g.Expect(c.hub.Delete(ctx, hubKey)).To(Succeed())
	g.Eventually(c.managedKey(t)).WithContext(ctx).Should(BeNil())

	expectNotLogged(g, first[templating.EncryptionKeyField], rotated[templating.EncryptionKeyField], unrelated.Data["token"])
}

// expectNotLogged checks that no secret, raw or base64, is in the logs.
func expectNotLogged(g Gomega, secrets ...[]byte) {
	out := logs.String()
	g.Expect(out).To(ContainSubstring("Created the copy of the encryption key")) // the logs were captured
	for _, secret := range secrets {
		g.Expect(out).NotTo(ContainSubstring(string(secret)))
		g.Expect(out).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString(secret)))
	}
}

// A Secret of the key's name that Canopy did not write is left alone while
// the hub has no key, and taken over once the hub has one.
func TestHandMadeKeyLeftAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	c := newCluster(t)
	g.Expect(c.managed.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}})).To(Succeed())
	handMade := map[string][]byte{templating.EncryptionKeyField: randomKey()}
	g.Expect(c.managed.Create(ctx, keySecret(c.ns, handMade))).To(Succeed())
	g.Consistently(c.managedKey(t)).WithContext(ctx).Should(withData(handMade))

	fromHub := map[string][]byte{templating.EncryptionKeyField: randomKey()}
	hubKey := keySecret(c.ns, fromHub)
	g.Expect(c.hub.Create(ctx, hubKey)).To(Succeed())
	g.Eventually(c.managedKey(t)).WithContext(ctx).Should(And(withData(fromHub),
		WithTransform(secretsync.Owned, BeTrue())))
	g.Expect(c.hub.Delete(ctx, hubKey)).To(Succeed())
	g.Eventually(c.managedKey(t)).WithContext(ctx).Should(BeNil())
}

// An agent whose hub Role predates the key (no rule on Secrets, as before
// an upgrade of the hub) still syncs its policies: only the key's copy
// waits for the permission.
func TestPolicySyncWithoutKeyPermission(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	c := registerCluster(t)
	role := &rbacv1.Role{}
	g.Expect(c.hub.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: hubrbac.Name}, role)).To(Succeed())
	role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "secrets") })
	g.Expect(c.hub.Update(ctx, role)).To(Succeed())
	g.Expect(c.hub.Create(ctx, keySecret(c.ns, map[string][]byte{templating.EncryptionKeyField: randomKey()}))).To(Succeed())
	g.Eventually(func() error {
		return c.agentHub.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: templating.EncryptionKeySecret}, &corev1.Secret{})
	}).WithContext(ctx).Should(Satisfy(apierrors.IsForbidden))
	c.startAgent(t)

	replica := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "root.p", Labels: map[string]string{
		policyv1.RootPolicyLabel: "root.p", policyv1.ClusterNameLabel: c.ns, policyv1.ClusterNamespaceLabel: c.ns,
	}}}
	replica.Spec.PolicyTemplates = []policyv1.PolicyTemplate{}
	g.Expect(c.hub.Create(ctx, replica)).To(Succeed())
	g.Eventually(func() error {
		return c.managed.Get(ctx, client.ObjectKeyFromObject(replica), &policyv1.Policy{})
	}).WithContext(ctx).Should(Succeed())
	g.Expect(c.managedKey(t)(g)).To(BeNil())
}
