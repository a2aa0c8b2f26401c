package templatesync_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
	"github.com/canopy-policy/canopy/pkg/spoke"
	"github.com/canopy-policy/canopy/test/inproc"
)

func init() {
	// Set CANOPY_TEST_LOG=1 to see the agents' logs.
	w := io.Discard
	if os.Getenv("CANOPY_TEST_LOG") != "" {
		w = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(w)))
}

// ComplianceAnnotation tells the fake evaluator what to report.
const ComplianceAnnotation = inproc.ComplianceAnnotation

// cluster is one test's registered cluster and its agent.
type cluster struct {
	ns        string
	hub       client.Client // hub administrator
	managed   client.Client // managed administrator
	evaluator *inproc.FakeEvaluator
}

// newCluster registers a cluster named after the test on the hub and runs
// an agent for it with the fake ConfigurationPolicy evaluator.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	ev := &inproc.FakeEvaluator{}
	c := newClusterWith(t, ev.Setup)
	c.evaluator = ev
	return c
}

// newClusterWith registers a cluster named after the test on the hub and
// runs an agent for it with evaluators.
func newClusterWith(t *testing.T, evaluators func(ctrl.Manager, *compliance.Recorder) error) *cluster {
	t.Helper()
	g := NewWithT(t)
	name := fmt.Sprintf("c%s-%04x", strings.ToLower(shortName(t.Name())), rand.IntN(1<<16))
	env := suite.Get(t)
	hubCfg, err := env.RegisterCluster(t.Context(), name)
	g.Expect(err).NotTo(HaveOccurred())
	managed := env.Managed[0]
	running, err := inproc.RunAgent(context.Background(), managed.Config, spoke.Options{
		HubConfig: hubCfg, ClusterName: name, ClusterNamespaceOnly: true,
		Evaluators: evaluators,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(running.Stop()).To(Succeed()) })
	return &cluster{ns: name, hub: env.Hub.Client, managed: managed.Client}
}

func shortName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, strings.TrimPrefix(s, "Test"))
	if len(s) > 30 {
		s = s[:30]
	}
	return s
}

// tmpl is a policy template entry for tests.
type tmpl struct {
	kind, name    string
	apiVersion    string // "" = policy.open-cluster-management.io/v1 (v1 for a ConfigMap)
	compliance    string // the fake evaluator's verdict; "" = Compliant
	deps          []policyv1.PolicyDependency
	ignorePending bool
	spec          map[string]any // spec of the object; nil = a small valid ConfigurationPolicy spec
	annotations   map[string]any // annotations of the object
}

func cfgPolicy(name string, deps ...policyv1.PolicyDependency) tmpl {
	return tmpl{kind: "ConfigurationPolicy", name: name, deps: deps}
}

func dep(kind, name string, state policyv1.ComplianceState) policyv1.PolicyDependency {
	d := policyv1.PolicyDependency{Name: name, Compliance: state}
	d.Kind = kind
	return d
}

func (t tmpl) entry() policyv1.PolicyTemplate {
	kind, apiVersion := t.kind, policyv1.GroupVersion.String()
	if kind == "" {
		kind = "ConfigurationPolicy"
	}
	if kind == "ConfigMap" {
		apiVersion = "v1"
	}
	if t.apiVersion != "" {
		apiVersion = t.apiVersion
	}
	spec := t.spec
	if spec == nil {
		spec = map[string]any{"remediationAction": "inform", "object-templates": []any{}}
	}
	meta := map[string]any{"name": t.name}
	annotations := maps.Clone(t.annotations)
	if t.compliance != "" {
		annotations = map[string]any{ComplianceAnnotation: t.compliance}
		maps.Copy(annotations, t.annotations)
	}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta, "spec": spec}
	raw, _ := json.Marshal(obj)
	return policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: raw}, ExtraDependencies: t.deps, IgnorePending: t.ignorePending}
}

// replica builds the hub replica name in the cluster namespace, as the
// propagator would.
func (c *cluster) replica(name string, deps []policyv1.PolicyDependency, templates ...tmpl) *policyv1.Policy {
	p := &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{
		Namespace: c.ns, Name: name,
		Labels: map[string]string{
			policyv1.RootPolicyLabel:       "root." + name,
			policyv1.ClusterNameLabel:      c.ns,
			policyv1.ClusterNamespaceLabel: c.ns,
		},
	}}
	p.Spec.Dependencies = deps
	for _, t := range templates {
		p.Spec.PolicyTemplates = append(p.Spec.PolicyTemplates, t.entry())
	}
	return p
}

func (c *cluster) create(t *testing.T, p *policyv1.Policy) {
	t.Helper()
	NewWithT(t).Expect(c.hub.Create(t.Context(), p)).To(Succeed())
}

// setTemplates replaces the templates of the hub replica name.
func (c *cluster) setTemplates(t *testing.T, name string, templates ...tmpl) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		p := &policyv1.Policy{}
		g.Expect(c.hub.Get(t.Context(), client.ObjectKey{Namespace: c.ns, Name: name}, p)).To(Succeed())
		p.Spec.PolicyTemplates = nil
		for _, tm := range templates {
			p.Spec.PolicyTemplates = append(p.Spec.PolicyTemplates, tm.entry())
		}
		g.Expect(c.hub.Update(t.Context(), p)).To(Succeed())
	}).WithContext(t.Context()).Should(Succeed())
}

// hubStatus returns the hub replica's status.
func (c *cluster) hubStatus(ctx context.Context, name string) func(g Gomega) policyv1.PolicyStatus {
	return func(g Gomega) policyv1.PolicyStatus {
		p := &policyv1.Policy{}
		g.Expect(c.hub.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: name}, p)).To(Succeed())
		return p.Status
	}
}

// detail returns the status detail of template in s.
func detail(s policyv1.PolicyStatus, template string) policyv1.DetailsPerTemplate {
	for _, d := range s.Details {
		if d.TemplateMeta.Name == template {
			return d
		}
	}
	return policyv1.DetailsPerTemplate{}
}

// latest returns the newest history message of template in s.
func latest(s policyv1.PolicyStatus, template string) string {
	d := detail(s, template)
	if len(d.History) == 0 {
		return ""
	}
	return d.History[0].Message
}

// templateExists reports whether the ConfigurationPolicy name exists.
func (c *cluster) templateExists(ctx context.Context, name string) func() (bool, error) {
	return func() (bool, error) {
		err := c.managed.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: name}, &policyv1.ConfigurationPolicy{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
