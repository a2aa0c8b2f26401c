package controllerdefaults_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/canopy-policy/canopy/pkg/controllerdefaults"
)

func TestConcurrency(t *testing.T) {
	g := NewWithT(t)
	g.Expect(controllerdefaults.Concurrency(0, controllerdefaults.HubConcurrency)).To(Equal(2))
	g.Expect(controllerdefaults.Concurrency(-1, 4)).To(Equal(4))
	g.Expect(controllerdefaults.Concurrency(7, 4)).To(Equal(7))
	g.Expect(controllerdefaults.HubOptions(0).MaxConcurrentReconciles).To(Equal(controllerdefaults.HubConcurrency))
	g.Expect(controllerdefaults.HubOptions(3).MaxConcurrentReconciles).To(Equal(3))
	g.Expect(controllerdefaults.HubWriterOptions().RateLimiter.When(reconcile.Request{})).To(Equal(controllerdefaults.HubRetryBaseDelay))
}

// TestRateLimiters: each doubles from its base to its cap, per request.
func TestRateLimiters(t *testing.T) {
	g := NewWithT(t)
	agent := controllerdefaults.RateLimiter[string]()
	g.Expect([]time.Duration{agent.When("a"), agent.When("a"), agent.When("b")}).
		To(Equal([]time.Duration{time.Second, 2 * time.Second, time.Second}))
	for range 20 {
		agent.When("a")
	}
	g.Expect(agent.When("a")).To(Equal(controllerdefaults.RetryMaxDelay))
	agent.Forget("a")
	g.Expect(agent.When("a")).To(Equal(time.Second))

	hub := controllerdefaults.HubRateLimiter[int]()
	g.Expect(hub.When(1)).To(Equal(100 * time.Millisecond))
	for range 20 {
		hub.When(1)
	}
	g.Expect(hub.When(1)).To(Equal(controllerdefaults.MaxHubRetryDelay))
}
