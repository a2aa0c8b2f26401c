package ocmagents_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// TestControllerManager checks that the hub's kube-controller-manager signs
// an approved client-certificate request, that the hub's kube-apiserver
// accepts the certificate as the user and groups it names, and that it
// collects the objects of a deleted owner.
func TestControllerManager(t *testing.T) {
	g := NewWithT(t)
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{}})
	logOnFailure(t, env)
	g.Expect(ocmagents.StartControllerManager(t.Context(), env)).To(Succeed())
	kube := kubernetes.NewForConfigOrDie(env.Hub.Config)
	ctx := t.Context()

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	request, err := certutil.MakeCSR(key, &pkix.Name{CommonName: "someone", Organization: []string{"some-group"}}, nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	csr, err := kube.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "someone"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by the test",
	})
	_, err = kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	var cert []byte
	g.Eventually(func(g Gomega) {
		got, err := kube.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		cert = got.Status.Certificate
		g.Expect(cert).NotTo(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	certs, err := certutil.ParseCertsPEM(cert)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(certs[0].ExtKeyUsage).To(ContainElement(x509.ExtKeyUsageClientAuth))

	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	g.Expect(err).NotTo(HaveOccurred())
	cfg := rest.AnonymousClientConfig(env.Hub.Config)
	cfg.CertData, cfg.KeyData = cert, keyPEM
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().
		Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(review.Status.UserInfo.Username).To(Equal("someone"))
	g.Expect(review.Status.UserInfo.Groups).To(ContainElement("some-group"))

	owner, err := kube.CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "owned", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
	}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kube.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() bool {
		_, err := kube.CoreV1().ConfigMaps("default").Get(ctx, "owned", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(time.Minute).Should(BeTrue(), "the garbage collector deletes what the deleted ConfigMap owned")
}
