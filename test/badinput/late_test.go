package badinput_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// lateWindow is how long a case's expectations must keep holding after its
// late input: the controllers react within a second, so input that changed
// what the user sees would show long before.
const lateWindow = 15 * time.Second

// expectLate applies the late objects of the cases that have some (the
// corpus has settled), and checks that those cases' expectations hold
// throughout lateWindow, or, for a case with "# expect-late:" lines, that
// its late expectations are met, in order.
func expectLate(t *testing.T, cases []testCase) {
	g := NewWithT(t)
	ctx := t.Context()
	var late []testCase
	for _, tc := range cases {
		if len(tc.lateHub)+len(tc.lateManaged) == 0 {
			continue
		}
		late = append(late, tc)
		for _, to := range []struct {
			c    client.Client
			objs []*unstructured.Unstructured
		}{{env.Hub.Client, tc.lateHub}, {env.Managed[0].Client, tc.lateManaged}} {
			for _, obj := range to.objs {
				resolved, err := resolveLate(obj, resolveToken(t))
				g.Expect(err).NotTo(HaveOccurred(), tc.name)
				g.Expect(controlplane.Apply(ctx, to.c, resolved)).To(Succeed(), tc.name)
			}
		}
	}
	var holding []testCase
	for _, tc := range late {
		if len(tc.expectLate) == 0 {
			holding = append(holding, tc)
			continue
		}
		for _, e := range tc.expectLate {
			c, key, gvk := target(tc, e)
			g.Eventually(func(g Gomega) string {
				text, err := statusText(ctx, c, key, gvk)
				g.Expect(err).NotTo(HaveOccurred())
				return text
			}, settle, poll).Should(MatchRegexp(e.re.String()), "%s after its late input", e)
		}
	}
	if len(holding) == 0 {
		return
	}
	g.Consistently(func(g Gomega) {
		for _, tc := range holding {
			for _, e := range tc.expect {
				c, key, gvk := target(tc, e)
				text, err := statusText(ctx, c, key, gvk)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(text).To(MatchRegexp(e.re.String()), "%s after its late input", e)
			}
		}
	}, lateWindow, poll).Should(Succeed())
}

// resolveToken resolves the late tokens of a case's objects.
func resolveToken(t *testing.T) func(token, arg string) (string, error) {
	return func(token, arg string) (string, error) {
		if token == "$NOW" {
			return time.Now().UTC().Format(time.RFC3339), nil
		}
		p := &policyv1.Policy{}
		if err := env.Managed[0].Client.Get(t.Context(), client.ObjectKey{Namespace: clusterName, Name: arg}, p); err != nil {
			return "", fmt.Errorf("resolving %s: %w", token, err)
		}
		return string(p.UID), nil
	}
}
