package compliance

import (
	"testing"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// suite is the API server of the tests that need one, started by the first
// of them (unit and fuzz tests run without it) and stopped by TestMain.
var suite = &controlplane.Suite{Name: "managed"}

func TestMain(m *testing.M) { suite.Main(m) }
