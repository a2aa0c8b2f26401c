package templatesync_test

import (
	"testing"

	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// suite is one hub and one managed API server. Each test registers its own
// cluster (a new cluster namespace on the hub and a same-named namespace on
// the managed API server) and runs its own agent for it, so tests never
// share a namespace.
var suite = &testenv.Suite{Options: testenv.Options{ManagedClusters: []string{"managed"}}}

func TestMain(m *testing.M) { suite.Main(m) }
