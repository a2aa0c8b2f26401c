// Package capture writes what a test saw (a screenshot, an API answer, an
// object as `kubectl get -o yaml` prints it) into the directory named by
// CANOPY_CAPTURE_DIR, so that the docs show output of real runs. `make
// captures` sets it to docs/captures and runs the tests that capture;
// without it, Write does nothing and the tests check what they always check.
package capture

import (
	"os"
	"path/filepath"
	"testing"
)

// DirVariable names the environment variable holding the capture directory.
const DirVariable = "CANOPY_CAPTURE_DIR"

// Enabled reports whether captures are written, so that a test can skip
// the work of taking one (a screenshot) when they are not.
func Enabled() bool { return os.Getenv(DirVariable) != "" }

// Write stores data as the file name in the capture directory, when there
// is one; a failed write fails the test.
func Write(t testing.TB, name string, data []byte) {
	t.Helper()
	dir := os.Getenv(DirVariable)
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatalf("creating the capture directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		t.Fatalf("writing capture %s: %v", name, err)
	}
}
