package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/canopy-policy/canopy/internal/test/testenv"
)

// env is the hub and managed clusters, set up once for the whole suite.
var env *testenv.Env

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Canopy e2e")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	start := time.Now()
	var err error
	env, err = StartEnvironment(ctx)
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("Environment ready in %v: kubeconfigs in %s\n", time.Since(start).Round(time.Millisecond), env.Dir)
}, NodeTimeout(5*time.Minute))

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// managedClusterNames are known when the spec tree is built, before the
// environment starts.
var managedClusterNames = func() []string {
	names, err := ManagedClusterNames()
	if err != nil {
		panic(err)
	}
	return names
}()
