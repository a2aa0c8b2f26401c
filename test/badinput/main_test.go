package badinput_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/canopy-policy/canopy/internal/testenv"
)

// clusterName is the one managed cluster of the corpus.
const clusterName = "cluster1"

// suite is a hub and one managed cluster.
var suite = &testenv.Suite{
	Options: testenv.Options{ManagedClusters: []string{clusterName}},
	Start: func(e *testenv.Env) (func() error, error) {
		env = e
		return func() error { return nil }, nil
	},
}

// env is the suite's Env, set when it starts: every test starts it first
// with suite.Get.
var env *testenv.Env

func TestMain(m *testing.M) {
	logger := logr.Discard()
	if os.Getenv("BADINPUT_LOG") != "" { // the controllers' logs, to debug a case
		logger = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	ctrl.SetLogger(logger)
	suite.Main(m)
}
