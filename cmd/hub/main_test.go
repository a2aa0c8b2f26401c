package main

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/internal/cmdutil/cmdtest"
	"github.com/canopy-policy/canopy/internal/testenv"
)

func TestParseFlags(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseFlags([]string{"--kubeconfig", "/tmp/hub", "--leader-elect", "--zap-log-level", "debug"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.kubeconfig).To(Equal("/tmp/hub"))
	g.Expect(opts.leaderElect).To(BeTrue())
	g.Expect(opts.serving.HealthAddress).To(Equal(":8081"))

	_, err = parseFlags([]string{"stray"})
	g.Expect(err).To(MatchError(ContainSubstring("unexpected arguments")))
}

// TestRun starts the hub against a real API server with leader election, waits
// until it is ready and checks that it shuts down cleanly.
func TestRun(t *testing.T) {
	g := NewWithT(t)
	hub, err := testenv.StartControlPlane(t.Context(), "hub")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = hub.Stop() })

	opts, err := parseFlags([]string{
		"--kubeconfig", hub.KubeconfigPath,
		"--leader-elect", "--leader-election-namespace", "default",
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", cmdtest.FreeAddress(t),
	})
	g.Expect(err).NotTo(HaveOccurred())
	stop := cmdtest.RunUntilReady(t, opts.serving.HealthAddress, func(ctx context.Context) error { return run(ctx, opts) })
	stop()
}
