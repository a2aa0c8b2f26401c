package testenv_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// TestWaitForAccessRetries: WaitForAccess waits through Forbidden, as the
// RBAC caches catch up, and through the other errors a busy or just started
// API server answers with, instead of failing the environment's start.
// (A fake client: only the helper's retries are under test.)
func TestWaitForAccessRetries(t *testing.T) {
	g := NewWithT(t)
	answers := []error{
		apierrors.NewForbidden(schema.GroupResource{Resource: "policies"}, "", errors.New("RBAC not there yet")),
		apierrors.NewTooManyRequests("busy", 0),
		apierrors.NewServiceUnavailable("starting"),
		errors.New("connection refused"),
	}
	calls := 0
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			calls++
			if calls <= len(answers) {
				return answers[calls-1]
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	g.Expect(testenv.WaitForAccess(t.Context(), c, "cluster1", &policyv1.PolicyList{})).To(Succeed())
	g.Expect(calls).To(Equal(len(answers) + 1))

	answers, calls = []error{apierrors.NewServiceUnavailable("down"), apierrors.NewServiceUnavailable("down")}, 0
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := testenv.WaitForAccess(ctx, c, "cluster1", &policyv1.PolicyList{})
	g.Expect(err).To(MatchError(ContainSubstring("the last answer: down")), "a wait that ends says why")
}
