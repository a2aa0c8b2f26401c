package hubtemplates

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/depwatch"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/templating"
)

// offlineTemplateRun is a templateRun of cluster c1 that reads nothing
// from an API server.
func offlineTemplateRun(t *testing.T, key []byte, keyErr error) *templateRun {
	t.Helper()
	resolver, err := templates.NewResolverWithClients(nil, nil, hubResolverConfig(false))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	root := rootPolicy()
	return &templateRun{
		resolver: resolver,
		options:  resolveOptions(root, "c1"),
		context:  newTemplateContext(root, "c1"),
		labels:   func() (map[string]string, error) { return map[string]string{"env": "prod"}, nil },
		key:      func() ([]byte, error) { return key, keyErr },
	}
}

func definitions(values ...string) []policyv1.PolicyTemplate {
	var out []policyv1.PolicyTemplate
	for _, v := range values {
		raw := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"v":%q}}`, v)
		out = append(out, policyv1.PolicyTemplate{ObjectDefinition: runtime.RawExtension{Raw: raw}})
	}
	return out
}

func TestTemplateRun(t *testing.T) {
	g := NewWithT(t)
	key := bytes.Repeat([]byte{7}, keySize)
	defs := definitions("plain", "{{hub .ManagedClusterName hub}}-{{hub .ManagedClusterLabels.env hub}}",
		"{{hub .PolicyMetadata.labels.team hub}}", "{{hub .ManagedClusterName", `{{hub "s3cr3t" | protect hub}}`)

	out := offlineTemplateRun(t, key, nil).run(defs)

	g.Expect(out.Hold).To(BeFalse())
	g.Expect(out.Retry).NotTo(HaveOccurred())
	g.Expect(out.defs[0]).To(BeNil(), "no hub template: the root's definition stays")
	g.Expect(string(out.defs[1])).To(ContainSubstring(`"v":"c1-prod"`))
	g.Expect(string(out.defs[2])).To(ContainSubstring(`"v":"a"`))
	g.Expect(out.Failures).To(HaveLen(1))
	g.Expect(out.Failures[0].Index).To(Equal(3))
	g.Expect(AnnotationOf(out.defs[3], templating.HubTemplatesErrorAnnotation)).To(Equal(out.Failures[0].Message))
	g.Expect(string(out.defs[3])).To(ContainSubstring(`"v":"{{hub .ManagedClusterName"`), "left as written")
	g.Expect(out.Failures[0].Message).To(ContainSubstring(string(defs[3].ObjectDefinition.Raw)), "OCM's message quotes the template")
	g.Expect(out.Failures[0].Summary).NotTo(ContainSubstring(string(defs[3].ObjectDefinition.Raw)))
	g.Expect(out.Failures[0].Summary).To(HavePrefix("failed to parse the template JSON string: "))
	g.Expect(string(out.defs[4])).To(And(ContainSubstring(`"v":"$ocm_encrypted:`), Not(ContainSubstring("s3cr3t"))))
	g.Expect(validIV(out.iv)).NotTo(BeNil())
	g.Expect(AnnotationOf(out.defs[4], templating.IVAnnotation)).To(Equal(out.iv))

	t.Run("a known IV gives the same values", func(t *testing.T) {
		run := offlineTemplateRun(t, key, nil)
		run.iv = out.iv
		again := run.run(defs)
		NewWithT(t).Expect(again.defs[4]).To(Equal(out.defs[4]))
		NewWithT(t).Expect(again.iv).To(Equal(out.iv))
	})
	t.Run("an invalid IV is replaced", func(t *testing.T) {
		run := offlineTemplateRun(t, key, nil)
		run.iv = "not base64"
		NewWithT(t).Expect(validIV(run.run(defs).iv)).NotTo(BeNil())
	})
	t.Run("the key unavailable: nothing to write, retried", func(t *testing.T) {
		held := offlineTemplateRun(t, nil, errors.New("boom")).run(defs)
		NewWithT(t).Expect(held.Hold).To(BeTrue())
		NewWithT(t).Expect(held.Retry).To(MatchError(ContainSubstring("getting the encryption key: boom")))
		NewWithT(t).Expect(isTransient(held.Retry)).To(BeTrue())
	})
}

func TestApplyToCopiesDefinitions(t *testing.T) {
	g := NewWithT(t)
	out := Result{defs: [][]byte{nil, []byte(`{"a":1}`)}, iv: "iv"}
	desired := replica.Build(rootPolicy(), replica.Cluster{Name: "c1"}, nil)
	desired.Spec.PolicyTemplates = definitions("x", "y")
	out.ApplyTo(desired)
	g.Expect(string(desired.Spec.PolicyTemplates[0].ObjectDefinition.Raw)).To(ContainSubstring(`"v":"x"`))
	g.Expect(string(desired.Spec.PolicyTemplates[1].ObjectDefinition.Raw)).To(Equal(`{"a":1}`))
	g.Expect(desired.Annotations).To(HaveKeyWithValue(templating.IVAnnotation, "iv"))
	desired.Spec.PolicyTemplates[1].ObjectDefinition.Raw[0] = '['
	g.Expect(string(out.defs[1])).To(Equal(`{"a":1}`), "a decoded response must not change what is remembered")
}

func TestFailAll(t *testing.T) {
	g := NewWithT(t)
	defs := definitions("plain", "{{hub .ManagedClusterName hub}}")
	out := failAll(defs, &serviceAccountMissingError{sa: types.NamespacedName{Namespace: "ns", Name: "sa"}})
	g.Expect(out.defs[0]).To(BeNil())
	g.Expect(AnnotationOf(out.defs[1], templating.HubTemplatesErrorAnnotation)).To(
		Equal("the service account in hubTemplateOptions.serviceAccountName (ns/sa) does not exist"))
	g.Expect(out.Err()).To(MatchError("policy template 1: the service account in hubTemplateOptions.serviceAccountName (ns/sa) does not exist"))
}

func TestWithheld(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`failed to resolve the template {"a":"x"}: template: tmpl:3:14: executing "tmpl" at <mustFromJson .x>: error calling mustFromJson: invalid character 's' in s3cr3t`,
			`failed to resolve the template {"a":"x"}: template: tmpl:3:14: executing "tmpl" at <mustFromJson .x>: error calling mustFromJson: ` + withheldNote},
		{`failed to resolve the template {}: template: tmpl:1:2: executing "tmpl" at <.x>: range can't iterate over s3cr3t`,
			`failed to resolve the template {}: template: tmpl:1:2: executing "tmpl" at <.x>: ` + withheldNote},
		{`something else about s3cr3t`, "failed to resolve the template: " + withheldNote},
	} {
		g := NewWithT(t)
		got := (&templateError{err: errors.New(tc.in), sensitive: true}).Error()
		g.Expect(got).To(Equal(tc.want))
		g.Expect(got).NotTo(ContainSubstring("s3cr3t"))
		g.Expect((&templateError{err: errors.New(tc.in)}).Error()).To(Equal(tc.in), "nothing is withheld when no Secret was read")
	}
}

func TestErrorClasses(t *testing.T) {
	g := NewWithT(t)
	gr := schema.GroupResource{Resource: "configmaps"}
	g.Expect(isTransient(&templateError{err: fmt.Errorf("x: %w", apierrors.NewServiceUnavailable("busy"))})).To(BeTrue())
	g.Expect(isTransient(fmt.Errorf("x: %w", templates.ErrMissingAPIResource))).To(BeTrue())
	g.Expect(isTransient(&transientError{errors.New("key")})).To(BeTrue())
	g.Expect(isTransient(&templateError{err: apierrors.NewNotFound(gr, "cm")})).To(BeFalse(), "watched: resolved again when created")
	g.Expect(isTransient(&templateError{err: apierrors.NewForbidden(gr, "cm", errors.New("no"))})).To(BeFalse())
	g.Expect(isTransient(fmt.Errorf("x: %w", templates.ErrRestrictedNamespace))).To(BeFalse())
}

func TestUsesEncryption(t *testing.T) {
	g := NewWithT(t)
	g.Expect(usesEncryption([]byte(`{"a":"{{hub fromSecret "" "s" "k" hub}}"}`))).To(BeTrue())
	g.Expect(usesEncryption([]byte(`{"a":"{{hub "x" | protect hub}}"}`))).To(BeTrue())
	g.Expect(usesEncryption([]byte(`{"a":"{{hub printf "%s" (fromSecret "" "s" "k") hub}}"}`))).To(BeTrue(), "a Secret read inside an action")
	g.Expect(usesEncryption([]byte(`{"protected":"fromSecret","a":"{{hub .ManagedClusterName hub}}"}`))).To(BeFalse(), "outside actions")
}

func TestResolutionInputs(t *testing.T) {
	g := NewWithT(t)
	root := rootPolicy()
	base := resolutionInputs(root)
	g.Expect(resolutionInputs(root.DeepCopy())).To(Equal(base))
	for name, change := range map[string]func(*policyv1.Policy){
		"generation":     func(p *policyv1.Policy) { p.Generation++ },
		"trigger-update": func(p *policyv1.Policy) { p.Annotations[templating.TriggerUpdateAnnotation] = "1" },
		"labels":         func(p *policyv1.Policy) { p.Labels["team"] = "b" },
		"recreated":      func(p *policyv1.Policy) { p.UID = "other" },
	} {
		p := root.DeepCopy()
		change(p)
		g.Expect(resolutionInputs(p)).NotTo(Equal(base), name)
	}
	p := root.DeepCopy()
	p.Status.ComplianceState = policyv1.Compliant
	p.ResourceVersion = "8"
	g.Expect(resolutionInputs(p)).To(Equal(base), "status and resource version do not count")
}

// fakeWatcher records the watches removed.
type fakeWatcher struct {
	depclient.DynamicWatcher
	removed []string
}

// Started reports the fake as running.
func (f *fakeWatcher) Started() <-chan struct{} {
	started := make(chan struct{})
	close(started)
	return started
}

func (f *fakeWatcher) RemoveWatcher(id depclient.ObjectIdentifier) error {
	f.removed = append(f.removed, id.Namespace+"/"+id.Name)
	return nil
}

// newTestCache is a Cache over w, whose Changed sends to the returned
// channel.
func newTestCache(w depclient.DynamicWatcher) (*Cache, chan types.NamespacedName) {
	changed := make(chan types.NamespacedName, 10)
	return &Cache{
		opts: Options{Changed: func(_ context.Context, root types.NamespacedName) { changed <- root }},
		pool: &resolverPool{
			watcher: w, life: depwatch.New(w), sas: map[types.NamespacedName]*saResolver{}, refs: map[types.NamespacedName]int{},
			users: map[depclient.ObjectIdentifier]types.NamespacedName{},
		},
		states: map[string]map[string]*replicaState{},
	}, changed
}

func TestRememberedResolutions(t *testing.T) {
	g := NewWithT(t)
	h, changed := newTestCache(&fakeWatcher{})
	key := types.NamespacedName{Namespace: "c1", Name: "ns.pol"}
	res := Result{iv: "x"}

	_, epoch, ok := h.last(key, "in")
	g.Expect(ok).To(BeFalse())
	h.remember(key, "in", epoch, res)
	got, _, ok := h.last(key, "in")
	g.Expect(ok).To(BeTrue())
	g.Expect(got.iv).To(Equal("x"))
	_, _, ok = h.last(key, "other inputs")
	g.Expect(ok).To(BeFalse(), "the root changed")

	_, err := watchEvents{h}.Reconcile(t.Context(), replicaWatcher(key)) // a watched object changed
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(<-changed).To(Equal(types.NamespacedName{Namespace: "ns", Name: "pol"}), "its root is reconciled")
	_, next, ok := h.last(key, "in")
	g.Expect(ok).To(BeFalse(), "forgotten")

	h.remember(key, "in", epoch, res) // a resolution that began before the event
	_, _, ok = h.last(key, "in")
	g.Expect(ok).To(BeFalse(), "a resolution older than the last event is never used")
	h.remember(key, "in", next, res)
	_, _, ok = h.last(key, "in")
	g.Expect(ok).To(BeTrue())
}

func TestRetainStopsTheWatchesOfOtherClusters(t *testing.T) {
	g := NewWithT(t)
	w := &fakeWatcher{}
	h, _ := newTestCache(w)
	for _, c := range []string{"c1", "c2", "c3"} {
		h.last(types.NamespacedName{Namespace: c, Name: "ns.pol"}, "in")
	}
	h.last(types.NamespacedName{Namespace: "c2", Name: "ns.other"}, "in")

	h.Retain(t.Context(), "ns.pol", sets.New("c1", "c3"))
	g.Expect(w.removed).To(ConsistOf("c2/ns.pol"))
	h.Retain(t.Context(), "ns.pol", nil)
	g.Expect(w.removed).To(ConsistOf("c2/ns.pol", "c1/ns.pol", "c3/ns.pol"))
	h.Retain(t.Context(), "ns.pol", nil)
	g.Expect(w.removed).To(HaveLen(3), "nothing left to stop")
	g.Expect(h.states).To(HaveKey("ns.other"))
}

func rootPolicy() *policyv1.Policy {
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{
			Name: "pol", Namespace: "ns", UID: "uid", ResourceVersion: "7", Generation: 3,
			Labels:      map[string]string{"team": "a", policyv1.GroupName + "/standards": "NIST"},
			Annotations: map[string]string{"note": "x", policyv1.GroupName + "/categories": "CM"},
		},
		Spec: policyv1.PolicySpec{RemediationAction: policyv1.Inform},
	}
}

func TestShowsValue(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{
		"long": base64.StdEncoding.EncodeToString([]byte("long-secret-value")), "short": base64.StdEncoding.EncodeToString([]byte("ab")), "empty": "",
	}}}
	values := secretValues(secret)
	for _, tc := range []struct {
		name string
		out  any
		want bool
	}{
		{"a decoded value", map[string]any{"v": "long-secret-value"}, true},
		{"a stored (base64) value", map[string]any{"v": base64.StdEncoding.EncodeToString([]byte("long-secret-value"))}, true},
		{"inside a longer string", map[string]any{"v": "postgres://u:long-secret-value@db"}, true},
		{"in a list", []any{"x", "long-secret-value"}, true},
		{"as a key", map[string]any{"long-secret-value": "x"}, true},
		{"a short value as a whole string", map[string]any{"v": "ab"}, true},
		{"a short value inside a string: chance", map[string]any{"v": "label-ab-c"}, false},
		{"encrypted", map[string]any{"v": "$ocm_encrypted:bG9uZy1zZWNyZXQtdmFsdWU="}, false},
		{"unrelated", map[string]any{"v": "other"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(showsValue(clearStrings(tc.out, nil), values)).To(Equal(tc.want))
		})
	}
}

func TestCheckSensitive(t *testing.T) {
	g := NewWithT(t)
	run := offlineTemplateRun(t, nil, nil)
	res := templates.TemplateResult{ResolvedJSON: []byte(`{"v":"x"}`), HasSensitiveData: true}
	g.Expect(run.checkSensitive(templates.TemplateResult{ResolvedJSON: res.ResolvedJSON}, false)).To(Succeed(), "no Secret read")
	g.Expect(run.checkSensitive(res, false)).To(MatchError(ContainSubstring("reads a Secret with lookup")), "not encrypted")
	g.Expect(run.checkSensitive(res, true)).To(MatchError(ContainSubstring("in clear text")), "what was read is unknown")
	secret := unstructured.Unstructured{Object: map[string]any{"kind": "Secret", "metadata": map[string]any{"namespace": "ns", "name": "s"},
		"data": map[string]any{"k": base64.StdEncoding.EncodeToString([]byte("x"))}}}
	run.read = func() ([]unstructured.Unstructured, error) { return []unstructured.Unstructured{secret}, nil }
	g.Expect(run.checkSensitive(res, true)).To(MatchError(ContainSubstring("a value of Secret ns/s in clear text")))
	g.Expect(run.checkSensitive(templates.TemplateResult{ResolvedJSON: []byte(`{"v":"y"}`), HasSensitiveData: true}, true)).To(Succeed())
	run.read = func() ([]unstructured.Unstructured, error) { return nil, errors.New("boom") }
	g.Expect(isTransient(run.checkSensitive(res, true))).To(BeTrue())
}
