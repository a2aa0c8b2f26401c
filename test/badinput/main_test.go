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

// env is a hub and one managed cluster.
var env *testenv.Env

func TestMain(m *testing.M) {
	logger := logr.Discard()
	if os.Getenv("BADINPUT_LOG") != "" { // the controllers' logs, to debug a case
		logger = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	ctrl.SetLogger(logger)
	testenv.Run(m, testenv.Options{ManagedClusters: []string{clusterName}}, &env)
}
