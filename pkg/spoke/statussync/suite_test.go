package statussync

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/spoke/internal/clusterns"
)

// suite is one hub and one managed API server. The local controller's tests
// use the managed one alone, each in its own namespace with its own
// controller restricted to it (as the agent runs it with
// ClusterNamespaceOnly), so that tests running in parallel never write each
// other's Policies. The hub controller's tests each register a cluster and
// run the controller as the agent's hub connection does.
var suite = &testenv.Suite{Options: testenv.Options{ManagedClusters: []string{"managed"}}}

func TestMain(m *testing.M) {
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	SetDefaultConsistentlyPollingInterval(100 * time.Millisecond)
	suite.Main(m)
}

// source is who the tests' compliance events claim to come from.
var source = compliance.EventSource{Component: "canopy-agent", Instance: "test"}

// run starts a manager on cfg with what setup registers; it stops when the
// returned func is called or when the test ends, whichever comes first.
func run(t *testing.T, cfg *rest.Config, opts manager.Options, setup func(ctrl.Manager) error) (stop func()) {
	t.Helper()
	stopManager, err := controlplane.StartManager(cfg, opts, setup)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	once := sync.OnceValue(stopManager)
	t.Cleanup(func() {
		if err := once(); err != nil {
			t.Errorf("stopping a manager: %v", err)
		}
	})
	return func() { NewWithT(t).Expect(once()).To(Succeed()) }
}

// startLocal runs a managed cluster's manager until the test ends, with the
// local status controller restricted to namespace ("": every namespace)
// unless withController is false; it returns the manager, whose cache the
// hub controller watches too.
func startLocal(t *testing.T, namespace string, withController bool) ctrl.Manager {
	t.Helper()
	var mgr ctrl.Manager
	run(t, suite.Get(t).Managed[0].Config, manager.Options{}, func(m ctrl.Manager) error {
		mgr = m
		if !withController {
			return nil
		}
		return (&Reconciler{ManagedClient: m.GetClient(), Namespace: namespace}).SetupWithManager(m)
	})
	return mgr
}

// newPolicy returns Policy ns/name whose templates are ConfigurationPolicies
// named templates, in that order.
func newPolicy(ns, name string, templates ...string) *policyv1.Policy {
	p := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1.PolicySpec{RemediationAction: policyv1.Inform, PolicyTemplates: []policyv1.PolicyTemplate{}},
	}
	for _, name := range templates {
		raw := fmt.Sprintf(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":"ConfigurationPolicy",`+
			`"metadata":{"name":%q},"spec":{"remediationAction":"inform","object-templates":[]}}`, name)
		p.Spec.PolicyTemplates = append(p.Spec.PolicyTemplates, policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: []byte(raw)}})
	}
	return p
}

// create creates obj with c.
func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	NewWithT(t).Expect(c.Create(t.Context(), obj)).To(Succeed())
}

// record creates, with c, the compliance event of template of Policy p at
// at, as pkg/compliance's Recorder writes it for templatesync (naming the
// template without a UID: it counts whether an object exists or not), and
// returns it as the API server stored it.
func record(t *testing.T, c client.Client, p *policyv1.Policy, template string, state policyv1.ComplianceState, msg string, at time.Time) *corev1.Event {
	t.Helper()
	return recordAbout(t, c, p, template, compliance.TemplateRef(configurationPolicy, p.Namespace, template), state, msg, at)
}

// configurationPolicy is the kind of the tests' templates.
var configurationPolicy = policyv1.GroupVersion.WithKind("ConfigurationPolicy")

// recordAbout creates, with c, the compliance event of template of Policy p
// at at, with the related object related (nil: none), and returns it as
// the API server stored it.
func recordAbout(t *testing.T, c client.Client, p *policyv1.Policy, template string, related *corev1.ObjectReference,
	state policyv1.ComplianceState, msg string, at time.Time,
) *corev1.Event {
	t.Helper()
	ev := compliance.NewEvent(compliance.ParentFromPolicy(p), compliance.Compliance{
		Template: types.NamespacedName{Namespace: p.Namespace, Name: template}, State: state, Message: msg,
	}, source, related, false, at)
	create(t, c, ev)
	return ev
}

// entry returns ev as a history entry.
func entry(ev *corev1.Event) policyv1.ComplianceHistory {
	return policyv1.ComplianceHistory{LastTimestamp: ev.LastTimestamp, Message: ev.Message, EventName: ev.Name}
}

// detail returns the details of template, in state, with the entries of
// events (newest first).
func detail(template string, state policyv1.ComplianceState, events ...*corev1.Event) policyv1.DetailsPerTemplate {
	d := policyv1.DetailsPerTemplate{TemplateMeta: metav1.ObjectMeta{Name: template}, ComplianceState: state}
	for _, ev := range events {
		d.History = append(d.History, entry(ev))
	}
	return d
}

// status returns a function that reads the status of the Policy of obj's
// namespace and name with c (empty when there is none).
func status(t *testing.T, c client.Client, obj client.Object) func(Gomega) policyv1.PolicyStatus {
	key := client.ObjectKeyFromObject(obj)
	return func(g Gomega) policyv1.PolicyStatus {
		p := &policyv1.Policy{}
		g.Expect(client.IgnoreNotFound(c.Get(t.Context(), key, p))).To(Succeed())
		return p.Status
	}
}

// at returns the test's time s seconds in: a fixed past time, so that the
// events' order is the tests' and not the clock's.
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// cluster is one hub controller test's registered cluster: a cluster
// namespace on the hub, the agent's hub identity, and the namespace of the
// same name on the managed cluster.
type cluster struct {
	ns        string
	hub       client.Client // hub administrator
	managed   client.Client // managed administrator
	hubConfig *rest.Config  // the agent's hub identity
}

// newCluster registers a cluster named after the test on the hub and
// creates its namespace on the managed cluster.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	short := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, strings.ToLower(strings.TrimPrefix(t.Name(), "Test")))
	name := fmt.Sprintf("ss-%s-%04x", short[:min(len(short), 30)], rand.IntN(1<<16))
	env := suite.Get(t)
	hubConfig, err := env.RegisterCluster(t.Context(), name)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	c := &cluster{ns: name, hub: env.Hub.Client, managed: env.Managed[0].Client, hubConfig: hubConfig}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	create(t, c.managed, ns)
	t.Cleanup(func() { _ = c.managed.Delete(context.Background(), ns) })
	return c
}

// replica returns the replica of root policy default/name in c's cluster
// namespace, as the propagator writes it, with templates.
func (c *cluster) replica(name string, templates ...string) *policyv1.Policy {
	p := newPolicy(c.ns, "default."+name, templates...)
	p.Labels = map[string]string{
		policyv1.RootPolicyLabel:       "default." + name,
		policyv1.ClusterNameLabel:      c.ns,
		policyv1.ClusterNamespaceLabel: c.ns,
	}
	return p
}

// startHub runs the hub status controller for c as the agent's hub
// connection does: in a manager connected with the agent's hub identity,
// its cache restricted to the cluster namespace, watching the local
// Policies in managed's cache too. wrap, when not nil, wraps its hub
// client. It stops when the returned func is called or the test ends.
func (c *cluster) startHub(t *testing.T, managed ctrl.Manager, wrap func(client.Client) client.Client) (stop func()) {
	t.Helper()
	opts := manager.Options{}
	opts.Cache.DefaultNamespaces = map[string]cache.Config{c.ns: {}}
	return run(t, c.hubConfig, opts, func(mgr ctrl.Manager) error {
		hub := mgr.GetClient()
		if wrap != nil {
			hub = wrap(hub)
		}
		r := &HubReconciler{Clients: clusterns.Clients{HubClient: hub, ManagedClient: managed.GetClient(), ClusterNamespace: c.ns}}
		return r.SetupWithManager(mgr, managed.GetCache())
	})
}

// reconciler returns a hub status controller for c that reads and writes
// through the API servers, without caches, for tests that call Reconcile
// themselves; wrap, when not nil, wraps its hub client.
func (c *cluster) reconciler(t *testing.T, wrap func(client.Client) client.Client) *HubReconciler {
	t.Helper()
	hub, err := client.New(c.hubConfig, client.Options{Scheme: controlplane.Scheme()})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	if wrap != nil {
		hub = wrap(hub)
	}
	return &HubReconciler{Clients: clusterns.Clients{HubClient: hub, ManagedClient: c.managed, ClusterNamespace: c.ns}}
}
