package compliance

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/canopy-policy/canopy/internal/testenv"
)

// managed is the API server of the tests that need one, started by the
// first of them (unit and fuzz tests run without it) and stopped by TestMain.
var (
	managed    *testenv.ControlPlane
	managedErr error
	startOnce  sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	if managed != nil {
		if err := managed.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// controlPlane returns the shared API server, starting it on first use.
func controlPlane(t *testing.T) *testenv.ControlPlane {
	t.Helper()
	startOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		managed, managedErr = testenv.StartControlPlane(ctx, "managed")
	})
	if managedErr != nil {
		t.Fatalf("starting the control plane: %v", managedErr)
	}
	return managed
}
