package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/deploy/crds"
)

// kubernetesVersion names the directory bin/k8s/<version> that
// hack/install-envtest-assets.sh fills with kube-apiserver and etcd.
const kubernetesVersion = "1.37.1"

const fieldManager = "canopy-roundtrip-test"

// testdataFiles are OCM-style (and Canopy) manifests; each must survive a
// strict decode into its Go type and an encode without losing anything, and
// apply unchanged to a real API server with the generated CRDs.
var testdataFiles = []string{
	"policy.yaml",
	"placementbinding.yaml",
	"policyset.yaml",
	"configurationpolicy.yaml",
	"configurationpolicy-raw.yaml",
	"hierarchypolicy.yaml",
	"subnamespace.yaml",
}

var testScheme = func() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{
		clientgoscheme.AddToScheme,
		policyv1.AddToScheme,
		policyv1beta1.AddToScheme,
		hierarchyv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

func TestMain(m *testing.M) {
	code := m.Run()
	if err := stopAPIServer(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// TestDecodeEncodeKeepsEverything decodes each manifest strictly into its Go
// type (unknown, duplicate or mis-cased fields fail) and checks that encoding
// it again yields the same document.
func TestDecodeEncodeKeepsEverything(t *testing.T) {
	for _, file := range testdataFiles {
		t.Run(file, func(t *testing.T) {
			g := NewWithT(t)
			original := readManifest(t, file)

			typed := decodeStrict(t, original)
			encoded := toMap(t, typed)

			g.Expect(normalize(encoded)).To(Equal(normalize(original.Object)))
		})
	}
}

// TestAPIServerAcceptsManifests applies each manifest unchanged to a real API
// server (server-side apply, strict field validation), sets its status
// through the status subresource, and checks that what is read back matches.
func TestAPIServerAcceptsManifests(t *testing.T) {
	c := apiServer(t)
	for _, file := range testdataFiles {
		t.Run(file, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			ns := createNamespace(t, c)
			original := readManifest(t, file)
			original.SetNamespace(ns)

			applied := original.DeepCopy()
			unstructured.RemoveNestedField(applied.Object, "status")
			g.Expect(apply(t, c, applied, false)).To(Succeed())
			if _, hasStatus := original.Object["status"]; hasStatus {
				status := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": original.GetAPIVersion(),
					"kind":       original.GetKind(),
					"metadata":   map[string]any{"name": original.GetName(), "namespace": ns},
					"status":     original.Object["status"],
				}}
				g.Expect(apply(t, c, status, true)).To(Succeed())
			}

			// Read back into the Go type, so that the check covers the
			// decoding of what the server stores too.
			typed, err := testScheme.New(original.GroupVersionKind())
			g.Expect(err).NotTo(HaveOccurred())
			obj := typed.(client.Object)
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(original), obj)).To(Succeed())
			got := toMap(t, obj)

			want := normalize(original.Object)
			have := normalize(got)
			for key := range want {
				if key == "metadata" || key == "apiVersion" || key == "kind" {
					continue
				}
				g.Expect(have[key]).To(Equal(want[key]), "field %q", key)
			}
		})
	}
}

// TestPolicyNameLength checks OCM's rule that a root policy's namespace and
// name together have at most 62 characters: the admission policy enforces
// the sum, the CRD bounds the name alone, and replicas are exempt.
func TestPolicyNameLength(t *testing.T) {
	c := apiServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := createNamespace(t, c)

	tooLong := newPolicy(ns, strings.Repeat("a", 62-len(ns)+1))
	// The admission policy becomes active shortly after it is created.
	g.Eventually(func() error {
		err := c.Create(ctx, tooLong.DeepCopy())
		if err == nil {
			g.Expect(c.Delete(ctx, tooLong.DeepCopy())).To(Succeed())
			return errors.New("created; the admission policy is not active yet")
		}
		return err
	}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(And(
		Satisfy(apierrors.IsInvalid),
		MatchError(ContainSubstring("the combined length of the policy namespace and name cannot exceed 62 characters")),
	))

	g.Expect(c.Create(ctx, newPolicy(ns, strings.Repeat("b", 62-len(ns))))).To(Succeed(),
		"exactly 62 characters is allowed")

	replica := newPolicy(ns, "root-namespace-of-some-length."+strings.Repeat("c", 33))
	replica.Labels = map[string]string{policyv1.RootPolicyLabel: replica.Name}
	g.Expect(len(ns) + len(replica.Name)).To(BeNumerically(">", 62))
	g.Expect(c.Create(ctx, replica)).To(Succeed(), "replicas are exempt")

	err := c.Create(ctx, newPolicy(ns, strings.Repeat("d", 62)))
	g.Expect(err).To(MatchError(ContainSubstring("the policy name is too long")),
		"the CRD rejects a name that cannot fit with any namespace")
}

// TestSchemaRejectsInvalidObjects checks enums, CEL rules and strict field
// validation of the generated CRDs.
func TestSchemaRejectsInvalidObjects(t *testing.T) {
	c := apiServer(t)
	tests := []struct {
		name   string
		file   string
		mutate func(u *unstructured.Unstructured)
		want   string
	}{{
		name: "policy remediationAction outside the enum",
		file: "policy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, "audit", "spec", "remediationAction")
		},
		want: `spec.remediationAction: Unsupported value: "audit"`,
	}, {
		name: "dependency compliance outside the enum",
		file: "policy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			deps, _, _ := unstructured.NestedSlice(u.Object, "spec", "dependencies")
			deps[0].(map[string]any)["compliance"] = "Done"
			setField(u, deps, "spec", "dependencies")
		},
		want: `Unsupported value: "Done"`,
	}, {
		name: "dependency on a ConfigurationPolicy with a namespace",
		file: "policy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, []any{map[string]any{
				"apiVersion": "policy.open-cluster-management.io/v1",
				"kind":       "ConfigurationPolicy",
				"name":       "x",
				"namespace":  "elsewhere",
				"compliance": "Compliant",
			}}, "spec", "dependencies")
		},
		want: "dependencies on ConfigurationPolicy or CertificatePolicy must not set namespace",
	}, {
		name: "policy template without kind",
		file: "policy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, []any{map[string]any{"objectDefinition": map[string]any{
				"apiVersion": "policy.open-cluster-management.io/v1",
				"metadata":   map[string]any{"name": "x"},
			}}}, "spec", "policy-templates")
		},
		want: "spec.policy-templates[0].objectDefinition.kind: Required value",
	}, {
		name: "unknown field",
		file: "policy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, true, "spec", "enabled")
		},
		want: `unknown field "spec.enabled"`,
	}, {
		name: "subFilter outside the enum",
		file: "placementbinding.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, "exclusive", "subFilter")
		},
		want: `subFilter: Unsupported value: "exclusive"`,
	}, {
		name: "binding override to inform",
		file: "placementbinding.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, "inform", "bindingOverrides", "remediationAction")
		},
		want: `bindingOverrides.remediationAction: Unsupported value: "inform"`,
	}, {
		name: "complianceType outside the enum",
		file: "configurationpolicy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			templates, _, _ := unstructured.NestedSlice(u.Object, "spec", "object-templates")
			templates[0].(map[string]any)["complianceType"] = "MUSTHAVE"
			setField(u, templates, "spec", "object-templates")
		},
		want: `Unsupported value: "MUSTHAVE"`,
	}, {
		name: "pruneObjectBehavior outside the enum",
		file: "configurationpolicy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, "DeleteSome", "spec", "pruneObjectBehavior")
		},
		want: `spec.pruneObjectBehavior: Unsupported value: "DeleteSome"`,
	}, {
		name: "evaluationInterval that is no duration",
		file: "configurationpolicy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, "sometimes", "spec", "evaluationInterval", "compliant")
		},
		want: "spec.evaluationInterval.compliant: Invalid value",
	}, {
		name: "both object-templates and object-templates-raw",
		file: "configurationpolicy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, "[]", "spec", "object-templates-raw")
		},
		want: "exactly one of object-templates and object-templates-raw must be set",
	}, {
		name: "generator with data and clone",
		file: "hierarchypolicy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			generators, _, _ := unstructured.NestedSlice(u.Object, "spec", "generators")
			generators[0].(map[string]any)["clone"] = map[string]any{
				"apiVersion": "v1", "kind": "Secret", "namespace": "default", "name": "s",
			}
			setField(u, generators, "spec", "generators")
		},
		want: "exactly one of the fields in [data clone] must be set",
	}, {
		name: "managed kind merge outside the enum",
		file: "hierarchypolicy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, []any{map[string]any{"kind": "ResourceQuota", "merge": "Maximum"}}, "spec", "managedKinds")
		},
		want: `Unsupported value: "Maximum"`,
	}, {
		name: "node that is its own parent",
		file: "hierarchypolicy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, []any{map[string]any{"name": "loop", "parent": "loop"}}, "spec", "nodes")
		},
		want: "a node cannot be its own parent",
	}, {
		name: "node resource without apiVersion",
		file: "hierarchypolicy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			setField(u, []any{map[string]any{"name": "n", "resources": []any{
				map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "x"}},
			}}}, "spec", "nodes")
		},
		want: "spec.nodes[0].resources[0].apiVersion: Required value",
	}, {
		name: "generated-by label value too long",
		file: "hierarchypolicy.yaml",
		mutate: func(u *unstructured.Unstructured) {
			u.SetName(strings.Repeat("p", 40))
			generators, _, _ := unstructured.NestedSlice(u.Object, "spec", "generators")
			generators[0].(map[string]any)["name"] = strings.Repeat("g", 23)
			setField(u, generators, "spec", "generators")
		},
		want: "the policy name and each generator name together must be at most 62 characters",
	}, {
		name: "sub-namespace name that is no namespace name",
		file: "subnamespace.yaml",
		mutate: func(u *unstructured.Unstructured) {
			u.SetName("shipping.dev")
		},
		want: "the name of a SubNamespace is the name of its child namespace",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u := readManifest(t, tt.file)
			unstructured.RemoveNestedField(u.Object, "status")
			u.SetNamespace(createNamespace(t, c))
			tt.mutate(u)

			// Note: server-side apply reports an unknown field as an internal
			// error (500), so the error class is checked on create.
			g.Expect(apply(t, c, u, false)).To(HaveOccurred(), "server-side apply")
			err := c.Create(t.Context(), u, client.FieldValidation("Strict"))
			g.Expect(err).To(HaveOccurred(), "create")
			g.Expect(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
}

// TestSchemaAcceptsOCMVariants checks values that OCM accepts and that are
// easy to reject by mistake: other capitalisations, and templated metadata in
// object templates.
func TestSchemaAcceptsOCMVariants(t *testing.T) {
	c := apiServer(t)
	g := NewWithT(t)
	u := readManifest(t, "configurationpolicy.yaml")
	unstructured.RemoveNestedField(u.Object, "status")
	u.SetNamespace(createNamespace(t, c))
	templates, _, _ := unstructured.NestedSlice(u.Object, "spec", "object-templates")
	for i, ct := range []string{"MustHave", "Mustonlyhave", "MustNotHave"} {
		templates[i].(map[string]any)["complianceType"] = ct
	}
	setField(u, templates, "spec", "object-templates")
	setField(u, "Enforce", "spec", "remediationAction")
	setField(u, "1h30m", "spec", "evaluationInterval", "compliant")
	setField(u, "never", "spec", "evaluationInterval", "noncompliant")
	g.Expect(apply(t, c, u, false)).To(Succeed())
}

func newPolicy(namespace, name string) *policyv1.Policy {
	return &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: policyv1.PolicySpec{
			RemediationAction: policyv1.Inform,
			PolicyTemplates:   []policyv1.PolicyTemplate{},
		},
	}
}

func setField(u *unstructured.Unstructured, value any, fields ...string) {
	if err := unstructured.SetNestedField(u.Object, value, fields...); err != nil {
		panic(err)
	}
}

// readManifest reads testdata/file.
func readManifest(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	NewWithT(t).Expect(yaml.Unmarshal(data, &u.Object)).To(Succeed())
	return u
}

// decodeStrict decodes u into the Go type its kind is registered with,
// failing on unknown, duplicate or differently cased fields.
func decodeStrict(t *testing.T, u *unstructured.Unstructured) k8sruntime.Object {
	t.Helper()
	g := NewWithT(t)
	obj, err := testScheme.New(u.GroupVersionKind())
	g.Expect(err).NotTo(HaveOccurred())
	data, err := json.Marshal(u.Object)
	g.Expect(err).NotTo(HaveOccurred())
	strictErrs, err := sigsjson.UnmarshalStrict(data, obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strictErrs).To(BeEmpty())
	return obj
}

func toMap(t *testing.T, obj any) map[string]any {
	t.Helper()
	g := NewWithT(t)
	data, err := json.Marshal(obj)
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]any{}
	g.Expect(json.Unmarshal(data, &out)).To(Succeed())
	return out
}

// normalize drops nulls, empty maps and empty lists, which encode "absent"
// as much as leaving the field out; any other difference is a real one.
func normalize(v map[string]any) map[string]any {
	out, _ := normalizeValue(v).(map[string]any)
	return out
}

func normalizeValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range v {
			if n := normalizeValue(val); n != nil {
				out[k] = n
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(v) == 0 {
			return nil
		}
		out := make([]any, len(v))
		for i, val := range v {
			out[i] = normalizeValue(val)
		}
		return out
	case int64:
		return float64(v) // YAML and JSON decode numbers differently
	case int:
		return float64(v)
	default:
		return v
	}
}

// apply server-side applies u, or its status, with strict field validation.
func apply(t *testing.T, c client.Client, u *unstructured.Unstructured, status bool) error {
	t.Helper()
	data, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	patch := client.RawPatch(types.ApplyPatchType, data)
	target := u.DeepCopy()
	if status {
		return c.Status().Patch(t.Context(), target, patch,
			client.FieldOwner(fieldManager), client.ForceOwnership, client.FieldValidation("Strict"))
	}
	return c.Patch(t.Context(), target, patch,
		client.FieldOwner(fieldManager), client.ForceOwnership, client.FieldValidation("Strict"))
}

// createNamespace creates a namespace for one test and deletes it after.
func createNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "api-"}}
	NewWithT(t).Expect(c.Create(t.Context(), ns)).To(Succeed())
	t.Cleanup(func() {
		// Note: t.Context() is already cancelled during cleanup.
		_ = c.Delete(context.Background(), ns)
	})
	return ns.Name
}

// The API server is shared by the tests of this package and started by the
// first test that needs it.
var (
	serverOnce   sync.Once
	serverEnv    *envtest.Environment
	serverClient client.Client
	serverErr    error
)

// apiServer returns a client of a real API server with Canopy's CRDs and
// admission policies, starting it on first use.
func apiServer(t *testing.T) client.Client {
	t.Helper()
	serverOnce.Do(func() { serverClient, serverErr = startAPIServer() })
	if serverErr != nil {
		t.Fatalf("starting the API server: %v", serverErr)
	}
	return serverClient
}

func startAPIServer() (client.Client, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	assets := filepath.Join(root, "bin", "k8s", kubernetesVersion)
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("%w (run make envtest-assets)", err)
		}
	}
	canopyCRDs, err := crds.Canopy()
	if err != nil {
		return nil, err
	}
	policies, err := crds.AdmissionPolicies()
	if err != nil {
		return nil, err
	}
	serverEnv = &envtest.Environment{
		CRDs:                  canopyCRDs,
		BinaryAssetsDirectory: assets,
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := serverEnv.Start()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		return nil, err
	}
	for _, obj := range policies {
		if err := c.Create(context.Background(), obj); err != nil {
			return nil, fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return c, nil
}

func stopAPIServer() error {
	if serverEnv == nil {
		return nil
	}
	return serverEnv.Stop()
}

// repoRoot finds the repository root: the directory of go.mod above this
// file.
func repoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the test source")
	}
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			return "", errors.New("go.mod not found above " + file)
		}
	}
}
