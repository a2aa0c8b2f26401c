package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// template is a policy template of kind and name with extra dependencies.
func template(kind, name string, extra ...policyv1.PolicyDependency) policyv1.PolicyTemplate {
	raw := fmt.Sprintf(`{"apiVersion":"policy.open-cluster-management.io/v1","kind":%q,"metadata":{"name":%q}}`, kind, name)
	return policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: []byte(raw)}, ExtraDependencies: extra}
}

// replicaOf is root's replica on cluster with the given template details.
func replicaOf(root *policyv1.Policy, cluster string, state policyv1.ComplianceState, details ...policyv1.DetailsPerTemplate) policyv1.Policy {
	r := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: root.Namespace + "." + root.Name,
		Labels: map[string]string{
			policyv1.RootPolicyLabel:  root.Namespace + "." + root.Name,
			policyv1.ClusterNameLabel: cluster,
		}}}
	r.Spec = *root.Spec.DeepCopy()
	r.Status.ComplianceState = state
	r.Status.Details = details
	return r
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// details is a template's status with messages, newest first.
func details(name string, messages ...string) policyv1.DetailsPerTemplate {
	d := policyv1.DetailsPerTemplate{TemplateMeta: metav1.ObjectMeta{Name: name}}
	for i, m := range messages {
		d.History = append(d.History, policyv1.ComplianceHistory{
			LastTimestamp: metav1.NewTime(t0.Add(-time.Duration(i) * time.Minute)), Message: m, EventName: fmt.Sprintf("%s.%d", name, i)})
	}
	if len(messages) > 0 {
		d.ComplianceState = policyv1.ComplianceState(strings.SplitN(messages[0], ";", 2)[0])
	}
	return d
}

func TestExplain(t *testing.T) {
	g := NewWithT(t)
	app := root("policies", "app", policyv1.Pending, "cluster1", "Pending", "cluster2", "NonCompliant", "cluster3", "")
	app.Spec.PolicyTemplates = []policyv1.PolicyTemplate{template("ConfigurationPolicy", "app-config"), template("ConfigurationPolicy", "app-extra")}
	other := root("policies", "other", "")
	replicas := []policyv1.Policy{
		replicaOf(&app, "cluster1", policyv1.Pending,
			details("app-config", "Pending; Dependencies were not satisfied: 1 is still pending (Policy ops.operator); Policy ops.operator: want Compliant got NonCompliant",
				"Compliant; all good"),
			details("app-extra")),
		replicaOf(&app, "cluster2", policyv1.NonCompliant,
			details("app-config", "NonCompliant; dependency cycle: Policy policies.app -> Policy policies.other -> Policy policies.app"),
			details("gone", "Compliant; left over")),
		replicaOf(&other, "cluster1", policyv1.Compliant, details("x", "Compliant; other policy")),
	}
	e := Explain(&app, replicas, ExplainOptions{History: 1})
	g.Expect(e.Policy).To(Equal(PolicyRef{Namespace: "policies", Name: "app"}))
	g.Expect(e.Clusters).To(HaveLen(3))

	c1 := e.Clusters[0]
	g.Expect(c1.Cluster).To(Equal("cluster1"))
	g.Expect(c1.Templates).To(HaveLen(2))
	g.Expect(c1.Templates[0].Kind).To(Equal("ConfigurationPolicy"))
	g.Expect(c1.Templates[0].Unmet).To(Equal([]UnmetDependency{{
		ObjectRef: ObjectRef{Kind: "Policy", Name: "ops.operator", Policy: &PolicyRef{Namespace: "ops", Name: "operator"}},
		Reason:    "want Compliant got NonCompliant", Want: policyv1.Compliant, Got: policyv1.NonCompliant,
	}}))
	g.Expect(c1.Templates[0].History).To(HaveLen(1), "--history 1")
	g.Expect(c1.Templates[0].History[0].State).To(Equal(policyv1.Pending))
	g.Expect(c1.Templates[1].Compliant).To(BeEmpty(), "not reported yet")

	c2 := e.Clusters[1]
	g.Expect(c2.Templates).To(HaveLen(3), "the spec's templates, then one only the status names")
	g.Expect(c2.Templates[0].Cycle).To(HaveLen(3))
	g.Expect(c2.Templates[2].Name).To(Equal("gone"))
	g.Expect(c2.Templates[2].Kind).To(BeEmpty())

	c3 := e.Clusters[2]
	g.Expect(c3.NoReplica).To(BeTrue())
	g.Expect(c3.Templates).To(HaveLen(2))

	only := Explain(&app, replicas, ExplainOptions{Cluster: "cluster2"})
	g.Expect(only.Clusters).To(HaveLen(1))
	g.Expect(only.Clusters[0].Templates[0].History).To(BeEmpty(), "no history asked for")
}

func TestRenderExplanation(t *testing.T) {
	g := NewWithT(t)
	app := root("policies", "app", policyv1.Pending, "cluster1", "Pending", "cluster2", "NonCompliant")
	app.Spec.PolicyTemplates = []policyv1.PolicyTemplate{template("ConfigurationPolicy", "app-config")}
	e := Explain(&app, []policyv1.Policy{
		replicaOf(&app, "cluster1", policyv1.Pending, details("app-config",
			"Pending; Dependencies were not satisfied: 1 is still pending (Policy ops.operator); Policy ops.operator: not found")),
		replicaOf(&app, "cluster2", policyv1.NonCompliant, details("app-config",
			"NonCompliant; dependency cycle: Policy policies.app -> Policy ops.b -> Policy policies.app", "Compliant; fine")),
	}, ExplainOptions{History: 2})
	var out bytes.Buffer
	g.Expect(RenderExplanation(&out, e, RenderOptions{})).To(Succeed())
	g.Expect(out.String()).To(Equal(`Policy policies/app: Pending

Cluster cluster1: Pending
  ConfigurationPolicy app-config: Pending
    waiting for:
      - Policy ops/operator: not found
    history:
      2026-01-02T03:04:05Z  Pending       Dependencies were not satisfied: 1 is still pending (Policy ops.operator); Policy ops.operator: not found

Cluster cluster2: NonCompliant
  ConfigurationPolicy app-config: NonCompliant
    dependency cycle: Policy policies/app -> Policy ops/b -> Policy policies/app
    history:
      2026-01-02T03:04:05Z  NonCompliant  dependency cycle: Policy policies.app -> Policy ops.b -> Policy policies.app
      2026-01-02T03:03:05Z  Compliant     fine
`))
}

func TestRenderExplanationEdgeCases(t *testing.T) {
	tests := []struct {
		name     string
		root     policyv1.Policy
		replicas func(root *policyv1.Policy) []policyv1.Policy
		want     string
	}{{
		name:     "placed nowhere",
		root:     root("p", "idle", ""),
		replicas: func(*policyv1.Policy) []policyv1.Policy { return nil },
		want:     "Policy p/idle: -\n  placed on no cluster\n",
	}, {
		name: "placed nowhere, and the hub says why",
		root: func() policyv1.Policy {
			r := root("p", "idle", "")
			r.Status.Conditions = []metav1.Condition{{Type: policyv1.ConditionPropagated, Status: metav1.ConditionFalse,
				Reason: "NoDecisions", Message: "Placement p/pl has no decisions: ManagedClusterSet default is not bound to namespace p"}}
			return r
		}(),
		replicas: func(*policyv1.Policy) []policyv1.Policy { return nil },
		want: "Policy p/idle: -\n  placed on no cluster\n" +
			"  placement: Placement p/pl has no decisions: ManagedClusterSet default is not bound to namespace p\n",
	}, {
		name: "ignorePending, not reported, no replica",
		root: root("p", "a", policyv1.Compliant, "c1", "Compliant", "c2", ""),
		replicas: func(r *policyv1.Policy) []policyv1.Policy {
			return []policyv1.Policy{replicaOf(r, "c1", policyv1.Compliant, details("t",
				"Compliant; Dependencies were not satisfied: 1 is still pending (Policy p.b) but ignorePending is true; Policy p.b: not found"))}
		},
		want: `Policy p/a: Compliant

Cluster c1: Compliant
  ConfigurationPolicy t: Compliant
    waiting for (reported Compliant: ignorePending):
      - Policy p/b: not found

Cluster c2: - (no replica in the cluster namespace yet)
  ConfigurationPolicy t: -
    no compliance reported yet
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := tt.root
			r.Spec.PolicyTemplates = []policyv1.PolicyTemplate{template("ConfigurationPolicy", "t")}
			var out bytes.Buffer
			g.Expect(RenderExplanation(&out, Explain(&r, tt.replicas(&r), ExplainOptions{}), RenderOptions{})).To(Succeed())
			g.Expect(out.String()).To(Equal(tt.want))
		})
	}
}
