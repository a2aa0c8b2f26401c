package configpolicy

import (
	"fmt"
	"math/rand/v2"
	"time"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// interval is one value of spec.evaluationInterval.
type interval struct {
	// watch re-evaluates when a checked object changes (the default).
	watch bool
	// never evaluates again only when the policy's spec changes.
	never bool
	// every is the least time between two evaluations otherwise.
	every time.Duration
}

// parseInterval reads "", "watch", "never" or a Go duration.
func parseInterval(s string) (interval, error) {
	switch s {
	case "", "watch":
		return interval{watch: true}, nil
	case "never":
		return interval{never: true}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return interval{}, fmt.Errorf("evaluationInterval %q: %w", s, err)
	}
	if d <= 0 {
		return interval{}, fmt.Errorf("evaluationInterval %q is not positive", s)
	}
	return interval{every: d}, nil
}

// intervalFor returns the interval that applies in state: the compliant one
// when Compliant, the noncompliant one otherwise. A value that does not
// parse (the CRD's pattern should prevent it) means watch.
func intervalFor(spec policyv1.EvaluationInterval, state policyv1.ComplianceState) interval {
	s := spec.NonCompliant
	if state == policyv1.Compliant {
		s = spec.Compliant
	}
	iv, err := parseInterval(s)
	if err != nil {
		return interval{watch: true}
	}
	return iv
}

// dueForEvaluation reports whether policy is due for evaluation at now and,
// if it is not, how long until it is (0: not until its spec changes). A
// policy whose spec changed, or that was never evaluated, is always due.
//
// Note: this reads status.lastEvaluated and lastEvaluatedGeneration, which
// this controller wrote: the evaluation interval is defined by them.
func dueForEvaluation(policy *policyv1.ConfigurationPolicy, now time.Time) (bool, time.Duration) {
	st := policy.Status
	if st.LastEvaluated == "" || st.LastEvaluatedGeneration != policy.Generation {
		return true, 0
	}
	if st.ComplianceState != policyv1.Compliant && st.ComplianceState != policyv1.NonCompliant {
		return true, 0
	}
	iv := intervalFor(policy.Spec.EvaluationInterval, st.ComplianceState)
	switch {
	case iv.watch:
		return true, 0
	case iv.never:
		return false, 0
	}
	last, err := time.Parse(time.RFC3339, st.LastEvaluated)
	if err != nil {
		return true, 0
	}
	if wait := last.Add(iv.every).Sub(now); wait > 0 {
		return false, wait
	}
	return true, 0
}

// jitter adds up to a tenth to d, so that policies evaluated together
// drift apart.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(d)/10+1)) //nolint:gosec // spreading load, not security
}
