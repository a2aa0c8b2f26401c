package configpolicy

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/evaluator/evaluatortest"
)

// deniedFunction is the template function the suite's Reconciler denies,
// as cmd/spoke's --template-function-denylist would; no other test calls it.
const deniedFunction = "sha1sum"

// suite is a managed cluster's API server with this controller running.
var suite = &controlplane.Suite{Name: "managed", Start: func(cp *controlplane.ControlPlane) (func() error, error) {
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(slowLists.wrap)
	return controlplane.StartManager(cfg, manager.Options{}, func(mgr ctrl.Manager) error {
		return (&Reconciler{
			ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: evaluatortest.Recorder(mgr),
			TemplateFuncDenylist: []string{deniedFunction},
		}).SetupWithManager(mgr)
	})
}}

func TestMain(m *testing.M) { suite.Main(m) }

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

// policy creates the ConfigurationPolicy doc (YAML; $NS is the test's
// namespace), owned by the parent Policy.
func (f *fixture) policy(doc string) *policyv1.ConfigurationPolicy {
	f.t.Helper()
	p := &policyv1.ConfigurationPolicy{}
	evaluatortest.Template(f.t, f.c, f.parent, p, strings.ReplaceAll(doc, "$NS", f.ns))
	return p
}

// object creates the object doc (YAML; $NS is the test's namespace).
func (f *fixture) object(obj client.Object, doc string) client.Object {
	f.t.Helper()
	f.g.Expect(yaml.UnmarshalStrict([]byte(strings.ReplaceAll(doc, "$NS", f.ns)), obj)).To(Succeed())
	if obj.GetNamespace() == "" {
		obj.SetNamespace(f.ns)
	}
	f.g.Expect(f.c.Create(f.t.Context(), obj)).To(Succeed())
	return obj
}

// status returns a function that gets the status of ConfigurationPolicy name.
func (f *fixture) status(name string) func(Gomega) policyv1.ConfigurationPolicyStatus {
	return func(g Gomega) policyv1.ConfigurationPolicyStatus {
		p := &policyv1.ConfigurationPolicy{}
		g.Expect(f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, p)).To(Succeed())
		return p.Status
	}
}

// message returns a function that gets the compliance and the message of
// the first object template of ConfigurationPolicy name.
func (f *fixture) message(name string) func(Gomega) string {
	return func(g Gomega) string {
		st := f.status(name)(g)
		if len(st.CompliancyDetails) == 0 || len(st.CompliancyDetails[0].Conditions) == 0 {
			return string(st.ComplianceState)
		}
		return string(st.ComplianceState) + ": " + st.CompliancyDetails[0].Conditions[0].Message
	}
}

// events returns a function that lists the compliance event messages on
// the parent Policy, oldest first.
func (f *fixture) events() func(Gomega) []string {
	return evaluatortest.Events(f.t.Context(), f.c, f.parent, true)
}

// configMap returns a function that gets the data of a ConfigMap, nil if
// it does not exist.
func (f *fixture) configMap(ns, name string) func(Gomega) map[string]string {
	return func(g Gomega) map[string]string {
		cm := &corev1.ConfigMap{}
		err := f.c.Get(f.t.Context(), types.NamespacedName{Namespace: ns, Name: name}, cm)
		if client.IgnoreNotFound(err) == nil && err != nil {
			return nil
		}
		g.Expect(err).NotTo(HaveOccurred())
		if cm.Data == nil {
			return map[string]string{}
		}
		return cm.Data
	}
}

// patchConfigMap sets the data of a ConfigMap.
func (f *fixture) patchConfigMap(name string, data map[string]string) {
	f.t.Helper()
	cm := &corev1.ConfigMap{}
	f.g.Expect(f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, cm)).To(Succeed())
	orig := cm.DeepCopy()
	cm.Data = data
	f.g.Expect(f.c.Patch(f.t.Context(), cm, client.MergeFrom(orig))).To(Succeed())
}

// updateSpec changes the spec of ConfigurationPolicy name.
func (f *fixture) updateSpec(name string, change func(*policyv1.ConfigurationPolicySpec)) {
	f.t.Helper()
	p := &policyv1.ConfigurationPolicy{}
	f.g.Expect(f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, p)).To(Succeed())
	orig := p.DeepCopy()
	change(&p.Spec)
	f.g.Expect(f.c.Patch(f.t.Context(), p, client.MergeFrom(orig))).To(Succeed())
}

const (
	eventually = 30 * time.Second
	poll       = 100 * time.Millisecond
	// quiet is how long a test watches for something that must not happen.
	quiet = 3 * time.Second
)
