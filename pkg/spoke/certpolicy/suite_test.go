package certpolicy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/evaluator/evaluatortest"
)

// suite is a managed cluster's API server with this controller running.
var suite = &controlplane.Suite{Name: "managed", Start: func(cp *controlplane.ControlPlane) (func() error, error) {
	return controlplane.StartManager(cp.Config, manager.Options{}, func(mgr ctrl.Manager) error {
		return (&Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: evaluatortest.Recorder(mgr),
			ResyncInterval: time.Second}).SetupWithManager(mgr)
	})
}}

func TestMain(m *testing.M) { suite.Main(m) }

const (
	eventually = 30 * time.Second
	poll       = 100 * time.Millisecond
)

// fixture is one test's namespace, parent Policy and helpers.
type fixture struct {
	t      *testing.T
	g      Gomega
	c      client.Client
	ns     string
	parent *policyv1.Policy
}

func newFixture(t *testing.T) *fixture {
	t.Parallel()
	c := suite.Get(t).Client
	f := &fixture{t: t, g: NewWithT(t), c: c, ns: controlplane.Namespace(t, c)}
	f.parent = evaluatortest.Parent(t, c, f.ns)
	return f
}

// policy creates the CertificatePolicy doc (YAML; $NS is the test's
// namespace), owned by the parent Policy.
func (f *fixture) policy(doc string) *policyv1.CertificatePolicy {
	f.t.Helper()
	p := &policyv1.CertificatePolicy{}
	evaluatortest.Template(f.t, f.c, f.parent, p, strings.ReplaceAll(doc, "$NS", f.ns))
	return p
}

// secret creates or replaces the TLS Secret name in namespace ns with a
// new certificate as c says, and returns its data.
func (f *fixture) secret(ns, name string, c testCert, labels map[string]string) map[string][]byte {
	f.t.Helper()
	certPEM, keyPEM := pemCert(f.t, c)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}}
	err := f.c.Get(f.t.Context(), client.ObjectKeyFromObject(s), &corev1.Secret{})
	if err == nil {
		f.g.Expect(f.c.Update(f.t.Context(), s)).To(Succeed())
	} else {
		f.g.Expect(f.c.Create(f.t.Context(), s)).To(Succeed())
	}
	return s.Data
}

// status returns a function that gets the status of CertificatePolicy name.
func (f *fixture) status(name string) func(Gomega) policyv1.CertificatePolicyStatus {
	return func(g Gomega) policyv1.CertificatePolicyStatus {
		p := &policyv1.CertificatePolicy{}
		g.Expect(f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, p)).To(Succeed())
		return p.Status
	}
}

// events returns a function that lists the compliance event messages on
// the parent Policy, oldest first.
func (f *fixture) events() func(Gomega) []string {
	return evaluatortest.Events(f.t.Context(), f.c, f.parent, true)
}

// expectNoLeak fails when the status of policy name or an event of the
// test's namespace holds any of the secret data given.
func (f *fixture) expectNoLeak(name string, data ...map[string][]byte) {
	f.t.Helper()
	st, err := json.Marshal(f.status(name)(f.g))
	f.g.Expect(err).NotTo(HaveOccurred())
	evs, err := json.Marshal(f.events()(f.g))
	f.g.Expect(err).NotTo(HaveOccurred())
	for _, d := range data {
		for k, v := range d {
			// Any line of the PEM body would be a leak; the armour is not.
			for _, line := range strings.Split(string(v), "\n") {
				if len(line) < 20 || strings.HasPrefix(line, "-----") {
					continue
				}
				f.g.Expect(string(st)).NotTo(ContainSubstring(line), "status holds %s", k)
				f.g.Expect(string(evs)).NotTo(ContainSubstring(line), "an event holds %s", k)
			}
		}
	}
}
