package testenv

import (
	"context"
	"errors"
	"testing"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// Suite is one Env that the tests of a package share, with what the package
// tests running against it: the first test that asks for it starts it (unit
// and fuzz tests run without one), and Main stops it. It is
// controlplane.Suite for tests that need a hub and managed clusters.
//
//	var suite = &testenv.Suite{Options: testenv.Options{ManagedClusters: []string{"managed"}}}
//
//	func TestMain(m *testing.M) { suite.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		env := suite.Get(t)
//		ns := controlplane.Namespace(t, env.Hub.Client)
//		agent := env.Cluster("managed").HubClient // what the agent may do on the hub
//		...
//	}
type Suite struct {
	// Options configures the Env.
	Options Options
	// Start starts what runs against the Env once it is up; the func it
	// returns stops that. Nil starts nothing.
	Start func(env *Env) (stop func() error, err error)

	lazy controlplane.Lazy[*Env]
}

// Get returns the running Env, started on first use; it fails t when the
// Env or Start fails.
func (s *Suite) Get(t testing.TB) *Env {
	t.Helper()
	return s.lazy.Get(t, func(ctx context.Context) (*Env, func() error, error) {
		env, err := Start(ctx, s.Options)
		if err != nil {
			return nil, nil, err
		}
		stop := func() error { return nil }
		if s.Start != nil {
			if stop, err = s.Start(env); err != nil {
				return nil, nil, errors.Join(err, env.Stop())
			}
		}
		return env, func() error { return errors.Join(stop(), env.Stop()) }, nil
	})
}

// Main runs the package's tests, then stops the Env if a test started it,
// and exits: `func TestMain(m *testing.M) { suite.Main(m) }`.
func (s *Suite) Main(m *testing.M) { s.lazy.Main(m) }

// ForTest starts an Env for one test and stops it when the test ends.
func ForTest(t testing.TB, opts Options) *Env {
	t.Helper()
	controlplane.SetTestLogger() // a no-op when the package set its own
	ctx, cancel := context.WithTimeout(t.Context(), controlplane.StartBudget)
	defer cancel()
	e, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting the test environment: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the test environment: %v", err)
		}
	})
	return e
}
