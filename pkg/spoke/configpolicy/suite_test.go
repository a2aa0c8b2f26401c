package configpolicy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/internal/testenv"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// suite is a managed cluster's API server with this controller running,
// started by the first test that needs it (unit and fuzz tests run without
// it) and stopped by TestMain.
type suite struct {
	cp     *testenv.ControlPlane
	client client.Client
	stop   func() error
}

var (
	shared    *suite
	sharedErr error
	startOnce sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test environment: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// env returns the running suite. Set CANOPY_TEST_LOG=1 to see the
// controller's log.
func env(t *testing.T) *suite {
	t.Helper()
	startOnce.Do(func() { shared, sharedErr = startSuite() })
	if sharedErr != nil {
		t.Fatalf("starting the test environment: %v", sharedErr)
	}
	return shared
}

func startSuite() (*suite, error) {
	out := io.Discard
	if os.Getenv("CANOPY_TEST_LOG") != "" {
		out = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(out), zap.UseDevMode(true)))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := testenv.StartControlPlane(ctx, "managed")
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cp.Config, manager.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err == nil {
		recorder := compliance.NewRecorder(mgr.GetClient(), mgr.GetAPIReader(),
			compliance.EventSource{Component: "canopy-agent", Instance: "test"})
		err = (&Reconciler{ManagedClient: mgr.GetClient(), ManagedReader: mgr.GetAPIReader(), Recorder: recorder}).
			SetupWithManager(mgr)
	}
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	mgrCtx, stopMgr := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	stop := func() error {
		stopMgr()
		return errors.Join(<-done, cp.Stop())
	}
	return &suite{cp: cp, client: cp.Client, stop: stop}, nil
}

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
	s := env(t)
	f := &fixture{t: t, g: NewWithT(t), c: s.client, ns: testenv.Namespace(t, s.client)}
	f.parent = &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "parent"},
		Spec:       policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}},
	}
	f.g.Expect(f.c.Create(t.Context(), f.parent)).To(Succeed())
	return f
}

// policy creates the ConfigurationPolicy doc (YAML; $NS is the test's
// namespace), owned by the parent Policy.
func (f *fixture) policy(doc string) *policyv1.ConfigurationPolicy {
	f.t.Helper()
	p := &policyv1.ConfigurationPolicy{}
	f.g.Expect(yaml.UnmarshalStrict([]byte(strings.ReplaceAll(doc, "$NS", f.ns)), p)).To(Succeed())
	p.Namespace = f.ns
	p.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Name: f.parent.Name, UID: f.parent.UID,
	}}
	f.g.Expect(f.c.Create(f.t.Context(), p)).To(Succeed())
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
