package certpolicy

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func cert(name string, validFor, left time.Duration, ca bool, sans ...string) certificate {
	return certificate{name: name, secret: name + "-tls", notBefore: now.Add(left - validFor), notAfter: now.Add(left), ca: ca, sans: sans}
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// The compliance message and state of each rule, and of their mixes, are
// OCM's.
func TestEvaluateMessages(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name  string
		spec  policyv1.CertificatePolicySpec
		certs []certificate
		state policyv1.ComplianceState
		msg   string
	}{{
		name:  "compliant under the default minimum",
		certs: []certificate{cert("web", 90*day, 60*day, false)},
		state: policyv1.Compliant,
	}, {
		name:  "expiring under the default minimum (672h)",
		certs: []certificate{cert("web", 90*day, 20*day, false), cert("api", 90*day, 10*day, false)},
		state: policyv1.NonCompliant,
		msg:   "2 certificates expire in less than 672h0m0s: ns1:api-tls, ns1:web-tls",
	}, {
		name:  "a CA under its own minimum; the leaf under the plain one",
		spec:  policyv1.CertificatePolicySpec{MinDuration: dur(time.Hour), MinCADuration: dur(100 * day)},
		certs: []certificate{cert("root", 365*day, 50*day, true), cert("leaf", 30*day, 20*day, false)},
		state: policyv1.NonCompliant,
		msg:   "1 CA certificates expire in less than 2400h0m0s: ns1:root-tls",
	}, {
		name: "too long, CA too long, SAN mismatch",
		spec: policyv1.CertificatePolicySpec{
			MinDuration: dur(time.Hour), MaxDuration: dur(100 * day), MaxCADuration: dur(1000 * day),
			AllowedSANPattern: `\.example\.com$`, DisallowedSANPattern: `^internal\.`,
		},
		certs: []certificate{
			cert("long", 200*day, 100*day, false, "a.example.com"),
			cert("root", 2000*day, 1000*day, true),
			cert("bad-san", 10*day, 5*day, false, "a.example.com", "internal.example.com"),
			cert("other-san", 10*day, 5*day, false, "a.example.org"),
		},
		state: policyv1.NonCompliant,
		msg: "1 certificates exceed the maximum duration of 2400h0m0s: ns1:long-tls\n" +
			" 1 CA certificates exceed the maximum duration of 24000h0m0s: ns1:root-tls\n" +
			" 2 certificates defined SAN entries do not match pattern Allowed: \\.example\\.com$ Disallowed: ^internal\\.: " +
			"ns1:bad-san-tls, ns1:other-san-tls",
	}, {
		name:  "invalid SAN pattern",
		spec:  policyv1.CertificatePolicySpec{AllowedSANPattern: "("},
		state: policyv1.NonCompliant,
		msg:   "the allowedSANPattern regular expression is not valid: error parsing regexp: missing closing ): `(`",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := parseRules(&tc.spec)
			var e evaluation
			if err != nil {
				e = invalid(err)
			} else {
				e = evaluate(r, []string{"ns1"}, map[string][]certificate{"ns1": tc.certs}, now)
			}
			g.Expect(e.status.ComplianceState).To(Equal(tc.state))
			g.Expect(e.message).To(Equal(tc.msg))
		})
	}
}

// The status of a namespace lists its non-compliant certificates with
// OCM's fields and message; no selected namespace is the "" entry.
func TestEvaluateStatus(t *testing.T) {
	g := NewWithT(t)
	r, err := parseRules(&policyv1.CertificatePolicySpec{MinDuration: dur(100 * time.Hour)})
	g.Expect(err).NotTo(HaveOccurred())
	web := cert("web", 1000*time.Hour, 50*time.Hour, false, "web.example.com")
	ok := cert("ok", 1000*time.Hour, 500*time.Hour, false)
	e := evaluate(r, []string{"ns1", "ns2"}, map[string][]certificate{"ns1": {web, ok}}, now)
	g.Expect(e.status).To(Equal(policyv1.CertificatePolicyStatus{
		ComplianceState: policyv1.NonCompliant,
		CompliancyDetails: map[string]policyv1.CertificateCompliancyDetails{
			"ns1": {
				NonCompliantCertificates: 1,
				NonCompliantCertificatesList: map[string]policyv1.CertificateDetails{"web": {
					Secret: "web-tls", Expiration: "50h0m0s", Expiry: 50 * time.Hour, Duration: 1000 * time.Hour,
					Sans: []string{"web.example.com"},
				}},
				Message: "Found 1 non compliant certificates in the namespace ns1.\nList of non compliant certificates:\nweb expires in 50h0m0s\n",
			},
			"ns2": {Message: "Found 0 non compliant certificates in the namespace ns2.\n"},
		},
	}))
	g.Expect(e.message).To(Equal("1 certificates expire in less than 100h0m0s: ns1:web-tls"))
	g.Expect(e.next).To(Equal(ok.notAfter.Add(-100*time.Hour)), "ok crosses its minimum next")

	none := evaluate(r, nil, nil, now)
	g.Expect(none.status.ComplianceState).To(Equal(policyv1.Compliant))
	g.Expect(none.status.CompliancyDetails).To(Equal(map[string]policyv1.CertificateCompliancyDetails{
		"": {Message: "Found 0 non compliant certificates, no namespaces were selected.\n"},
	}))
	g.Expect(none.message).To(Equal("No namespaces matched the namespace selector."))
}

// Only time-dependent fields differ between two evaluations of the same
// certificates: they count as the same findings, so no status is written.
func TestSameFindings(t *testing.T) {
	g := NewWithT(t)
	r, _ := parseRules(&policyv1.CertificatePolicySpec{})
	certs := map[string][]certificate{"ns1": {cert("web", 90*24*time.Hour, time.Hour, false)}}
	a := evaluate(r, []string{"ns1"}, certs, now)
	b := evaluate(r, []string{"ns1"}, certs, now.Add(time.Minute))
	g.Expect(a.status).NotTo(Equal(b.status))
	g.Expect(sameFindings(a.status, b.status)).To(BeTrue())
	c := evaluate(r, []string{"ns1"}, map[string][]certificate{}, now)
	g.Expect(sameFindings(a.status, c.status)).To(BeFalse())
}

// parseSecret reads the leaf of tls.crt (or of the labelled key), names
// the certificate after its label, and never quotes the data in errors.
func TestParseSecret(t *testing.T) {
	g := NewWithT(t)
	certPEM, keyPEM := pemCert(t, testCert{notBefore: now, notAfter: now.Add(time.Hour), sans: []string{"a.example.com"}})
	caPEM, _ := pemCert(t, testCert{notBefore: now, notAfter: now.Add(48 * time.Hour), ca: true})
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{certNameLabel: "web"}},
		Data: map[string][]byte{corev1.TLSCertKey: append(append([]byte{}, certPEM...), caPEM...), corev1.TLSPrivateKeyKey: keyPEM}}
	c, err := parseSecret(s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).To(Equal(certificate{name: "web", secret: "s", notBefore: now, notAfter: now.Add(time.Hour), sans: []string{"a.example.com"}}))

	s.Labels = map[string]string{keyNameLabel: "ca.crt"}
	s.Data["ca.crt"] = caPEM
	c, err = parseSecret(s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.ca).To(BeTrue())
	g.Expect(c.name).To(Equal("s"))

	s.Labels = nil
	s.Data[corev1.TLSCertKey] = keyPEM // no certificate there
	_, err = parseSecret(s)
	g.Expect(err).To(MatchError("key tls.crt: no certificate"))
}
