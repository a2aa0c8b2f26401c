package api_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

// policySetExcluding is a PolicySet of members with one exclusion entry per
// name of excluded, each excluding cluster1.
func policySetExcluding(ns, name string, members []string, excluded ...string) *policyv1beta1.PolicySet {
	set := &policyv1beta1.PolicySet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	set.Spec.Policies = []policyv1.NonEmptyString{}
	for _, m := range members {
		set.Spec.Policies = append(set.Spec.Policies, policyv1.NonEmptyString(m))
	}
	for _, e := range excluded {
		set.Spec.Exclusions = append(set.Spec.Exclusions, policyv1beta1.PolicySetExclusion{
			PolicyName: policyv1.NonEmptyString(e), Reason: "test", ClusterNames: []policyv1.NonEmptyString{"cluster1"},
		})
	}
	return set
}

// TestPolicySetExclusionsAdmission checks that the hub refuses an exclusion
// of a policy that is not a member of the set, or a member excluded twice,
// with the messages of OCM's PolicySet webhook
// (governance-policy-propagator api/v1beta1/policyset_webhook.go:
// errInvalidExclusionPolicy and errDuplicateExclusionPolicy, each name
// listed once), on creation and on update.
func TestPolicySetExclusionsAdmission(t *testing.T) {
	c := apiServer(t)
	ctx := t.Context()
	ns := createNamespace(t, c)
	g := NewWithT(t)

	// The admission policy becomes active shortly after it is created.
	g.Eventually(func() error {
		set := policySetExcluding(ns, "probe", []string{"a"}, "b")
		err := c.Create(ctx, set)
		if err == nil {
			g.Expect(c.Delete(ctx, set)).To(Succeed())
			return errors.New("created; the admission policy is not active yet")
		}
		return err
	}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Satisfy(apierrors.IsInvalid))

	for _, tc := range []struct {
		name     string
		set      *policyv1beta1.PolicySet
		wantErrs []string // empty: accepted
	}{{
		name: "members excluded",
		set:  policySetExcluding(ns, "ok", []string{"a", "b"}, "a", "b"),
	}, {
		name: "no exclusions",
		set:  policySetExcluding(ns, "none", []string{"a"}),
	}, {
		name:     "a policy that is not a member",
		set:      policySetExcluding(ns, "not-member", []string{"a"}, "b"),
		wantErrs: []string{"policy in spec.exclusions is not listed in spec.policies: b"},
	}, {
		name:     "non-members listed once each",
		set:      policySetExcluding(ns, "not-members", []string{"a"}, "b", "c", "b"),
		wantErrs: []string{"policy in spec.exclusions is not listed in spec.policies: b, c"},
	}, {
		name:     "a member excluded twice",
		set:      policySetExcluding(ns, "twice", []string{"a", "b"}, "a", "b", "a", "a", "b"),
		wantErrs: []string{"policy in spec.exclusions has a duplicate entry: a, b"},
	}, {
		name: "both, duplicates first",
		set:  policySetExcluding(ns, "both", []string{"a"}, "b", "a", "a"),
		wantErrs: []string{"policy in spec.exclusions has a duplicate entry: a; " +
			"policy in spec.exclusions is not listed in spec.policies: b"},
	}, {
		name:     "an empty set",
		set:      policySetExcluding(ns, "empty", nil, "a"),
		wantErrs: []string{"policy in spec.exclusions is not listed in spec.policies: a"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := c.Create(ctx, tc.set)
			if len(tc.wantErrs) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(Satisfy(apierrors.IsInvalid), "%v", err)
			for _, want := range tc.wantErrs {
				g.Expect(err.Error()).To(ContainSubstring(want))
			}
		})
	}

	t.Run("an update that excludes a policy that is not a member", func(t *testing.T) {
		g := NewWithT(t)
		set := policySetExcluding(ns, "updated", []string{"a"}, "a")
		g.Expect(c.Create(ctx, set)).To(Succeed())
		set.Spec.Policies = []policyv1.NonEmptyString{"b"}
		err := c.Update(ctx, set)
		g.Expect(err).To(Satisfy(apierrors.IsInvalid), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("policy in spec.exclusions is not listed in spec.policies: a"))
	})
}
