package propagator_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/hub/propagator"
	"github.com/canopy-policy/canopy/pkg/hubtemplates"
	"github.com/canopy-policy/canopy/pkg/templating"
)

func TestHubTemplatesResolvePerCluster(t *testing.T) {
	ns := newNamespace(t)
	create(t, configMap(ns, "values", map[string]string{"cluster-a-region": "eu-west-1", "cluster-b-region": "us-east-2", "shared": "x"}))
	root := templatePolicy(ns, "settings", map[string]string{
		"cluster":  `{{hub .ManagedClusterName hub}}`,
		"region":   `{{hub fromConfigMap "" "values" (printf "%s-region" .ManagedClusterName) hub}}`,
		"name":     `{{hub index .ManagedClusterLabels "name" | upper hub}}`,
		"policy":   `{{hub .PolicyMetadata.namespace hub}}/{{hub .PolicyMetadata.name hub}}`,
		"team":     `{{hub .PolicyMetadata.labels.team hub}}`,
		"lookedUp": `{{hub (lookup "v1" "ConfigMap" "" "values").data.shared hub}}`,
	})
	root.Labels = map[string]string{"team": "platform"}
	disabled := templatePolicy(ns, "disabled", map[string]string{"cluster": `{{hub .ManagedClusterName hub}}`})
	disabled.Annotations = map[string]string{templating.DisableTemplatesAnnotation: "true"}
	placeOn(t, ns, "pl", "cluster-a", "cluster-b")
	create(t, root, disabled, newBinding(ns, "pb", "pl", policySubject("settings"), policySubject("disabled")))

	NewWithT(t).Eventually(func(g Gomega) {
		for cluster, region := range map[string]string{"cluster-a": "eu-west-1", "cluster-b": "us-east-2"} {
			g.Expect(replicaTemplate(g, cluster, ns, "settings").data).To(Equal(map[string]string{
				"cluster": cluster, "region": region, "name": strings.ToUpper(cluster),
				"policy": ns + "/settings", "team": "platform", "lookedUp": "x",
			}), cluster)
			g.Expect(replicaTemplate(g, cluster, ns, "disabled").data).To(HaveKeyWithValue("cluster", `{{hub .ManagedClusterName hub}}`))
		}
	}).Should(Succeed())
	expectCondition(t, ns, "settings", propagator.ReasonPropagated)
}

// TestHubTemplatesChangeReResolvesOnlyReaders changes the ConfigMap one
// cluster's replica reads: that replica alone is resolved again and
// written; the replicas of the other clusters and of another root that
// reads other objects are neither resolved nor written.
func TestHubTemplatesChangeReResolvesOnlyReaders(t *testing.T) {
	ns := newNamespace(t)
	for _, c := range clusters {
		create(t, configMap(ns, "values-"+c, map[string]string{"region": "r-" + c}))
	}
	create(t, configMap(ns, "other", map[string]string{"k": "v"}))
	placeOn(t, ns, "all", clusters...)
	create(t,
		templatePolicy(ns, "reader", map[string]string{"region": `{{hub fromConfigMap "" (printf "values-%s" .ManagedClusterName) "region" hub}}`}),
		templatePolicy(ns, "bystander", map[string]string{"k": `{{hub fromConfigMap "" "other" "k" hub}}`}),
		newBinding(ns, "pb", "all", policySubject("reader"), policySubject("bystander")))
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		for _, c := range clusters {
			g.Expect(replicaTemplate(g, c, ns, "reader").data).To(HaveKeyWithValue("region", "r-"+c))
			g.Expect(replicaTemplate(g, c, ns, "bystander").data).To(HaveKeyWithValue("k", "v"))
		}
	}).Should(Succeed())
	expectCondition(t, ns, "reader", propagator.ReasonPropagated)
	expectCondition(t, ns, "bystander", propagator.ReasonPropagated)
	readerBefore, bystanderBefore := resolutions(ns, "reader"), resolutions(ns, "bystander")
	mark := runningHub.writes.Mark()

	cm := configMap(ns, "values-cluster-b", nil)
	update(t, cm, func(cm *corev1.ConfigMap) { cm.Data["region"] = "changed" })

	g.Eventually(func(g Gomega) {
		g.Expect(replicaTemplate(g, "cluster-b", ns, "reader").data).To(HaveKeyWithValue("region", "changed"))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(resolutions(ns, "reader")-readerBefore).To(Equal(1.0), "resolutions of reader")
		g.Expect(resolutions(ns, "bystander")-bystanderBefore).To(BeZero(), "resolutions of bystander")
	}, "2s").Should(Succeed())
	g.Expect(runningHub.writes.Matching(mark, "/policies/")).To(ConsistOf(
		"PATCH /apis/policy.open-cluster-management.io/v1/namespaces/cluster-b/policies/" + ns + ".reader"))
	g.Expect(runningHub.writes.Matching(mark, ns)).To(HaveLen(1), "no other write about this test's objects")
}

func TestHubTemplatesForbiddenLookup(t *testing.T) {
	ns := newNamespace(t)
	other := newNamespace(t)
	const hidden = "value-from-another-namespace"
	create(t, configMap(other, "elsewhere", map[string]string{"k": hidden}))
	root := templatePolicy(ns, "refused", map[string]string{
		"k":     `{{hub fromConfigMap "` + other + `" "elsewhere" "k" hub}}`,
		"other": `{{hub (lookup "cluster.open-cluster-management.io/v1" "ManagedCluster" "" "cluster-c").metadata.name hub}}`,
	})
	placeOn(t, ns, "pl", "cluster-a", "cluster-b")
	create(t, root, newBinding(ns, "pb", "pl", policySubject("refused")))

	expectCondition(t, ns, "refused", propagator.ReasonHubTemplateError,
		"Hub templates failed to resolve for 2 of 2 selected managed clusters",
		"clusters cluster-a, cluster-b: ", "the namespace argument is restricted to "+ns)
	g := NewWithT(t)
	for _, c := range []string{"cluster-a", "cluster-b"} {
		tmpl := replicaTemplate(g, c, ns, "refused")
		g.Expect(tmpl.annotations).To(HaveKeyWithValue(templating.HubTemplatesErrorAnnotation,
			ContainSubstring("the namespace argument is restricted to "+ns)))
		g.Expect(tmpl.data).To(HaveKeyWithValue("k", ContainSubstring("{{hub fromConfigMap")), "left as the root wrote it")
	}
	expectEvent(t, ns, "refused", "Failed to resolve templates for cluster cluster-a: ")
	expectEvent(t, ns, "refused", "Failed to resolve templates for cluster cluster-b: ")
	expectNowhere(t, ns, "refused", hidden)

	t.Run("the cluster's own ManagedCluster only", func(t *testing.T) {
		update(t, root, func(p *policyv1.Policy) {
			p.Spec.PolicyTemplates[0] = templatePolicy(ns, "refused", map[string]string{
				"own": `{{hub (lookup "cluster.open-cluster-management.io/v1" "ManagedCluster" "" .ManagedClusterName).metadata.name hub}}`,
			}).Spec.PolicyTemplates[0]
		})
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(replicaTemplate(g, "cluster-a", ns, "refused").data).To(HaveKeyWithValue("own", "cluster-a"))
			g.Expect(replicaTemplate(g, "cluster-a", ns, "refused").annotations).NotTo(HaveKey(templating.HubTemplatesErrorAnnotation))
		}).Should(Succeed())
		expectCondition(t, ns, "refused", propagator.ReasonPropagated)
	})
}

func TestHubTemplatesMissingObjectResolvesWhenCreated(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl", "cluster-a")
	create(t, templatePolicy(ns, "waits", map[string]string{"k": `{{hub fromConfigMap "" "later" "k" hub}}`}),
		newBinding(ns, "pb", "pl", policySubject("waits")))
	expectCondition(t, ns, "waits", propagator.ReasonHubTemplateError, `"later" not found`)
	failures := map[string]string{"namespace": ns, "policy": "waits"}
	NewWithT(t).Eventually(func() float64 { return metricValue("canopy_hub_template_failures", failures) }).Should(Equal(1.0))

	create(t, configMap(ns, "later", map[string]string{"k": "here"}))
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(replicaTemplate(g, "cluster-a", ns, "waits").data).To(HaveKeyWithValue("k", "here"))
	}).Should(Succeed())
	expectCondition(t, ns, "waits", propagator.ReasonPropagated)
	NewWithT(t).Eventually(func() float64 { return metricValue("canopy_hub_template_failures", failures) }).Should(BeZero())
}

func TestHubTemplatesServiceAccount(t *testing.T) {
	ns := newNamespace(t)
	readable, unreadable := newNamespace(t), newNamespace(t)
	create(t, configMap(readable, "cm", map[string]string{"k": "lent"}), configMap(unreadable, "cm", map[string]string{"k": "kept-out-of-reach"}),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}})
	grantRead(t, readable, ns, "reader")
	withSA := func(name, sa, from string) *policyv1.Policy {
		p := templatePolicy(ns, name, map[string]string{"k": `{{hub fromConfigMap "` + from + `" "cm" "k" hub}}`})
		p.Spec.HubTemplateOptions = &policyv1.HubTemplateOptions{ServiceAccountName: sa}
		return p
	}
	placeOn(t, ns, "pl", "cluster-a")
	create(t, withSA("allowed", "reader", readable), withSA("denied", "reader", unreadable), withSA("absent", "later", readable),
		newBinding(ns, "pb", "pl", policySubject("allowed"), policySubject("denied"), policySubject("absent")))

	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(replicaTemplate(g, "cluster-a", ns, "allowed").data).To(HaveKeyWithValue("k", "lent"))
	}).Should(Succeed())
	expectCondition(t, ns, "denied", propagator.ReasonHubTemplateError, "forbidden")
	expectNowhere(t, ns, "denied", "kept-out-of-reach")
	expectCondition(t, ns, "absent", propagator.ReasonHubTemplateError,
		"the service account in hubTemplateOptions.serviceAccountName ("+ns+"/later) does not exist")
	g.Expect(replicaTemplate(g, "cluster-a", ns, "absent").annotations).To(HaveKeyWithValue(templating.HubTemplatesErrorAnnotation,
		"the service account in hubTemplateOptions.serviceAccountName ("+ns+"/later) does not exist"))

	t.Run("a permission granted later is used", func(t *testing.T) {
		grantRead(t, unreadable, ns, "reader")
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(replicaTemplate(g, "cluster-a", ns, "denied").data).To(HaveKeyWithValue("k", "kept-out-of-reach"))
		}).Should(Succeed())
		expectCondition(t, ns, "denied", propagator.ReasonPropagated)
	})
	t.Run("a ServiceAccount that appears is used", func(t *testing.T) {
		create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later"}})
		grantRead(t, readable, ns, "later")
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(replicaTemplate(g, "cluster-a", ns, "absent").data).To(HaveKeyWithValue("k", "lent"))
		}).Should(Succeed())
		expectCondition(t, ns, "absent", propagator.ReasonPropagated)
	})

	t.Run("a resolver stops with the last policy using it", func(t *testing.T) {
		g := NewWithT(t)
		running := func(sa string) float64 {
			return metricValue("canopy_hub_template_service_account_resolvers", map[string]string{"namespace": ns, "service_account": sa})
		}
		g.Expect(running("reader")).To(Equal(1.0))
		g.Expect(env.Hub.Client.Delete(t.Context(), getPolicy(g, t.Context(), ns, "allowed"))).To(Succeed())
		expectReplicasOn(t, ns, "allowed")
		g.Consistently(func() float64 { return running("reader") }, "1s").Should(Equal(1.0), "denied still uses it")
		g.Expect(env.Hub.Client.Delete(t.Context(), getPolicy(g, t.Context(), ns, "denied"))).To(Succeed())
		g.Eventually(func() float64 { return running("reader") }).Should(BeZero())
		g.Expect(running("later")).To(Equal(1.0))
	})
}

func TestHubTemplatesProtect(t *testing.T) {
	ns := newNamespace(t)
	const password = "correct-horse-battery-staple"
	encoded := base64.StdEncoding.EncodeToString([]byte(password))
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Data: map[string][]byte{"password": []byte(password)}})
	placeOn(t, ns, "pl", "cluster-b")
	create(t, templatePolicy(ns, "protected", map[string]string{
		"password": `{{hub fromSecret "" "creds" "password" hub}}`,
		"note":     `{{hub "plain words" | protect hub}}`,
		"inline":   `{{hub printf "%s" (fromSecret "" "creds" "password") hub}}`,
	}), newBinding(ns, "pb", "pl", policySubject("protected")))

	g := NewWithT(t)
	var replica *policyv1.Policy
	g.Eventually(func(g Gomega) {
		replica = getReplica(g, t.Context(), "cluster-b", ns, "protected")
		g.Expect(replicaTemplate(g, "cluster-b", ns, "protected").data).To(HaveEach(HavePrefix("$ocm_encrypted:")))
	}).Should(Succeed())
	raw, err := json.Marshal(replica)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).NotTo(Or(ContainSubstring(password), ContainSubstring(encoded), ContainSubstring("plain words")))
	iv := replica.Annotations[templating.IVAnnotation]
	g.Expect(iv).NotTo(BeEmpty())
	g.Expect(replicaTemplate(g, "cluster-b", ns, "protected").annotations).To(HaveKeyWithValue(templating.IVAnnotation, iv))

	key := &corev1.Secret{}
	g.Expect(env.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: "cluster-b", Name: templating.EncryptionKeySecret}, key)).To(Succeed())
	g.Expect(key.Labels).To(HaveKeyWithValue("cluster.open-cluster-management.io/backup", "policy"))
	g.Expect(key.Annotations).To(HaveKey("policy.open-cluster-management.io/last-rotated"))
	g.Expect(key.Data[templating.EncryptionKeyField]).To(HaveLen(32))

	decrypted := decrypt(g, replica.Spec.PolicyTemplates[0].ObjectDefinition.Raw, key.Data[templating.EncryptionKeyField], iv)
	g.Expect(decrypted).To(Equal(map[string]string{"password": encoded, "note": "plain words", "inline": encoded}))
	expectNowhere(t, ns, "protected", password, encoded)

	t.Run("the IV and values stay when the replica is resolved again", func(t *testing.T) {
		g := NewWithT(t)
		mark := runningHub.writes.Mark()
		before := resolutions(ns, "protected")
		update(t, &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "protected"}}, func(p *policyv1.Policy) {
			p.Annotations = map[string]string{templating.TriggerUpdateAnnotation: "1"}
		})
		g.Eventually(func() float64 { return resolutions(ns, "protected") - before }).Should(Equal(1.0))
		g.Consistently(func() []string { return runningHub.writes.Matching(mark, "/policies/"+ns+".protected") }, "1s").Should(BeEmpty())
		again := getReplica(g, t.Context(), "cluster-b", ns, "protected")
		g.Expect(again.Annotations).To(HaveKeyWithValue(templating.IVAnnotation, iv))
		g.Expect(again.Annotations).NotTo(HaveKey(templating.TriggerUpdateAnnotation))
	})
}

func TestHubTemplatesTriggerUpdate(t *testing.T) {
	ns := newNamespace(t)
	placeOn(t, ns, "pl", clusters...)
	root := templatePolicy(ns, "pol", map[string]string{"cluster": `{{hub .ManagedClusterName hub}}`})
	create(t, root, newBinding(ns, "pb", "pl", policySubject("pol")))
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		for _, c := range clusters {
			g.Expect(replicaTemplate(g, c, ns, "pol").data).To(HaveKeyWithValue("cluster", c))
		}
	}).Should(Succeed())
	before := resolutions(ns, "pol")

	update(t, root, func(p *policyv1.Policy) { p.Annotations = map[string]string{templating.TriggerUpdateAnnotation: "now"} })
	g.Eventually(func() float64 { return resolutions(ns, "pol") - before }).Should(Equal(float64(len(clusters))))
	for _, c := range clusters {
		g.Expect(getReplica(g, t.Context(), c, ns, "pol").Annotations).NotTo(HaveKey(templating.TriggerUpdateAnnotation))
	}
}

// templatePolicy is a root whose ConfigurationPolicy (named name) must
// have ConfigMap default/out with data, which may hold hub templates.
func templatePolicy(ns, name string, data map[string]string) *policyv1.Policy {
	raw, err := json.Marshal(map[string]any{
		"apiVersion": "policy.open-cluster-management.io/v1", "kind": "ConfigurationPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"remediationAction": "inform", "severity": "low", "object-templates": []any{map[string]any{
			"complianceType": "musthave",
			"objectDefinition": map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "out", "namespace": "default"}, "data": data,
			},
		}}},
	})
	if err != nil {
		panic(err)
	}
	p := newPolicy(ns, name)
	p.Spec.PolicyTemplates[0].ObjectDefinition.Raw = raw
	return p
}

// replicaTemplateView is what the tests read of a replica's template.
type replicaTemplateView struct {
	annotations map[string]string
	data        map[string]string
}

type templateObject struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		ObjectTemplates []struct {
			ObjectDefinition struct {
				Data map[string]string `json:"data"`
			} `json:"objectDefinition"`
		} `json:"object-templates"`
	} `json:"spec"`
}

// replicaTemplate reads the template of the replica of ns/name on cluster.
func replicaTemplate(g Gomega, cluster, ns, name string) replicaTemplateView {
	r := getReplica(g, context.Background(), cluster, ns, name)
	return parseTemplate(g, r.Spec.PolicyTemplates[0].ObjectDefinition.Raw)
}

func parseTemplate(g Gomega, raw []byte) replicaTemplateView {
	var obj templateObject
	g.Expect(json.Unmarshal(raw, &obj)).To(Succeed())
	g.Expect(obj.Spec.ObjectTemplates).To(HaveLen(1))
	return replicaTemplateView{annotations: obj.Metadata.Annotations, data: obj.Spec.ObjectTemplates[0].ObjectDefinition.Data}
}

// decrypt decrypts the values of a template as the agent does.
func decrypt(g Gomega, raw, key []byte, iv string) map[string]string {
	resolver, err := templates.NewResolver(env.Hub.Config, templates.Config{})
	g.Expect(err).NotTo(HaveOccurred())
	decodedIV, err := base64.StdEncoding.DecodeString(iv)
	g.Expect(err).NotTo(HaveOccurred())
	res, err := resolver.ResolveTemplate(raw, nil, &templates.ResolveOptions{EncryptionConfig: templates.EncryptionConfig{
		DecryptionEnabled: true, AESKey: key, InitializationVector: decodedIV,
	}})
	g.Expect(err).NotTo(HaveOccurred())
	return parseTemplate(g, res.ResolvedJSON).data
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

// grantRead lets ServiceAccount saNamespace/sa read the ConfigMaps of ns.
func grantRead(t *testing.T, ns, saNamespace, sa string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-" + sa},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-" + sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: saNamespace, Name: sa}},
	}
	create(t, role, binding)
}

// resolutions is how many times the replicas of ns/name were resolved.
func resolutions(ns, name string) float64 {
	return metricValue("canopy_hub_template_resolutions_total", map[string]string{"namespace": ns, "policy": name})
}

// expectEvent waits for an event on root ns/name whose note contains part.
func expectEvent(t *testing.T, ns, name, part string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) []string { return eventNotes(g, t, ns, name) }).
		Should(ContainElement(ContainSubstring(part)))
}

func eventNotes(g Gomega, t *testing.T, ns, name string) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Hub.Client.List(t.Context(), list, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			notes = append(notes, e.Reason+": "+e.Note)
		}
	}
	return notes
}

// expectNowhere checks that no value appears in the replicas of root
// ns/name, its status or its events.
func expectNowhere(t *testing.T, ns, name string, values ...string) {
	t.Helper()
	g := NewWithT(t)
	root := getPolicy(g, t.Context(), ns, name)
	status, err := json.Marshal(root.Status)
	g.Expect(err).NotTo(HaveOccurred())
	seen := []string{string(status)}
	seen = append(seen, eventNotes(g, t, ns, name)...)
	list := &policyv1.PolicyList{}
	g.Expect(env.Hub.Client.List(t.Context(), list, client.MatchingLabels{policyv1.RootPolicyLabel: ns + "." + name})).To(Succeed())
	g.Expect(list.Items).NotTo(BeEmpty())
	for i := range list.Items {
		raw, err := json.Marshal(&list.Items[i])
		g.Expect(err).NotTo(HaveOccurred())
		seen = append(seen, string(raw))
	}
	for _, v := range values {
		for _, s := range seen {
			g.Expect(s).NotTo(ContainSubstring(v))
		}
	}
}

// TestResolveHubTemplates resolves a root's hub templates for one cluster
// as kubectl canopy plan does (hubtemplates.ResolveReplica): as the hub resolves them, writing nothing.
func TestResolveHubTemplates(t *testing.T) {
	ns := newNamespace(t)
	readable := newNamespace(t)
	create(t, configMap(ns, "values", map[string]string{"cluster-a": "a-value"}), configMap(readable, "cm", map[string]string{"k": "lent"}),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}})
	grantRead(t, readable, ns, "reader")
	root := templatePolicy(ns, "planned", map[string]string{
		"cluster": `{{hub .ManagedClusterName hub}}`,
		"set":     `{{hub index .ManagedClusterLabels "cluster.open-cluster-management.io/clusterset" hub}}`,
		"value":   `{{hub fromConfigMap "" "values" .ManagedClusterName hub}}`,
	})
	placeOn(t, ns, "pl", "cluster-a")
	create(t, root, newBinding(ns, "pb", "pl", policySubject("planned")))
	g := NewWithT(t)
	var onHub *policyv1.Policy
	g.Eventually(func(g Gomega) {
		onHub = getReplica(g, t.Context(), "cluster-a", ns, "planned")
		g.Expect(replicaTemplate(g, "cluster-a", ns, "planned").data).To(HaveKeyWithValue("value", "a-value"))
	}).Should(Succeed())

	cfg, writes := countingConfig()
	planned, err := hubtemplates.ResolveReplica(t.Context(), cfg, getPolicy(g, t.Context(), ns, "planned"), "cluster-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(planned.Spec.PolicyTemplates).To(Equal(onHub.Spec.PolicyTemplates), "as the hub resolves them")

	protected := templatePolicy(ns, "protected", map[string]string{"v": `{{hub "words" | protect hub}}`})
	planned, err = hubtemplates.ResolveReplica(t.Context(), cfg, protected, "cluster-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parseTemplate(g, planned.Spec.PolicyTemplates[0].ObjectDefinition.Raw).data).To(HaveKeyWithValue("v", HavePrefix("$ocm_encrypted:")))

	refused := templatePolicy(ns, "refused", map[string]string{"k": `{{hub fromConfigMap "` + readable + `" "cm" "k" hub}}`})
	planned, err = hubtemplates.ResolveReplica(t.Context(), cfg, refused, "cluster-a")
	g.Expect(err).To(MatchError(ContainSubstring("policy template 0: ")))
	g.Expect(err).To(MatchError(ContainSubstring("the namespace argument is restricted to " + ns)))
	g.Expect(parseTemplate(g, planned.Spec.PolicyTemplates[0].ObjectDefinition.Raw).annotations).To(HaveKey(templating.HubTemplatesErrorAnnotation))

	lent := refused.DeepCopy()
	lent.Spec.HubTemplateOptions = &policyv1.HubTemplateOptions{ServiceAccountName: "reader"}
	planned, err = hubtemplates.ResolveReplica(t.Context(), cfg, lent, "cluster-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parseTemplate(g, planned.Spec.PolicyTemplates[0].ObjectDefinition.Raw).data).To(HaveKeyWithValue("k", "lent"))

	lent.Spec.HubTemplateOptions.ServiceAccountName = "absent"
	_, err = hubtemplates.ResolveReplica(t.Context(), cfg, lent, "cluster-a")
	g.Expect(err).To(MatchError(ContainSubstring("the service account in hubTemplateOptions.serviceAccountName (" + ns + "/absent) does not exist")))
	g.Expect(writes.Mark()).To(BeZero(), "writes of ResolveHubTemplates")
}

// countingConfig is the hub's configuration with a record of its writes.
func countingConfig() (*rest.Config, *controlplane.Writes) {
	return controlplane.RecordWrites(env.Hub.Config)
}

// TestHubTemplatesWithGeneratedRBAC runs the hub controllers as a user
// holding only the hub's generated ClusterRole (deploy/hub/rbac): hub
// templates read the ManagedCluster and objects of the root's namespace,
// create a cluster's encryption key and use a ServiceAccount's token.
func TestHubTemplatesWithGeneratedRBAC(t *testing.T) {
	ns := newNamespace(t)
	create(t, configMap(ns, "values", map[string]string{"k": "v"}),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}})
	grantRead(t, ns, ns, "reader")
	g := NewWithT(t)
	kubeconfig, err := env.Hub.KubeconfigAs(t.Context(), t.TempDir(), "canopy-hub-"+ns, "deploy/hub/rbac/role.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())

	restart(t, func() {
		restricted := newTestHub(cfg)
		g.Expect(restricted.Start()).To(Succeed())
		defer func() { g.Expect(restricted.Stop()).To(Succeed()) }()
		lent := templatePolicy(ns, "lent", map[string]string{"k": `{{hub fromConfigMap "` + ns + `" "values" "k" hub}}`})
		lent.Spec.HubTemplateOptions = &policyv1.HubTemplateOptions{ServiceAccountName: "reader"}
		placeOn(t, ns, "pl", "cluster-c")
		create(t, lent, templatePolicy(ns, "own", map[string]string{
			"k":   `{{hub fromConfigMap "" "values" "k" hub}}`,
			"set": `{{hub index .ManagedClusterLabels "name" hub}}`,
			"p":   `{{hub "x" | protect hub}}`,
		}), newBinding(ns, "pb", "pl", policySubject("lent"), policySubject("own")))
		g.Eventually(func(g Gomega) {
			g.Expect(replicaTemplate(g, "cluster-c", ns, "lent").data).To(HaveKeyWithValue("k", "v"))
			g.Expect(replicaTemplate(g, "cluster-c", ns, "own").data).To(And(HaveKeyWithValue("k", "v"),
				HaveKeyWithValue("set", "cluster-c"), HaveKeyWithValue("p", HavePrefix("$ocm_encrypted:"))))
		}).Should(Succeed())
	})
}
