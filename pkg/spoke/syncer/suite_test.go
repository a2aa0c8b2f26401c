package syncer

import (
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// suite is a managed cluster's API server with the syncer running.
var suite = &controlplane.Suite{Name: "managed", Start: func(cp *controlplane.ControlPlane) (func() error, error) {
	return startAgent(cp.Config)
}}

func TestMain(m *testing.M) { suite.Main(m) }

// startAgent runs the syncer, as the agent does, on the API server of cfg
// until stop is called.
func startAgent(cfg *rest.Config) (stop func() error, _ error) {
	return controlplane.StartManager(cfg, manager.Options{}, func(mgr ctrl.Manager) error {
		recorder := compliance.NewRecorder(mgr.GetClient(), mgr.GetAPIReader(),
			compliance.EventSource{Component: "canopy-agent", Instance: "test"})
		return (&Reconciler{ManagedClient: mgr.GetClient(), Recorder: recorder}).SetupWithManager(mgr)
	})
}

// fixture is one test's namespace (for its HierarchyPolicies and their
// parent Policy), a suffix that makes its cluster-wide names unique, and
// helpers.
type fixture struct {
	t      *testing.T
	g      Gomega
	c      client.Client
	ns     string
	sfx    string
	parent *policyv1.Policy
}

func newFixture(t *testing.T) *fixture {
	t.Parallel()
	return fixtureOn(t, suite.Get(t).Client)
}

// fixtureOn returns a fixture on the API server of c.
func fixtureOn(t *testing.T, c client.Client) *fixture {
	f := &fixture{t: t, g: NewWithT(t), c: c, ns: controlplane.Namespace(t, c), sfx: rand.String(5)}
	f.parent = &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "parent"},
		Spec:       policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}},
	}
	f.g.Expect(f.c.Create(t.Context(), f.parent)).To(Succeed())
	return f
}

// expand replaces $S with the test's suffix.
func (f *fixture) expand(doc string) string { return strings.ReplaceAll(doc, "$S", f.sfx) }

// policy creates the HierarchyPolicy doc (YAML; $S is the suffix), owned by
// the parent Policy.
func (f *fixture) policy(doc string) *hierarchyv1alpha1.HierarchyPolicy {
	f.t.Helper()
	p := &hierarchyv1alpha1.HierarchyPolicy{}
	f.g.Expect(yaml.UnmarshalStrict([]byte(f.expand(doc)), p)).To(Succeed())
	p.Namespace = f.ns
	p.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Name: f.parent.Name, UID: f.parent.UID,
	}}
	f.g.Expect(f.c.Create(f.t.Context(), p)).To(Succeed())
	return p
}

// updateSpec replaces the spec of HierarchyPolicy name with doc's.
func (f *fixture) updateSpec(name, doc string) {
	f.t.Helper()
	next := &hierarchyv1alpha1.HierarchyPolicy{}
	f.g.Expect(yaml.UnmarshalStrict([]byte(f.expand(doc)), next)).To(Succeed())
	p := &hierarchyv1alpha1.HierarchyPolicy{}
	f.g.Expect(f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, p)).To(Succeed())
	orig := p.DeepCopy()
	p.Spec = next.Spec
	f.g.Expect(f.c.Patch(f.t.Context(), p, client.MergeFrom(orig))).To(Succeed())
}

// object creates obj from doc (YAML; $S is the suffix).
func (f *fixture) object(obj client.Object, doc string) client.Object {
	f.t.Helper()
	f.g.Expect(yaml.UnmarshalStrict([]byte(f.expand(doc)), obj)).To(Succeed())
	f.g.Expect(f.c.Create(f.t.Context(), obj)).To(Succeed())
	return obj
}

// status returns a function that gets the status of HierarchyPolicy name.
func (f *fixture) status(name string) func(Gomega) hierarchyv1alpha1.HierarchyPolicyStatus {
	return func(g Gomega) hierarchyv1alpha1.HierarchyPolicyStatus {
		p := &hierarchyv1alpha1.HierarchyPolicy{}
		g.Expect(f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, p)).To(Succeed())
		return p.Status
	}
}

// relatedReasons returns a function that lists the relatedObjects of
// HierarchyPolicy name as "<kind> <name>: <reason>".
func (f *fixture) relatedReasons(name string) func(Gomega) []string {
	return func(g Gomega) []string {
		var reasons []string
		for _, rel := range f.status(name)(g).RelatedObjects {
			reasons = append(reasons, rel.Object.Kind+" "+rel.Object.Metadata.Name+": "+rel.Reason)
		}
		return reasons
	}
}

// evaluated returns a function that gets the compliance of HierarchyPolicy
// name once its current generation was evaluated, "" before.
func (f *fixture) evaluated(name string) func(Gomega) policyv1.ComplianceState {
	return func(g Gomega) policyv1.ComplianceState {
		p := &hierarchyv1alpha1.HierarchyPolicy{}
		g.Expect(f.c.Get(f.t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, p)).To(Succeed())
		if p.Status.LastEvaluatedGeneration != p.Generation {
			return ""
		}
		return p.Status.ComplianceState
	}
}

// events returns a function that lists the compliance event messages on
// the parent Policy, oldest first.
func (f *fixture) events() func(Gomega) []string {
	return func(g Gomega) []string {
		list := &corev1.EventList{}
		g.Expect(f.c.List(f.t.Context(), list, client.InNamespace(f.ns))).To(Succeed())
		slices.SortFunc(list.Items, func(a, b corev1.Event) int { return strings.Compare(a.Name, b.Name) })
		var msgs []string
		for _, ev := range list.Items {
			if ev.InvolvedObject.UID != f.parent.UID {
				continue
			}
			_, err := compliance.Parse(&ev)
			g.Expect(err).NotTo(HaveOccurred())
			msgs = append(msgs, ev.Message)
		}
		return msgs
	}
}

// exists returns a function that reports whether obj (with its namespace
// and name set; $S expanded) exists and is not being deleted, reading it
// into obj.
func (f *fixture) exists(obj client.Object) func(Gomega) bool {
	obj.SetName(f.expand(obj.GetName()))
	obj.SetNamespace(f.expand(obj.GetNamespace()))
	key := client.ObjectKeyFromObject(obj)
	return func(g Gomega) bool {
		err := f.c.Get(f.t.Context(), key, obj)
		if apierrors.IsNotFound(err) {
			return false
		}
		g.Expect(err).NotTo(HaveOccurred())
		return obj.GetDeletionTimestamp().IsZero()
	}
}

const (
	eventually = 30 * time.Second
	poll       = 100 * time.Millisecond
)

// strings_Replace replaces old, which must occur, in s.
func strings_Replace(s, old, replacement string) string { //nolint:revive // test helper
	if !strings.Contains(s, old) {
		panic("not found: " + old)
	}
	return strings.Replace(s, old, replacement, 1)
}

// dropLine removes the lines of doc containing substr ($S expanded by the
// caller's doc as is).
func dropLine(doc, substr string) string {
	var out []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
