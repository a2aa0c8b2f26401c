package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// renewedAt is the time of the last renewal of each Lease the agent holds.
var renewedAt = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "canopy_agent_lease_renew_timestamp_seconds",
	Help: "Unix time of the agent's last successful renewal of a Lease: the one in its cluster namespace on the hub " +
		"(namespace is the cluster's name) and the one in its install namespace on the managed cluster.",
}, []string{"namespace", "lease"})

func init() {
	metrics.Registry.MustRegister(renewedAt)
}

// DefaultName is the Lease's name: the addon's name, as OCM's addon lease.
const DefaultName = "canopy-policy"

// DefaultInterval is how often the Lease is renewed.
const DefaultInterval = 10 * time.Second

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update

// Updater renews one of the agent's Leases. It is a manager.Runnable.
type Updater struct {
	// Writer writes the Lease: a client of the hub for the hub's Lease, or of
	// the managed cluster for the Lease OCM's klusterlet reads. Reads go
	// through it too, so give it a client that reads from the API server,
	// not a cache.
	Writer client.Client
	// Namespace is the Lease's namespace: the cluster namespace on the hub,
	// or the agent's install namespace on the managed cluster.
	Namespace string
	// Name is the Lease's name; empty means DefaultName.
	Name string
	// Holder names this agent instance in spec.holderIdentity.
	Holder string
	// Interval is the renewal period; zero means DefaultInterval.
	Interval time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Start renews the Lease at once and then every Interval until ctx ends.
// A failed renewal is logged and retried at the next tick: the hub may be
// away, and the agent goes on without it.
func (u *Updater) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("lease", u.name(), "namespace", u.Namespace)
	ticker := time.NewTicker(u.interval())
	defer ticker.Stop()
	for {
		if err := u.Renew(ctx); err != nil {
			log.Error(err, "Renewing the agent lease")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// NeedLeaderElection is false: every agent instance renews the lease.
func (u *Updater) NeedLeaderElection() bool { return false }

// Renew creates the Lease or moves its renewTime to now.
func (u *Updater) Renew(ctx context.Context) error {
	now := metav1.NewMicroTime(u.now())
	l := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: u.Namespace, Name: u.name()}
	err := u.Writer.Get(ctx, key, l)
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(u.Holder),
				LeaseDurationSeconds: ptr.To(durationSeconds(u.interval())),
				AcquireTime:          &now,
				RenewTime:            &now,
			},
		}
		if err := u.Writer.Create(ctx, l); err != nil {
			return fmt.Errorf("creating lease %s: %w", key, err)
		}
		u.renewed(now.Time)
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting lease %s: %w", key, err)
	}
	l.Spec.RenewTime = &now
	l.Spec.HolderIdentity = ptr.To(u.Holder)
	if err := u.Writer.Update(ctx, l); err != nil {
		return fmt.Errorf("renewing lease %s: %w", key, err)
	}
	u.renewed(now.Time)
	return nil
}

// renewed records a successful renewal at t in canopy_agent_lease_renew_timestamp_seconds.
func (u *Updater) renewed(t time.Time) {
	renewedAt.WithLabelValues(u.Namespace, u.name()).Set(float64(t.UnixNano()) / float64(time.Second))
}

// durationSeconds is the Lease's duration: three renewal intervals, in
// whole seconds. Note: at least one, since the API server refuses zero (an
// interval under a third of a second).
func durationSeconds(interval time.Duration) int32 {
	return max(1, int32(3*interval/time.Second)) //nolint:gosec // an interval of years is not a configuration
}

func (u *Updater) interval() time.Duration {
	if u.Interval == 0 {
		return DefaultInterval
	}
	return u.Interval
}

func (u *Updater) name() string {
	if u.Name == "" {
		return DefaultName
	}
	return u.Name
}

func (u *Updater) now() time.Time {
	if u.Now == nil {
		return time.Now()
	}
	return u.Now()
}
