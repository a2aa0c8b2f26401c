package configpolicy

import (
	"testing"

	. "github.com/onsi/gomega"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// value decodes YAML as the API machinery decodes JSON (integers as int64).
func value(t testing.TB, doc string) any {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("YAML %q: %v", doc, err)
	}
	var v any
	if err := utiljson.Unmarshal(js, &v); err != nil {
		t.Fatalf("JSON %s: %v", js, err)
	}
	return v
}

func TestCompareObject(t *testing.T) {
	existing := `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: default
  uid: "1"
  labels: {app: web, extra: x}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}', note: a}
data: {a: '1', b: '2'}
status: {phase: Ready}`
	tests := []struct {
		name        string
		template    string
		mode        Mode
		wantMatches bool
		wantDesired string
	}{
		{name: "musthave complies", mode: Subset, wantMatches: true, wantDesired: existing, template: `
apiVersion: v1
kind: ConfigMap
metadata: {name: app, labels: {app: web}}
data: {a: '1'}`},
		{name: "musthave fixes a value", mode: Subset, template: `
apiVersion: v1
kind: ConfigMap
metadata: {name: app}
data: {a: '9'}`, wantDesired: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: default
  uid: "1"
  labels: {app: web, extra: x}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}', note: a}
data: {a: '9', b: '2'}
status: {phase: Ready}`},
		{name: "mustonlyhave removes extra fields and keeps kubectl's annotation", mode: Exact, template: `
apiVersion: v1
kind: ConfigMap
metadata: {name: app, labels: {app: web}, annotations: {note: a}}
data: {a: '1'}`, wantDesired: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: default
  uid: "1"
  labels: {app: web}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}', note: a}
data: {a: '1'}
status: {phase: Ready}`},
		{name: "status differs: nothing to write", mode: Subset, wantDesired: existing, template: `
apiVersion: v1
kind: ConfigMap
metadata: {name: app}
status: {phase: Failed}`},
		{name: "musthave, every key present: an empty value the object lacks differs (the dry run decides)",
			mode: keysPresent(Subset), template: `
apiVersion: v1
kind: ConfigMap
metadata: {name: app, labels: {empty: ""}}`, wantDesired: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: default
  uid: "1"
  labels: {app: web, extra: x, empty: ""}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}', note: a}
data: {a: '1', b: '2'}
status: {phase: Ready}`},
		{name: "mustonlyhave removes top-level fields the template does not list, not metadata or status", mode: Exact, template: `
apiVersion: v1
kind: ConfigMap
metadata: {name: app}
binaryData: {k: dg==}`, wantDesired: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: default
  uid: "1"
  labels: {app: web, extra: x}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{}', note: a}
binaryData: {k: dg==}
status: {phase: Ready}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := value(t, tt.template).(map[string]any)
			ex := value(t, existing).(map[string]any)
			matches, desired := compareObject(tmpl, ex, tt.mode, tt.mode)
			g.Expect(matches).To(Equal(tt.wantMatches))
			g.Expect(desired).To(Equal(value(t, tt.wantDesired)))
			g.Expect(ex).To(Equal(value(t, existing)), "existing unchanged")
		})
	}
}

// TestCompareNamespaceSCCAnnotations: mustonlyhave on a namespace's
// annotations keeps OpenShift's SCC annotations, as OCM does.
func TestCompareNamespaceSCCAnnotations(t *testing.T) {
	g := NewWithT(t)
	existing := value(t, `
apiVersion: v1
kind: Namespace
metadata:
  name: ns
  annotations: {openshift.io/sa.scc.uid-range: 1000/10000, other: x}`).(map[string]any)
	tmpl := value(t, `
apiVersion: v1
kind: Namespace
metadata: {name: ns, annotations: {mine: z}}`).(map[string]any)
	matches, desired := compareObject(tmpl, existing, Exact, Exact)
	g.Expect(matches).To(BeFalse())
	g.Expect(desired["metadata"].(map[string]any)["annotations"]).To(Equal(map[string]any{
		"openshift.io/sa.scc.uid-range": "1000/10000", "mine": "z"}))
	tmpl["metadata"].(map[string]any)["annotations"] = map[string]any{}
	matches, _ = compareObject(tmpl, value(t, `
apiVersion: v1
kind: Namespace
metadata: {name: ns, annotations: {openshift.io/sa.scc.mcs: "s0:c1"}}`).(map[string]any), Exact, Exact)
	g.Expect(matches).To(BeTrue(), "only SCC annotations: complies with no annotations")
}
