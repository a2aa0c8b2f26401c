package testenv

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startBudget bounds Start in the test helpers.
const startBudget = 3 * time.Minute

// Run is TestMain for a package whose tests share one Env: it starts env,
// runs the tests, stops env and exits.
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { testenv.Run(m, testenv.Options{}, &env) }
func Run(m *testing.M, opts Options, env **Env) {
	ctx, cancel := context.WithTimeout(context.Background(), startBudget)
	e, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// ForTest starts an Env for one test and stops it when the test ends.
func ForTest(t testing.TB, opts Options) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startBudget)
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

// Namespace creates a namespace named after the test, with a random suffix,
// and deletes it when the test ends.
//
// Note: envtest runs no namespace controller, so a deleted namespace stays
// Terminating with its objects; use a new namespace per test, not per suite.
func Namespace(t testing.TB, c client.Client) string {
	t.Helper()
	prefix := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(prefix) > 40 {
		prefix = strings.TrimRight(prefix[:40], "-")
	}
	if prefix == "" {
		prefix = "test"
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatalf("creating a test namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.IgnoreNotFound(c.Delete(ctx, ns)); err != nil {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)
