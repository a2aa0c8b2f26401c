package propagator_test

import (
	"encoding/base64"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// TestHubTemplatesLookupOfSecret reads a Secret with a hub lookup: a value
// that would reach the replica in clear text fails the template, with an
// error that says how to encrypt it, and is nowhere on the hub; piped into
// protect, it is encrypted with the cluster's key.
func TestHubTemplatesLookupOfSecret(t *testing.T) {
	ns := newNamespace(t)
	const password = "lookup-horse-battery-staple"
	encoded := base64.StdEncoding.EncodeToString([]byte(password))
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Data: map[string][]byte{"password": []byte(password)}})
	placeOn(t, ns, "pl", "cluster-a")
	create(t,
		templatePolicy(ns, "clear", map[string]string{
			"password": `{{hub (lookup "v1" "Secret" "" "creds").data.password hub}}`,
		}),
		templatePolicy(ns, "decoded", map[string]string{
			"password": `{{hub (lookup "v1" "Secret" "" "creds").data.password | base64dec hub}}`,
		}),
		templatePolicy(ns, "mixed", map[string]string{
			"encrypted": `{{hub fromSecret "" "creds" "password" hub}}`,
			"clear":     `{{hub (lookup "v1" "Secret" "" "creds").data.password hub}}`,
		}),
		templatePolicy(ns, "protected", map[string]string{
			"password": `{{hub (lookup "v1" "Secret" "" "creds").data.password | base64dec | protect hub}}`,
		}),
		newBinding(ns, "pb", "pl", policySubject("clear"), policySubject("decoded"), policySubject("mixed"), policySubject("protected")))

	g := NewWithT(t)
	for _, name := range []string{"clear", "decoded", "mixed"} {
		expectCondition(t, ns, name, propagator.ReasonHubTemplateError, "cluster-a: ", "in clear text", "protect")
		tmpl := replicaTemplate(g, "cluster-a", ns, name)
		g.Expect(tmpl.annotations).To(HaveKeyWithValue(templating.HubTemplatesErrorAnnotation, ContainSubstring("in clear text")), name)
		g.Expect(tmpl.data).To(HaveKeyWithValue(Not(BeEmpty()), ContainSubstring("{{hub ")), "%s: left as the root wrote it", name)
		expectEvent(t, ns, name, "Failed to resolve templates for cluster cluster-a: ")
		expectNowhere(t, ns, name, password, encoded)
	}

	expectCondition(t, ns, "protected", propagator.ReasonPropagated)
	g.Expect(replicaTemplate(g, "cluster-a", ns, "protected").data).To(HaveKeyWithValue("password", HavePrefix("$ocm_encrypted:")))
	expectNowhere(t, ns, "protected", password, encoded)
}
