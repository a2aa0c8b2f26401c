// Package evaluatortest holds the fixtures the suites of the agent's
// evaluators (configpolicy, operatorpolicy, certpolicy) share: the parent
// Policy of a test's templates, templates created from YAML and owned by
// it, and the compliance events recorded on it. Test-only: no production
// package imports it.
package evaluatortest

import (
	"context"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega" //nolint:revive,staticcheck // gomega's DSL reads best unqualified
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

// Recorder is the compliance recorder of a suite's manager, as the agent
// makes it.
func Recorder(mgr ctrl.Manager) *compliance.Recorder {
	return compliance.NewRecorder(mgr.GetClient(), mgr.GetAPIReader(),
		compliance.EventSource{Component: "canopy-agent", Instance: "test"})
}

// Parent creates the Policy "parent", with no templates of its own, in
// namespace ns: the owner of a test's templates, on which their compliance
// events are recorded.
func Parent(t testing.TB, c client.Client, ns string) *policyv1.Policy {
	t.Helper()
	parent := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "parent"},
		Spec:       policyv1.PolicySpec{PolicyTemplates: []policyv1.PolicyTemplate{}},
	}
	NewWithT(t).Expect(c.Create(t.Context(), parent)).To(Succeed())
	return parent
}

// Template decodes doc, strictly, into template and creates it in the
// namespace of parent, owned by parent.
func Template(t testing.TB, c client.Client, parent *policyv1.Policy, template client.Object, doc string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(yaml.UnmarshalStrict([]byte(doc), template)).To(Succeed())
	template.SetNamespace(parent.Namespace)
	template.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: policyv1.GroupVersion.String(), Kind: "Policy", Name: parent.Name, UID: parent.UID,
	}})
	g.Expect(c.Create(t.Context(), template)).To(Succeed())
}

// Events returns a function that lists the messages of the events on
// parent, oldest first. With parse, each must be a compliance event.
func Events(ctx context.Context, c client.Client, parent *policyv1.Policy, parse bool) func(Gomega) []string {
	return func(g Gomega) []string {
		list := &corev1.EventList{}
		g.Expect(c.List(ctx, list, client.InNamespace(parent.Namespace))).To(Succeed())
		slices.SortFunc(list.Items, func(a, b corev1.Event) int { return strings.Compare(a.Name, b.Name) })
		var msgs []string
		for _, ev := range list.Items {
			if ev.InvolvedObject.UID != parent.UID {
				continue
			}
			if parse {
				_, err := compliance.Parse(&ev)
				g.Expect(err).NotTo(HaveOccurred())
			}
			msgs = append(msgs, ev.Message)
		}
		return msgs
	}
}
