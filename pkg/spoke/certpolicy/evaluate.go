package certpolicy

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// DefaultMinimumDuration is the minimumDuration of a policy that sets
// none: OCM's default.
const DefaultMinimumDuration = 672 * time.Hour

const (
	// certNameLabel and certManagerNameLabel name the certificate a Secret
	// holds; without them the Secret's name stands for it (OCM's labels).
	certNameLabel        = "certificate-name"
	certManagerNameLabel = "certmanager.k8s.io/certificate-name"
	// keyNameLabel names the data key holding the certificate, tls.crt by
	// default (OCM's label).
	keyNameLabel = "certificate_key_name"
)

// certificate is what evaluation needs of one Secret's certificate: names
// and validity, never key material.
type certificate struct {
	// name is the certificate's name (certNameLabel, else the Secret's).
	name string
	// secret is the Secret's name.
	secret    string
	notBefore time.Time
	notAfter  time.Time
	ca        bool
	sans      []string
}

// errNoCertificate says a Secret holds no PEM certificate where expected.
var errNoCertificate = errors.New("no certificate")

// parseSecret reads the first certificate of secret (a chain starts with
// the leaf). The error never quotes the data.
func parseSecret(secret *corev1.Secret) (certificate, error) {
	key := corev1.TLSCertKey
	if k := secret.Labels[keyNameLabel]; k != "" {
		key = k
	}
	rest := secret.Data[key]
	for len(rest) > 0 {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return certificate{}, fmt.Errorf("key %s: parsing the certificate: %w", key, err)
		}
		name := secret.Name
		if n := secret.Labels[certNameLabel]; n != "" {
			name = n
		} else if n := secret.Labels[certManagerNameLabel]; n != "" {
			name = n
		}
		return certificate{name: name, secret: secret.Name, notBefore: cert.NotBefore, notAfter: cert.NotAfter,
			ca: cert.IsCA, sans: cert.DNSNames}, nil
	}
	return certificate{}, fmt.Errorf("key %s: %w", key, errNoCertificate)
}

// rules are a policy's checks, parsed.
type rules struct {
	spec       *policyv1.CertificatePolicySpec
	allowed    *regexp.Regexp
	disallowed *regexp.Regexp
}

// parseRules compiles the SAN patterns of spec; an invalid pattern is an
// error the policy reports (OCM logs and ignores it, which hides a typo).
func parseRules(spec *policyv1.CertificatePolicySpec) (rules, error) {
	r := rules{spec: spec}
	var err error
	if spec.AllowedSANPattern != "" {
		if r.allowed, err = regexp.Compile(spec.AllowedSANPattern); err != nil {
			return r, fmt.Errorf("the allowedSANPattern regular expression is not valid: %w", err)
		}
	}
	if spec.DisallowedSANPattern != "" {
		if r.disallowed, err = regexp.Compile(spec.DisallowedSANPattern); err != nil {
			return r, fmt.Errorf("the disallowedSANPattern regular expression is not valid: %w", err)
		}
	}
	return r, nil
}

// minimum returns the least time c may have left, and whether the CA
// minimum applies.
func (r rules) minimum(c certificate) (time.Duration, bool) {
	if c.ca && r.spec.MinCADuration != nil {
		return r.spec.MinCADuration.Duration, true
	}
	if r.spec.MinDuration != nil {
		return r.spec.MinDuration.Duration, false
	}
	return DefaultMinimumDuration, false
}

// expiring reports whether c has less time left than its minimum.
func (r rules) expiring(c certificate, now time.Time) bool {
	least, _ := r.minimum(c)
	return c.notAfter.Sub(now) < least
}

// maximum returns the longest validity c may have (nil for no limit), and
// whether the CA maximum applies.
func (r rules) maximum(c certificate) (*time.Duration, bool) {
	if c.ca && r.spec.MaxCADuration != nil {
		return &r.spec.MaxCADuration.Duration, true
	}
	if r.spec.MaxDuration != nil {
		return &r.spec.MaxDuration.Duration, false
	}
	return nil, false
}

// tooLong reports whether c's validity exceeds its maximum.
func (r rules) tooLong(c certificate) bool {
	most, _ := r.maximum(c)
	return most != nil && c.notAfter.Sub(c.notBefore) > *most
}

// sanMismatch reports whether a DNS name of c does not match the allowed
// pattern or matches the disallowed one.
func (r rules) sanMismatch(c certificate) bool {
	for _, san := range c.sans {
		if (r.allowed != nil && !r.allowed.MatchString(san)) || (r.disallowed != nil && r.disallowed.MatchString(san)) {
			return true
		}
	}
	return false
}

func (r rules) compliant(c certificate, now time.Time) bool {
	return !r.expiring(c, now) && !r.tooLong(c) && !r.sanMismatch(c)
}

// evaluation is the outcome of one evaluation.
type evaluation struct {
	// status is the policy's new status.
	status policyv1.CertificatePolicyStatus
	// message is the compliance event's message (after "<State>; ").
	message string
	// next is when a certificate compliant now crosses its minimum
	// duration; zero when none will.
	next time.Time
}

// evaluate checks the certificates of each selected namespace (certs, by
// namespace; namespaces sorted) against r at now.
func evaluate(r rules, namespaces []string, certs map[string][]certificate, now time.Time) evaluation {
	out := evaluation{status: policyv1.CertificatePolicyStatus{
		ComplianceState: policyv1.Compliant, CompliancyDetails: map[string]policyv1.CertificateCompliancyDetails{},
	}}
	if len(namespaces) == 0 {
		out.status.CompliancyDetails[""] = policyv1.CertificateCompliancyDetails{Message: namespaceMessage(r, "", nil, now)}
		out.message = noNamespacesMessage
		return out
	}
	for _, ns := range namespaces {
		found := map[string]policyv1.CertificateDetails{}
		var bad []certificate
		for _, c := range certs[ns] {
			if !r.compliant(c, now) {
				found[c.name] = details(c, now)
				bad = append(bad, c)
				continue
			}
			least, _ := r.minimum(c)
			if due := c.notAfter.Add(-least); out.next.IsZero() || due.Before(out.next) {
				out.next = due
			}
		}
		d := policyv1.CertificateCompliancyDetails{NonCompliantCertificates: uint(len(found)), Message: namespaceMessage(r, ns, bad, now)}
		if len(found) > 0 {
			d.NonCompliantCertificatesList = found
			out.status.ComplianceState = policyv1.NonCompliant
		}
		out.status.CompliancyDetails[ns] = d
	}
	if out.status.ComplianceState == policyv1.NonCompliant {
		out.message = parentMessage(r, namespaces, certs, now)
	}
	return out
}

// details is the status entry of c, as OCM writes it.
func details(c certificate, now time.Time) policyv1.CertificateDetails {
	left := c.notAfter.Sub(now)
	return policyv1.CertificateDetails{
		Secret: c.secret, Expiration: left.String(), Expiry: left, CA: c.ca,
		Duration: c.notAfter.Sub(c.notBefore), Sans: slices.Clone(c.sans),
	}
}

func durationString(d *metav1.Duration) string {
	if d == nil {
		return ""
	}
	return d.Duration.String()
}
