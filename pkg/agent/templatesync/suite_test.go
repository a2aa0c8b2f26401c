package templatesync_test

import (
	"testing"

	"github.com/canopy-policy/canopy/internal/testenv"
)

// env is one hub and one managed API server. Each test registers its own
// cluster (a new cluster namespace on the hub and a same-named namespace on
// the managed API server) and runs its own agent for it, so tests never
// share a namespace.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{ManagedClusters: []string{"managed"}}, &env)
}
