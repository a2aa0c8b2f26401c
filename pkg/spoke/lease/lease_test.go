package lease_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/spoke/lease"
)

// suite is one API server, standing for the hub or the managed cluster:
// the Updater writes to either the same way.
var suite = &controlplane.Suite{Name: "lease"}

func TestMain(m *testing.M) {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	SetDefaultConsistentlyDuration(time.Second)
	suite.Main(m)
}

// get returns a function that reads Lease ns/name, nil when there is none.
func get(t *testing.T, c client.Client, ns, name string) func(Gomega) *coordinationv1.Lease {
	return func(g Gomega) *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, l); err != nil {
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			return nil
		}
		return l
	}
}

// renewTime returns a function that reads the renewTime of Lease ns/name,
// the zero time when there is none.
func renewTime(t *testing.T, c client.Client, ns, name string) func(Gomega) time.Time {
	return func(g Gomega) time.Time {
		if l := get(t, c, ns, name)(g); l != nil && l.Spec.RenewTime != nil {
			return l.Spec.RenewTime.Time
		}
		return time.Time{}
	}
}

// TestRenew: the first renewal creates the Lease, held by the instance, for
// three intervals; a later one, by another instance, moves renewTime and
// the holder and keeps acquireTime.
func TestRenew(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := suite.Get(t).Client
	ns := controlplane.Namespace(t, c)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }

	g.Expect((&lease.Updater{Writer: c, Namespace: ns, Holder: "agent-a", Now: clock}).Renew(t.Context())).To(Succeed())
	l := get(t, c, ns, lease.DefaultName)(g)
	g.Expect(l).NotTo(BeNil())
	g.Expect(l.Spec.HolderIdentity).To(Equal(ptr.To("agent-a")))
	g.Expect(l.Spec.LeaseDurationSeconds).To(Equal(ptr.To(int32(3 * lease.DefaultInterval / time.Second))))
	g.Expect(l.Spec.AcquireTime.Time).To(BeTemporally("==", now))
	g.Expect(l.Spec.RenewTime.Time).To(BeTemporally("==", now))

	acquired := now
	now = now.Add(lease.DefaultInterval)
	g.Expect((&lease.Updater{Writer: c, Namespace: ns, Holder: "agent-b", Now: clock}).Renew(t.Context())).To(Succeed())
	l = get(t, c, ns, lease.DefaultName)(g)
	g.Expect(l.Spec.HolderIdentity).To(Equal(ptr.To("agent-b")))
	g.Expect(l.Spec.RenewTime.Time).To(BeTemporally("==", now))
	g.Expect(l.Spec.AcquireTime.Time).To(BeTemporally("==", acquired))

	u := &lease.Updater{Writer: c, Namespace: ns, Name: "other", Holder: "agent-a", Interval: 2 * time.Second}
	g.Expect(u.Renew(t.Context())).To(Succeed())
	g.Expect(get(t, c, ns, "other")(g).Spec.LeaseDurationSeconds).To(Equal(ptr.To(int32(6))))
}

// TestRenewShortInterval: an interval under a second still makes a valid
// Lease, whose duration is at least a second.
func TestRenewShortInterval(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := suite.Get(t).Client
	ns := controlplane.Namespace(t, c)
	u := &lease.Updater{Writer: c, Namespace: ns, Holder: "agent", Interval: 100 * time.Millisecond}
	g.Expect(u.Renew(t.Context())).To(Succeed())
	g.Expect(get(t, c, ns, lease.DefaultName)(g).Spec.LeaseDurationSeconds).To(Equal(ptr.To(int32(1))))
}

// TestRenewUnreachable: a renewal against an API server that does not
// answer fails with what it was doing.
func TestRenewUnreachable(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	cfg := rest.CopyConfig(suite.Get(t).Config)
	cfg.Host = "https://127.0.0.1:1" // nothing listens there
	cfg.Timeout = 5 * time.Second
	c, err := client.New(cfg, client.Options{Scheme: controlplane.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	err = (&lease.Updater{Writer: c, Namespace: "default", Holder: "agent"}).Renew(t.Context())
	g.Expect(err).To(MatchError(ContainSubstring("getting lease default/" + lease.DefaultName)))
}

// TestStart: Start renews at once, then every Interval, and returns nil when
// its context ends.
func TestStart(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := suite.Get(t).Client
	ns := controlplane.Namespace(t, c)

	slow := &lease.Updater{Writer: c, Namespace: ns, Name: "slow", Holder: "agent", Interval: time.Hour}
	fast := &lease.Updater{Writer: c, Namespace: ns, Name: "fast", Holder: "agent", Interval: 100 * time.Millisecond}
	g.Expect(slow.NeedLeaderElection()).To(BeFalse(), "every agent instance renews")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 2)
	go func() { done <- slow.Start(ctx) }()
	go func() { done <- fast.Start(ctx) }()

	g.Eventually(get(t, c, ns, "slow")).ShouldNot(BeNil(), "the first renewal does not wait for the interval")
	g.Eventually(renewTime(t, c, ns, "fast")).ShouldNot(BeZero())
	first := renewTime(t, c, ns, "fast")(g)
	g.Eventually(renewTime(t, c, ns, "fast")).Should(BeTemporally(">", first))

	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
	g.Eventually(done).Should(Receive(BeNil()))
}

// TestStartWhileUnreachable: while the API server is unreachable Start keeps
// trying, every Interval, and renews again as soon as it answers; it
// returns nil when its context ends, even then.
func TestStartWhileUnreachable(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	cp := suite.Get(t)
	ns := controlplane.Namespace(t, cp.Client)
	var down atomic.Bool
	writer := unreachableWhile(g, cp.Config, &down)
	u := &lease.Updater{Writer: writer, Namespace: ns, Holder: "agent", Interval: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)

	down.Store(true)
	go func() { done <- u.Start(ctx) }()
	g.Consistently(done).ShouldNot(Receive(), "a failed renewal does not stop Start")
	g.Expect(get(t, cp.Client, ns, lease.DefaultName)(g)).To(BeNil())

	down.Store(false)
	g.Eventually(renewTime(t, cp.Client, ns, lease.DefaultName)).ShouldNot(BeZero())
	down.Store(true)
	stale := renewTime(t, cp.Client, ns, lease.DefaultName)(g)
	g.Consistently(renewTime(t, cp.Client, ns, lease.DefaultName)).Should(BeTemporally("==", stale))
	down.Store(false)
	g.Eventually(renewTime(t, cp.Client, ns, lease.DefaultName)).Should(BeTemporally(">", stale))

	down.Store(true)
	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
}

// unreachableWhile returns a client of cfg whose every call fails, as
// against an API server that does not answer, while down is true.
func unreachableWhile(g Gomega, cfg *rest.Config, down *atomic.Bool) client.Client {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: controlplane.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	refused := func() error {
		if down.Load() {
			return errors.New("dial tcp: connect: connection refused")
		}
		return nil
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := refused(); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := refused(); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := refused(); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
	})
}

// TestRenewRecordsTheTime: canopy_agent_lease_renew_timestamp_seconds of
// the Lease is the time of its last successful renewal (the creation, then
// an update); a failed renewal leaves it.
func TestRenewRecordsTheTime(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	c := suite.Get(t).Client
	ns := controlplane.Namespace(t, c)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	u := &lease.Updater{Writer: c, Namespace: ns, Holder: "agent", Now: clock}

	g.Expect(u.Renew(t.Context())).To(Succeed())
	g.Expect(renewedAt(g, ns)).To(Equal(float64(now.Unix())))
	now = now.Add(lease.DefaultInterval)
	g.Expect(u.Renew(t.Context())).To(Succeed())
	g.Expect(renewedAt(g, ns)).To(Equal(float64(now.Unix())))

	renewed := now
	now = now.Add(lease.DefaultInterval)
	withWatch, err := client.NewWithWatch(suite.Get(t).Config, client.Options{Scheme: controlplane.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	failing := interceptor.NewClient(withWatch, interceptor.Funcs{
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			return errors.New("the hub is away")
		},
	})
	g.Expect((&lease.Updater{Writer: failing, Namespace: ns, Holder: "agent", Now: clock}).Renew(t.Context())).NotTo(Succeed())
	g.Expect(renewedAt(g, ns)).To(Equal(float64(renewed.Unix())))
}

// renewedAt reads canopy_agent_lease_renew_timestamp_seconds of the
// Lease DefaultName in ns from the registry the agent serves.
func renewedAt(g Gomega, ns string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "canopy_agent_lease_renew_timestamp_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["lease"] == lease.DefaultName {
				return m.GetGauge().GetValue()
			}
		}
	}
	g.Expect(ns).To(BeEmpty(), "no series for the Lease in namespace %s", ns)
	return 0
}
