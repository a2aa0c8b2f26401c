package badinput_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/test/inproc"
)

const (
	// settle bounds the wait for a case's message.
	settle = 2 * time.Minute
	poll   = 250 * time.Millisecond
	// idleWindow is how long the settled system is watched for writes.
	idleWindow = 15 * time.Second
)

// TestCorpus applies every case of testdata/ to the hub (and the managed
// cluster), with the hub controllers and the agent running, and checks that
// each says what is wrong on the object the user looks at. Once every case
// has settled, it applies the cases' late input and checks that their
// expectations still hold, then that nothing loops: no API writes and a
// bounded number of reconciles while the system is left alone.
func TestCorpus(t *testing.T) {
	suite.Get(t) // starts env on first use
	cases, err := loadCases("testdata", clusterName)
	if err != nil {
		t.Fatal(err)
	}
	if only := os.Getenv("BADINPUT_CASES"); only != "" { // a regexp, to work on a few cases
		cases = slices.DeleteFunc(cases, func(tc testCase) bool { return !regexp.MustCompile(only).MatchString(tc.name) })
	} else if len(cases) < 50 {
		t.Fatalf("the corpus has %d cases, want at least 50", len(cases))
	}
	mc := env.Managed[0]
	startDenying(t, mc)
	// Every case is applied first, so that the controllers work on all of
	// them at once, then each case's expectations are checked.
	for _, tc := range cases {
		t.Run("apply/"+tc.name, func(t *testing.T) { applyCase(t, tc) })
	}
	for _, tc := range cases {
		t.Run("expect/"+tc.name, func(t *testing.T) { expectCase(t, tc) })
	}
	if t.Failed() {
		return
	}
	t.Run("late input", func(t *testing.T) { expectLate(t, cases) })
	t.Run("no hot loops", expectIdle)
}

// deniedFunction is the template function the corpus's hub and agent deny,
// as their --template-function-denylist would (the *-denied-function
// cases).
const deniedFunction = "sha1sum"

// startDenying runs the hub controllers and the agent of mc as
// inproc.StartHub and inproc.StartAgent do, both denying deniedFunction,
// until the test ends.
func startDenying(t *testing.T, mc *testenv.ManagedCluster) {
	t.Helper()
	hubOpts := inproc.HubOptions()
	hubOpts.TemplateFuncDenylist = []string{deniedFunction}
	agentOpts := inproc.AgentOptions(mc.Name, mc.HubConfig)
	agentOpts.TemplateFuncDenylist = []string{deniedFunction}
	for _, p := range []struct {
		name  string
		start func() (*inproc.Running, error)
	}{
		{"hub manager", func() (*inproc.Running, error) { return inproc.RunHub(context.Background(), env.Hub.Config, hubOpts) }},
		{"agent", func() (*inproc.Running, error) { return inproc.RunAgent(context.Background(), mc.Config, agentOpts) }},
	} {
		name := p.name
		r, err := p.start()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() {
			if err := r.Stop(); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
}

// applyCase applies a case's objects, and checks the API server's answer
// when the case expects a rejection.
func applyCase(t *testing.T, tc testCase) {
	g := NewWithT(t)
	ctx := t.Context()
	g.Expect(controlplane.Apply(ctx, env.Managed[0].Client, tc.managed...)).To(Succeed(), "managed objects")
	createNamespace(t, env.Hub.Client, tc.name)
	err := controlplane.Apply(ctx, env.Hub.Client, tc.hub...)
	if tc.rejected() {
		for _, e := range tc.expect {
			g.Expect(err).To(MatchError(MatchRegexp(e.re.String())), "%s", e)
		}
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	if !tc.nobind {
		g.Expect(bind(ctx, tc)).To(Succeed())
	}
}

// expectCase waits for the message of each expectation of a case.
func expectCase(t *testing.T, tc testCase) {
	if tc.rejected() {
		return
	}
	g := NewWithT(t)
	ctx := t.Context()
	for _, e := range tc.expect {
		c, key, gvk := target(tc, e)
		var last string
		g.Eventually(func(g Gomega) string {
			text, err := statusText(ctx, c, key, gvk)
			g.Expect(err).NotTo(HaveOccurred())
			last = text
			return text
		}, settle, poll).Should(MatchRegexp(e.re.String()), "%s", e)
		t.Logf("%s %s:\n%s", gvk.Kind, key, last)
	}
}

// target is the client, key and kind of the object an expectation names.
func target(tc testCase, e expectation) (client.Client, client.ObjectKey, schema.GroupVersionKind) {
	policy := policyv1.GroupVersion.WithKind("Policy")
	switch e.place {
	case placeRoot:
		if ns, name, ok := strings.Cut(e.name, "/"); ok { // a root outside the case's namespace
			return env.Hub.Client, client.ObjectKey{Namespace: ns, Name: name}, policy
		}
		return env.Hub.Client, client.ObjectKey{Namespace: tc.name, Name: e.name}, policy
	case placeReplica:
		return env.Hub.Client, client.ObjectKey{Namespace: clusterName, Name: tc.name + "." + e.name}, policy
	case placePolicySet:
		return env.Hub.Client, client.ObjectKey{Namespace: tc.name, Name: e.name},
			schema.GroupVersionKind{Group: policyv1.GroupName, Version: "v1beta1", Kind: "PolicySet"}
	case placeConfigurationPolicy:
		return env.Managed[0].Client, client.ObjectKey{Namespace: clusterName, Name: e.name},
			policyv1.GroupVersion.WithKind("ConfigurationPolicy")
	case placeHierarchyPolicy:
		return env.Managed[0].Client, client.ObjectKey{Namespace: clusterName, Name: e.name},
			schema.GroupVersionKind{Group: "hierarchy.canopy.io", Version: "v1alpha1", Kind: "HierarchyPolicy"}
	}
	panic(fmt.Sprintf("unknown place %q in %s", e.place, tc.name))
}

// statusText returns every string of the object's status, one per line,
// and every number as "<field>=<number>".
func statusText(ctx context.Context, c client.Client, key client.ObjectKey, gvk schema.GroupVersionKind) (string, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, key, u); err != nil {
		return "", err
	}
	var lines []string
	collectStrings(u.Object["status"], &lines)
	return strings.Join(lines, "\n"), nil
}

func collectStrings(v any, out *[]string) {
	switch v := v.(type) {
	case string:
		*out = append(*out, v)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			switch n := v[k].(type) {
			case int64, float64:
				*out = append(*out, fmt.Sprintf("%s=%v", k, n))
			default:
				collectStrings(n, out)
			}
		}
	case []any:
		for _, item := range v {
			collectStrings(item, out)
		}
	}
}

// bind places every Policy and PolicySet of the case on the managed
// cluster: a Placement deciding it, and one PlacementBinding per subject.
func bind(ctx context.Context, tc testCase) error {
	c := env.Hub.Client
	placement := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: tc.name}}
	if err := c.Create(ctx, placement); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := env.SetPlacementDecisions(ctx, tc.name, clusterName, clusterName); err != nil {
		return err
	}
	var errs []error
	for _, o := range tc.hub {
		if (o.GetKind() != "Policy" && o.GetKind() != "PolicySet") || o.GetNamespace() != tc.name {
			continue
		}
		pb := &policyv1.PlacementBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "bind-" + o.GetName(), Namespace: tc.name},
			PlacementRef: policyv1.PlacementSubject{
				APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: clusterName,
			},
			Subjects: []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: o.GetKind(), Name: o.GetName()}},
		}
		if err := c.Create(ctx, pb); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func createNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}
