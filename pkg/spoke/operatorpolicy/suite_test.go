package operatorpolicy

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/olmsim"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/evaluator/evaluatortest"
	"github.com/canopy-policy/canopy/pkg/spoke/templatesync"
)

// sim is the suite's OLM simulator (OLM cannot run here; see olmsim).
var sim *olmsim.Simulator

// suite is a managed cluster's API server with OLM's CRDs, the OLM
// simulator and this controller running.
var suite = &controlplane.Suite{Name: "managed", Start: func(cp *controlplane.ControlPlane) (func() error, error) {
	if err := olmsim.Install(context.Background(), cp.Config, cp.Client); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	sim = &olmsim.Simulator{Client: cp.Client}
	done := make(chan struct{})
	go func() { defer close(done); sim.Run(ctx) }()
	stop, err := controlplane.StartManager(cp.Config, manager.Options{}, func(mgr ctrl.Manager) error {
		recorder := evaluatortest.Recorder(mgr)
		// templatesync creates OperatorPolicies from Policies, as on a
		// managed cluster (TestDeliveredByPolicy).
		ts := &templatesync.Reconciler{ManagedClient: mgr.GetClient(), Recorder: recorder}
		if err := ts.SetupWithManager(mgr); err != nil {
			return err
		}
		return (&Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: recorder,
			MaxHistoryLength: historyLength}).SetupWithManager(mgr)
	})
	if err != nil {
		cancel()
		<-done
		return nil, err
	}
	return func() error { cancel(); <-done; return stop() }, nil
}}

func TestMain(m *testing.M) { suite.Main(m) }

// historyLength is the suite's --operator-policy-status-history-length:
// not the default, to show that it bounds status.history.
const historyLength = 3

const (
	eventually = 60 * time.Second
	poll       = 100 * time.Millisecond
	// quiet is how long a test watches for something that must not happen.
	quiet = 3 * time.Second
)

// fixture is one test's namespace (where the operator is installed too),
// parent Policy, catalog package and helpers.
type fixture struct {
	t      *testing.T
	g      Gomega
	c      client.Client
	ns     string
	pkg    string
	parent *policyv1.Policy
}

// newFixture makes a namespace and a parent Policy, and adds the package
// pkg (channel stable, versions pkg.v1, ...) to a catalog of the
// namespace.
func newFixture(t *testing.T, pkg string, versions ...string) *fixture {
	return newFixtureWith(t, olmsim.Package{Name: pkg, Channels: map[string][]string{"stable": csvNames(pkg, versions...)}})
}

// newFixtureWith is newFixture for the package p, whose catalog is set to
// the namespace's and whose default channel is "stable" when p names
// none.
func newFixtureWith(t *testing.T, p olmsim.Package) *fixture {
	t.Parallel()
	c := suite.Get(t).Client
	f := &fixture{t: t, g: NewWithT(t), c: c, ns: controlplane.Namespace(t, c), pkg: p.Name}
	f.parent = evaluatortest.Parent(t, c, f.ns)
	f.addPackage(p)
	return f
}

// addPackage adds p to the catalog of the test's namespace.
func (f *fixture) addPackage(p olmsim.Package) {
	f.t.Helper()
	p.Catalog, p.CatalogNamespace, p.SuggestedNamespace = "catalog", f.ns, f.ns
	p.DefaultChannel = cmpOr(p.DefaultChannel, "stable")
	f.g.Expect(sim.AddPackage(f.t.Context(), p)).To(Succeed())
}

// csvNames are the CSV names of pkg's versions: pkg.v1, ...
func csvNames(pkg string, versions ...string) []string {
	csvs := make([]string, len(versions))
	for i, v := range versions {
		csvs[i] = pkg + "." + v
	}
	return csvs
}

// policy creates the OperatorPolicy doc (YAML; $NS is the test's
// namespace, $PKG the package), owned by the parent Policy.
func (f *fixture) policy(doc string) *policyv1beta1.OperatorPolicy {
	f.t.Helper()
	p := &policyv1beta1.OperatorPolicy{}
	evaluatortest.Template(f.t, f.c, f.parent, p, strings.NewReplacer("$NS", f.ns, "$PKG", f.pkg).Replace(doc))
	return p
}

// status returns a function that gets the status of OperatorPolicy name.
func (f *fixture) status(name string) func(Gomega) policyv1beta1.OperatorPolicyStatus {
	return func(g Gomega) policyv1beta1.OperatorPolicyStatus {
		p := &policyv1beta1.OperatorPolicy{}
		g.Expect(f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, p)).To(Succeed())
		return p.Status
	}
}

// message returns a function that gets the message of the Compliant
// condition of OperatorPolicy name.
func (f *fixture) message(name string) func(Gomega) string {
	return f.condition(name, CondCompliant)
}

// condition returns a function that gets the message of one condition.
func (f *fixture) condition(name, condType string) func(Gomega) string {
	return func(g Gomega) string {
		st := f.status(name)(g)
		c, _ := st.Condition(condType)
		return c.Message
	}
}

// events returns a function that lists the compliance event messages on
// the parent Policy, oldest first.
func (f *fixture) events() func(Gomega) []string {
	return evaluatortest.Events(f.t.Context(), f.c, f.parent, false)
}

// object returns a function that gets an OLM object of the test's
// namespace, nil when it does not exist.
func (f *fixture) object(gvk schema.GroupVersionKind, name string) func(Gomega) *unstructured.Unstructured {
	return func(g Gomega) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		err := f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, obj)
		if client.IgnoreNotFound(err) == nil && err != nil {
			return nil
		}
		g.Expect(err).NotTo(HaveOccurred())
		return obj
	}
}

// list returns a function that lists the names of the objects of gvk in
// the test's namespace.
func (f *fixture) list(gvk schema.GroupVersionKind) func(Gomega) []string {
	return func(g Gomega) []string {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		g.Expect(f.c.List(f.t.Context(), list, client.InNamespace(f.ns))).To(Succeed())
		var names []string
		for _, o := range list.Items {
			names = append(names, o.GetName())
		}
		return names
	}
}

// field reads a string field of obj, "" when obj is nil.
func field(obj *unstructured.Unstructured, path ...string) string {
	if obj == nil {
		return ""
	}
	s, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	v, _ := s.(string)
	return v
}

// musthave is an OperatorPolicy installing $PKG from the test's catalog;
// %s are the remediationAction, upgradeApproval and versions (a YAML list).
const musthave = `
metadata: {name: install}
spec:
  remediationAction: %s
  complianceType: musthave
  upgradeApproval: %s
  versions: %s
  subscription:
    namespace: $NS
    name: $PKG
    channel: stable
    source: catalog
    sourceNamespace: $NS
`
