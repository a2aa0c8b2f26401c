package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo's DSL reads best unqualified
	. "github.com/onsi/gomega"    //nolint:revive // gomega's DSL reads best unqualified
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// CertificatesSpecInput is the input of CertificatesSpec.
type CertificatesSpecInput struct {
	// Env is the hub and the managed clusters.
	Env *testenv.Env
	// Clusters are the managed clusters the policies are placed on.
	Clusters []string
}

// certificatesTimeout bounds each wait of CertificatesSpec: a policy is
// propagated, its CertificatePolicy created and evaluated, and the
// compliance reported home.
const certificatesTimeout = 2 * time.Minute

// certificatesMinimum is the minimumDuration of CertificatesSpec's
// policies: the valid certificate has more time left, the expiring one
// less.
const certificatesMinimum = 100 * time.Hour

// CertificatesSpec is the user story "know which clusters hold certificates
// about to expire": two hub Policies, each delivering a CertificatePolicy
// with minimumDuration 100h to every cluster, one over a namespace whose
// TLS Secret has 1000h left, the other over a namespace whose TLS Secret
// has 50h left. The hub shows the first Compliant on every cluster and the
// second NonCompliant, with the replica's history in OCM's
// cert-policy-controller's words (controllers/certificatepolicy_utils.go,
// convertPolicyStatusToString: "Compliant" alone when namespaces were
// selected; "NonCompliant; <n> certificates expire in less than
// <minimumDuration>: <namespace>:<secret>, ..."), and no certificate or
// key material reaches the hub.
//
// It runs the hub's controllers and one agent per cluster in this process.
func CertificatesSpec(inputGetter func() CertificatesSpecInput) {
	var (
		input CertificatesSpecInput
		ns    string
	)
	BeforeEach(func(ctx SpecContext) {
		input = inputGetter()
		ns = CreateNamespace(ctx, input.Env.Hub.Client, "certificates")
		startHub(input.Env.Hub.Config)
		for _, name := range input.Clusters {
			startAgent(input.Env.Cluster(name))
		}
	})

	It("reports a valid certificate Compliant and one expiring within minimumDuration NonCompliant, per cluster, on the hub", func(ctx SpecContext) {
		valid, expiring := ns+"-valid", ns+"-expiring" // namespaces of every managed cluster
		now := time.Now()
		var material [][]byte // what must never reach the hub
		for _, c := range input.Clusters {
			mc := input.Env.Cluster(c).Client
			material = append(material, tlsSecret(ctx, mc, valid, "web-tls", now.Add(-time.Hour), now.Add(1000*time.Hour))...)
			material = append(material, tlsSecret(ctx, mc, expiring, "web-tls", now.Add(-time.Hour), now.Add(50*time.Hour))...)
		}
		for _, name := range []string{"valid", "expiring"} {
			Expect(input.Env.Hub.Client.Create(ctx, certificatesPolicy(ns, name, ns+"-"+name))).To(Succeed())
		}
		Expect(input.Env.Hub.Client.Create(ctx, certificatesBinding(ns, "valid", "expiring"))).To(Succeed())
		Expect(input.Env.SetPlacementDecisions(ctx, ns, "certificates", input.Clusters...)).To(Succeed())

		expectRootCompliance(ctx, input, client.ObjectKey{Namespace: ns, Name: "valid"}, policyv1.Compliant)
		expectRootCompliance(ctx, input, client.ObjectKey{Namespace: ns, Name: "expiring"}, policyv1.NonCompliant)
		for _, c := range input.Clusters {
			expectLatest(ctx, input, c, ns, "valid", "Compliant")
			expectLatest(ctx, input, c, ns, "expiring",
				"NonCompliant; 1 certificates expire in less than 100h0m0s: "+expiring+":web-tls")
			template := &policyv1.CertificatePolicy{} // delivered by the hub Policy, into the cluster namespace
			Expect(input.Env.Cluster(c).Client.Get(ctx, client.ObjectKey{Namespace: c, Name: templateName(ns, "expiring")}, template)).To(Succeed(), c)
			Expect(template.Labels).To(HaveKeyWithValue(policyv1.PolicyLabel, ns+".expiring"), c)
			Expect(template.Status.CompliancyDetails[expiring].NonCompliantCertificatesList).To(HaveKey("web-tls"), c)
			for _, name := range []string{"valid", "expiring"} {
				replica := &policyv1.Policy{}
				Expect(input.Env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: c, Name: ns + "." + name}, replica)).To(Succeed())
				raw, err := json.Marshal(replica)
				Expect(err).NotTo(HaveOccurred())
				for _, m := range material {
					Expect(string(raw)).NotTo(ContainSubstring(string(m)), "%s: the replica shows certificate material", c)
				}
				Expect(string(raw)).NotTo(ContainSubstring("BEGIN"), "%s: the replica shows PEM", c)
			}
		}
	})
}

// templateName is the CertificatePolicy of root policy name: unique per
// spec, since template names are unique on a cluster and specs share
// clusters.
func templateName(ns, name string) string { return ns + "-" + name }

// certificatesPolicy is a root Policy in ns delivering a CertificatePolicy
// over namespace with minimumDuration certificatesMinimum.
func certificatesPolicy(ns, name, namespace string) *policyv1.Policy {
	GinkgoHelper()
	template := map[string]any{
		"apiVersion": policyv1.GroupVersion.String(), "kind": "CertificatePolicy",
		"metadata": map[string]any{"name": templateName(ns, name)},
		"spec": map[string]any{
			"remediationAction": "inform", "severity": "low",
			"namespaceSelector": map[string]any{"include": []any{namespace}},
			"minimumDuration":   certificatesMinimum.String(),
		},
	}
	raw, err := json.Marshal(template)
	Expect(err).NotTo(HaveOccurred())
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	p.Spec.RemediationAction = policyv1.Inform
	p.Spec.PolicyTemplates = []policyv1.PolicyTemplate{{ObjectDefinition: runtime.RawExtension{Raw: raw}}}
	return p
}

// certificatesBinding binds the Policies names of ns to the Placement
// "certificates".
func certificatesBinding(ns string, names ...string) *policyv1.PlacementBinding {
	b := &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "certificates"}}
	b.PlacementRef = policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "certificates"}
	for _, n := range names {
		b.Subjects = append(b.Subjects, policyv1.Subject{APIGroup: policyv1.GroupVersion.Group, Kind: "Policy", Name: n})
	}
	return b
}

// expectRootCompliance waits until the root policy key is in state on every
// cluster.
func expectRootCompliance(ctx context.Context, input CertificatesSpecInput, key client.ObjectKey, state policyv1.ComplianceState) {
	GinkgoHelper()
	Eventually(func(g Gomega) map[string]policyv1.ComplianceState {
		p := &policyv1.Policy{}
		g.Expect(input.Env.Hub.Client.Get(ctx, key, p)).To(Succeed())
		return perCluster(p)
	}).WithContext(ctx).WithTimeout(certificatesTimeout).Should(Equal(allOf(input.Clusters, state)), key.Name)
}

// expectLatest waits until the newest history message of root policy name's
// replica for cluster, about its one template, is message.
func expectLatest(ctx context.Context, input CertificatesSpecInput, cluster, ns, name, message string) {
	GinkgoHelper()
	Eventually(func(g Gomega) string {
		replica := &policyv1.Policy{}
		g.Expect(input.Env.Hub.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: ns + "." + name}, replica)).To(Succeed())
		h := historyOf(replica, templateName(ns, name))
		g.Expect(h).NotTo(BeEmpty())
		return h[0].Message
	}).WithContext(ctx).WithTimeout(certificatesTimeout).Should(Equal(message), "%s: %s", cluster, name)
}

// tlsSecret creates namespace ns on a managed cluster (deleted when the
// spec ends) and in it a kubernetes.io/tls Secret name holding a new
// self-signed certificate valid from notBefore to notAfter, and returns the
// certificate's and the key's PEM.
func tlsSecret(ctx context.Context, c client.Client, ns, name string, notBefore, notAfter time.Time) [][]byte {
	GinkgoHelper()
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	Expect(c.Create(ctx, namespace)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(c.Delete(ctx, namespace))).To(Succeed())
	}, NodeTimeout(30*time.Second))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: notBefore, NotAfter: notAfter, DNSNames: []string{name + ".example.com"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}
	Expect(c.Create(ctx, secret)).To(Succeed())
	return [][]byte{certPEM, keyPEM}
}
