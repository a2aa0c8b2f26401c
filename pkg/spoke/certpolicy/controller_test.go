package certpolicy

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestExpiringCertificate follows a policy over a namespace whose TLS
// Secret holds a certificate about to expire, then a renewed one: the
// status and one compliance event per change are OCM's; Secrets of other
// types and Secrets without a certificate are left out; no Secret data
// reaches the status or an event.
func TestExpiringCertificate(t *testing.T) {
	f := newFixture(t)
	start := time.Now()
	expiring := f.secret(f.ns, "web-tls", testCert{notBefore: start.Add(-time.Hour), notAfter: start.Add(50 * time.Hour),
		sans: []string{"web.example.com"}}, nil)
	opaqueCert, _ := pemCert(t, testCert{notBefore: start.Add(-time.Hour), notAfter: start.Add(time.Hour)})
	opaque := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "opaque"}, Data: map[string][]byte{"tls.crt": opaqueCert}}
	f.g.Expect(f.c.Create(t.Context(), opaque)).To(Succeed())
	garbage := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "garbage"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("not a certificate at all, but secret"), "tls.key": []byte("a very secret private key")}}
	f.g.Expect(f.c.Create(t.Context(), garbage)).To(Succeed())

	f.policy(`
metadata: {name: certs}
spec:
  namespaceSelector: {include: [$NS]}
  minimumDuration: 100h`)
	f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{
		"NonCompliant; 1 certificates expire in less than 100h0m0s: " + f.ns + ":web-tls",
	}))
	st := f.status("certs")(f.g)
	f.g.Expect(st.ComplianceState).To(Equal(policyv1.NonCompliant))
	f.g.Expect(st.CompliancyDetails).To(HaveKey(f.ns))
	details := st.CompliancyDetails[f.ns]
	f.g.Expect(details.NonCompliantCertificates).To(Equal(uint(1)))
	f.g.Expect(details.NonCompliantCertificatesList).To(HaveKeyWithValue("web-tls", And(
		HaveField("Secret", "web-tls"), HaveField("Sans", []string{"web.example.com"}),
		HaveField("Duration", 51*time.Hour), HaveField("Expiry", BeNumerically("~", 50*time.Hour, time.Minute)))))
	f.g.Expect(details.Message).To(HavePrefix("Found 1 non compliant certificates in the namespace " + f.ns +
		".\nList of non compliant certificates:\nweb-tls expires in 4"))
	// Steady: evaluated every second (ResyncInterval), it writes no status
	// although the time left changes.
	steady := &policyv1.CertificatePolicy{}
	f.g.Expect(f.c.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: "certs"}, steady)).To(Succeed())
	f.g.Consistently(func(g Gomega) string {
		p := &policyv1.CertificatePolicy{}
		g.Expect(f.c.Get(t.Context(), client.ObjectKeyFromObject(steady), p)).To(Succeed())
		return p.ResourceVersion
	}, 3*time.Second, poll).Should(Equal(steady.ResourceVersion))

	renewed := f.secret(f.ns, "web-tls", testCert{notBefore: start, notAfter: start.Add(1000 * time.Hour)}, nil)
	f.g.Eventually(f.status("certs"), eventually, poll).Should(HaveField("ComplianceState", policyv1.Compliant))
	f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{
		"NonCompliant; 1 certificates expire in less than 100h0m0s: " + f.ns + ":web-tls",
		"Compliant",
	}))
	f.g.Expect(f.status("certs")(f.g).CompliancyDetails).To(Equal(map[string]policyv1.CertificateCompliancyDetails{
		f.ns: {Message: "Found 0 non compliant certificates in the namespace " + f.ns + ".\n"},
	}))
	f.expectNoLeak("certs", expiring, renewed, opaque.Data, garbage.Data)
}

// TestCertificateRules checks every rule at once on real certificates:
// CA minimum, maximum durations and SAN patterns, in the namespaces a
// label selector chooses, and the Secrets a label selector chooses.
func TestCertificateRules(t *testing.T) {
	f := newFixture(t)
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: f.ns + "-", Labels: map[string]string{"certs": f.ns}}}
	f.g.Expect(f.c.Create(t.Context(), other)).To(Succeed())
	t.Cleanup(func() { _ = f.c.Delete(t.Context(), other) })
	f.g.Expect(f.c.Patch(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}},
		client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"certs":"`+f.ns+`"}}}`)))).To(Succeed())
	now, day := time.Now(), 24*time.Hour
	checked := map[string]string{"checked": "yes"}
	f.secret(f.ns, "root", testCert{notBefore: now.Add(-day), notAfter: now.Add(30 * day), ca: true}, checked)
	f.secret(f.ns, "long", testCert{notBefore: now.Add(-day), notAfter: now.Add(400 * day), sans: []string{"a.example.com"}}, checked)
	f.secret(other.Name, "internal", testCert{notBefore: now.Add(-day), notAfter: now.Add(60 * day),
		sans: []string{"a.example.com", "internal.example.com"}}, checked)
	f.secret(other.Name, "unchecked", testCert{notBefore: now.Add(-day), notAfter: now.Add(time.Hour)}, nil)

	f.policy(`
metadata: {name: rules}
spec:
  namespaceSelector: {matchLabels: {certs: $NS}}
  labelSelector: {checked: "yes"}
  minimumDuration: 1h
  minimumCADuration: 2400h
  maximumDuration: 2000h
  disallowedSANPattern: ^internal\.`)
	f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{
		"NonCompliant; 1 CA certificates expire in less than 2400h0m0s: " + f.ns + ":root\n" +
			" 1 certificates exceed the maximum duration of 2000h0m0s: " + f.ns + ":long\n" +
			" 1 certificates defined SAN entries do not match pattern  Disallowed: ^internal\\.: " + other.Name + ":internal",
	}))
	st := f.status("rules")(f.g)
	f.g.Expect(st.CompliancyDetails).To(HaveLen(2))
	f.g.Expect(st.CompliancyDetails[other.Name].NonCompliantCertificatesList).To(HaveKey("internal"), "unchecked is not selected")
}

// TestExpiryWithTime: a certificate compliant now becomes non-compliant
// when it crosses its minimum duration, with nothing else changing.
func TestExpiryWithTime(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	f.secret(f.ns, "soon", testCert{notBefore: now.Add(-time.Hour), notAfter: now.Add(time.Hour + 5*time.Second)}, nil)
	f.policy(`
metadata: {name: soon}
spec:
  namespaceSelector: {include: [$NS]}
  minimumDuration: 1h`)
	f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{"Compliant"}))
	f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{
		"Compliant",
		"NonCompliant; 1 certificates expire in less than 1h0m0s: " + f.ns + ":soon",
	}))
}

// TestNoNamespaces: a selector choosing nothing is Compliant, as in OCM,
// and says so.
func TestNoNamespaces(t *testing.T) {
	f := newFixture(t)
	f.policy(`
metadata: {name: none}
spec:
  namespaceSelector: {include: [does-not-exist-*]}`)
	f.g.Eventually(f.events(), eventually, poll).Should(Equal([]string{
		"Compliant; No namespaces matched the namespace selector.",
	}))
}

// TestDurationsValidated: the API server refuses a duration the agent could
// not decode ("28d" is not a Go duration), instead of storing a policy
// that would break the agent's cache.
func TestDurationsValidated(t *testing.T) {
	f := newFixture(t)
	p := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": policyv1.GroupVersion.String(), "kind": policyv1.CertificatePolicyKind,
		"metadata": map[string]any{"namespace": f.ns, "name": "days"},
		"spec":     map[string]any{"minimumDuration": "28d"},
	}}
	f.g.Expect(f.c.Create(t.Context(), p)).To(MatchError(ContainSubstring(`spec.minimumDuration: Invalid value: "28d"`)))
}

// TestForbiddenSecrets: an agent whose enforcement ClusterRole does not
// reach Secrets reports the API server's Forbidden message as the
// evaluation, not an error retried forever.
func TestForbiddenSecrets(t *testing.T) {
	f := newFixture(t)
	cfg := rest.CopyConfig(suite.Get(t).Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "no-secrets"}
	reader, err := client.New(cfg, client.Options{})
	f.g.Expect(err).NotTo(HaveOccurred())
	r := &Reconciler{ManagedClient: f.c, ManagedReader: reader}
	p := &policyv1.CertificatePolicy{Spec: policyv1.CertificatePolicySpec{NamespaceSelector: policyv1.Target{
		Include: []policyv1.NonEmptyString{policyv1.NonEmptyString(f.ns)}}}}
	e, err := r.evaluate(t.Context(), p, time.Now())
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(e.status.ComplianceState).To(Equal(policyv1.NonCompliant))
	f.g.Expect(e.message).To(Equal("listing the TLS Secrets of namespace " + f.ns + `: secrets is forbidden: ` +
		`User "no-secrets" cannot list resource "secrets" in API group "" in the namespace "` + f.ns + `"`))
}
