package rootstatus

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
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
	// policyCompliance is the compliance of each root policy on each
	// selected cluster.
	policyCompliance = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "canopy_policy_compliance",
		Help: "Compliance of a root policy's replica on a managed cluster: " +
			"0 Compliant, 1 NonCompliant, 2 Pending, -1 unknown.",
	}, []string{"namespace", "policy", "cluster"})

	// reconcileDuration measures whole reconciles, by controller.
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "canopy_rootstatus_reconcile_duration_seconds",
		Help:    "Duration of the reconciles of root policy and policy set status, status write included.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	}, []string{"controller"})
)

func init() {
	metrics.Registry.MustRegister(policyCompliance, reconcileDuration)
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

// recordCompliance sets the series of a root's clusters and drops those of
// the clusters it no longer lists.
func recordCompliance(key types.NamespacedName, previous, current []policyv1.CompliancePerClusterStatus) {
	listed := sets.New[string]()
	for _, s := range current {
		listed.Insert(s.ClusterName)
		policyCompliance.WithLabelValues(key.Namespace, key.Name, s.ClusterName).Set(complianceValue(s.ComplianceState))
	}
	for _, s := range previous {
		if !listed.Has(s.ClusterName) {
			policyCompliance.DeleteLabelValues(key.Namespace, key.Name, s.ClusterName)
		}
	}
}

// forgetRoot drops the series of a deleted root.
func forgetRoot(key types.NamespacedName) {
	policyCompliance.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "policy": key.Name})
}
