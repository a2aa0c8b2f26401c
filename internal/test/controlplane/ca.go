package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The files of a control plane's client certificate authority, in its
// certificate directory: kube-apiserver trusts the certificate
// (--client-ca-file), and kube-controller-manager signs the client
// certificates that CertificateSigningRequests ask for with both (see
// ControlPlane.ClientCA).
const (
	clientCACertFile = "client-ca.crt"
	clientCAKeyFile  = "client-ca.key"
)

// clientCA is the client certificate authority of a control plane started
// by this package. It stands in for envtest's own, whose private key never
// leaves the test process: kube-controller-manager needs the key on disk to
// sign CertificateSigningRequests, as a real cluster's does.
type clientCA struct {
	mu      sync.Mutex
	dir     string
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	serial  int64
}

var _ envtest.Authn = &clientCA{}

// newClientCA returns a new certificate authority.
func newClientCA() (*clientCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "canopy-test-client-ca"}, key)
	if err != nil {
		return nil, fmt.Errorf("creating the client CA: %w", err)
	}
	return &clientCA{cert: cert, key: key, certPEM: pemCert(cert.Raw), serial: 1}, nil
}

// Configure makes kube-apiserver trust the CA's client certificates.
func (c *clientCA) Configure(dir string, args *envtest.Arguments) error {
	c.dir = dir
	args.Set("client-ca-file", filepath.Join(dir, clientCACertFile))
	return nil
}

// Start writes the CA's certificate and key into the certificate directory.
func (c *clientCA) Start() error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(c.key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.dir, clientCACertFile), c.certPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.dir, clientCAKeyFile), keyPEM, 0o600)
}

// Stop does nothing: the certificate directory is removed with the control
// plane's state.
func (c *clientCA) Stop() error { return nil }

// AddUser returns base with a client certificate for user, signed by the CA.
func (c *clientCA) AddUser(user envtest.User, base *rest.Config) (*rest.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.serial++
	serial := c.serial
	c.mu.Unlock()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: user.Name, Organization: user.Groups},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, key.Public(), c.key)
	if err != nil {
		return nil, fmt.Errorf("signing the client certificate of %s: %w", user.Name, err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(base)
	cfg.CertData, cfg.KeyData = pemCert(der), keyPEM
	return cfg, nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der})
}
