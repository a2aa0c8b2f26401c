package secretsync_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/cmdutil"
	"github.com/canopy-policy/canopy/internal/scheme"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/spoke"
	"github.com/canopy-policy/canopy/test/inproc"
)

// suite is one hub and one managed API server. Each test registers its own
// cluster (a new cluster namespace on the hub, with the agent's hub
// identity and RBAC) and runs its own agent for it, as cmd/spoke does.
var suite = &testenv.Suite{Options: testenv.Options{ManagedClusters: []string{"managed"}}}

// logs receives every log line of the agents, at the highest verbosity, so
// that tests can check that no key ever reaches a log.
var logs syncBuffer

func TestMain(m *testing.M) {
	ctrl.SetLogger(cmdutil.RedactBodies(funcr.New(func(prefix, args string) { logs.WriteString(prefix + " " + args + "\n") },
		funcr.Options{Verbosity: 10})))
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	EnforceDefaultTimeoutsWhenUsingContexts()
	suite.Main(m)
}

// cluster is one test's registered cluster, running its agent.
type cluster struct {
	ns      string
	hub     client.Client // hub administrator
	managed client.Client // managed administrator

	hubConfig *rest.Config  // the agent's hub identity
	agentHub  client.Client // a client as the agent's hub identity
}

// newCluster registers a cluster named after the test on the hub and runs
// its agent until the test ends.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	c := registerCluster(t)
	c.startAgent(t)
	return c
}

// registerCluster registers a cluster named after the test on the hub.
func registerCluster(t *testing.T) *cluster {
	t.Helper()
	g := NewWithT(t)
	short := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, strings.ToLower(strings.TrimPrefix(t.Name(), "Test")))
	name := fmt.Sprintf("s%s-%04x", short[:min(len(short), 30)], rand.IntN(1<<16))
	env := suite.Get(t)
	hubCfg, err := env.RegisterCluster(t.Context(), name)
	g.Expect(err).NotTo(HaveOccurred())
	agentHub, err := client.New(hubCfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	return &cluster{ns: name, hub: env.Hub.Client, managed: env.Managed[0].Client, hubConfig: hubCfg, agentHub: agentHub}
}

// startAgent runs the agent of c until the test ends.
func (c *cluster) startAgent(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	running, err := inproc.RunAgent(context.Background(), suite.Get(t).Managed[0].Config, spoke.Options{
		HubConfig: c.hubConfig, ClusterName: c.ns, ClusterNamespaceOnly: true, Evaluators: spoke.NoEvaluators,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(running.Stop()).To(Succeed()) })
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// WriteString appends s.
func (b *syncBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

// String returns everything written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
