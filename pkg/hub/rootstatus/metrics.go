package rootstatus

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Values of canopy_policy_compliance.
const (
	complianceValueUnknown      = -1
	complianceValueCompliant    = 0
	complianceValueNonCompliant = 1
	complianceValuePending      = 2
)

var (
	// complianceDesc describes canopy_policy_compliance, the compliance of
	// each root policy on each selected cluster, which complianceMetric
	// collects.
	complianceDesc = prometheus.NewDesc("canopy_policy_compliance",
		"Compliance of a root policy's replica on a managed cluster: 0 Compliant, 1 NonCompliant, 2 Pending, -1 unknown.",
		[]string{"namespace", "policy", "cluster"}, nil)

	// rolloutStoppedDesc describes canopy_policy_rollout_stopped, which
	// complianceMetric collects too: 1 for each root policy whose rollout
	// stopped, by the reason in its status.rollout.
	rolloutStoppedDesc = prometheus.NewDesc("canopy_policy_rollout_stopped",
		"1 for a root policy whose rollout stopped (status.rollout.phase Stopped), with the reason; no series otherwise.",
		[]string{"namespace", "policy", "reason"}, nil)

	// complianceMetric collects canopy_policy_compliance and
	// canopy_policy_rollout_stopped.
	complianceMetric = &complianceCollector{readers: map[*client.Reader]bool{}}

	// reconcileDuration measures whole reconciles, by controller.
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "canopy_rootstatus_reconcile_duration_seconds",
		Help:    "Duration of the reconciles of root policy and policy set status, status write included.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	}, []string{"controller"})
)

func init() {
	metrics.Registry.MustRegister(complianceMetric, reconcileDuration)
}

// complianceCollector reports canopy_policy_compliance at each scrape from
// the status of the root policies in the caches of the running managers.
//
// Note: it keeps no series of its own: the roots' status, cached anyway,
// holds every value, and a series kept per root and cluster would be 50,000
// at 1,000 clusters × 50 policies, a large share of the hub's heap.
type complianceCollector struct {
	mu      sync.Mutex
	readers map[*client.Reader]bool
}

// collectFrom collects from reader while mgr runs.
func (c *complianceCollector) collectFrom(mgr manager.Manager, reader client.Reader) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		key := &reader // a key of its own: a Reader need not be comparable
		c.mu.Lock()
		c.readers[key] = true
		c.mu.Unlock()
		<-ctx.Done()
		c.mu.Lock()
		delete(c.readers, key)
		c.mu.Unlock()
		return nil
	}))
}

// notReplica selects root policies: those without replica.IsReplica's label.
var notReplica = func() labels.Requirement {
	r, err := labels.NewRequirement(policyv1.RootPolicyLabel, selection.DoesNotExist, nil)
	if err != nil {
		panic(err) // a constant key: never
	}
	return *r
}()

// Describe implements prometheus.Collector.
func (c *complianceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- complianceDesc
	ch <- rolloutStoppedDesc
}

// Collect implements prometheus.Collector: one compliance series per root
// policy and cluster of its status, and one rollout series per root whose
// rollout stopped. A series two managers of one process report (only
// tests run several) is reported once.
func (c *complianceCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	readers := slices.Collect(maps.Keys(c.readers))
	c.mu.Unlock()
	seen := sets.New[string]()
	roots := client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(notReplica)}
	for _, reader := range readers {
		list := &policyv1.PolicyList{}
		if err := (*reader).List(context.Background(), list, roots, client.UnsafeDisableDeepCopy); err != nil {
			continue // a cache not started yet
		}
		for i := range list.Items {
			root := &list.Items[i]
			if r := root.Status.Rollout; r != nil && r.Phase == policyv1.RolloutStopped && !seen.Has(root.Namespace+"/"+root.Name) {
				seen.Insert(root.Namespace + "/" + root.Name)
				ch <- prometheus.MustNewConstMetric(rolloutStoppedDesc, prometheus.GaugeValue, 1, root.Namespace, root.Name, r.Reason)
			}
			for _, s := range root.Status.Status {
				if key := root.Namespace + "/" + root.Name + "/" + s.ClusterName; !seen.Has(key) {
					seen.Insert(key)
					ch <- prometheus.MustNewConstMetric(complianceDesc, prometheus.GaugeValue, complianceValue(s.ComplianceState),
						root.Namespace, root.Name, s.ClusterName)
				}
			}
		}
	}
}

func observeDuration(controller string, start time.Time) {
	reconcileDuration.WithLabelValues(controller).Observe(time.Since(start).Seconds())
}

func complianceValue(s policyv1.ComplianceState) float64 {
	switch s {
	case policyv1.Compliant:
		return complianceValueCompliant
	case policyv1.NonCompliant:
		return complianceValueNonCompliant
	case policyv1.Pending:
		return complianceValuePending
	}
	return complianceValueUnknown
}
