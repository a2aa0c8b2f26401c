package propagator

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

var (
	// propagationFailures counts failed replica writes per root policy.
	propagationFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "canopy_propagation_failures_total",
		Help: "Replica creations, updates and deletions of a root policy that failed.",
	}, []string{"namespace", "policy"})

	// hubTemplateResolutions counts the resolutions of the hub templates of
	// a root's replicas; remembered ones are not counted.
	hubTemplateResolutions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "canopy_hub_template_resolutions_total",
		Help: "Resolutions of the hub templates of a root policy's replicas (one per replica resolved).",
	}, []string{"namespace", "policy"})

	// hubTemplateFailures is, per root policy, the number of its replicas'
	// templates whose hub templates failed to resolve at its last reconcile;
	// a root without failures has no series.
	hubTemplateFailures = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "canopy_hub_template_failures",
		Help: "Policy templates of a root policy's replicas whose hub templates failed to resolve (one per template and cluster) at its last reconcile.",
	}, []string{"namespace", "policy"})

	// serviceAccountResolvers is 1 for each ServiceAccount whose hub
	// template resolver runs.
	serviceAccountResolvers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "canopy_hub_template_service_account_resolvers",
		Help: "Hub template resolvers running for the ServiceAccounts of spec.hubTemplateOptions (1 each).",
	}, []string{"namespace", "service_account"})

	// reconcileDuration measures whole reconciles of root policies.
	reconcileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "canopy_propagator_reconcile_duration_seconds",
		Help:    "Duration of the propagator's reconciles of root policies, status write included.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	})
)

func init() {
	metrics.Registry.MustRegister(propagationFailures, hubTemplateResolutions, hubTemplateFailures, serviceAccountResolvers, reconcileDuration)
}

func observeDuration(start time.Time) {
	reconcileDuration.Observe(time.Since(start).Seconds())
}

// forgetPolicy drops the series of a deleted root policy.
func forgetPolicy(key types.NamespacedName) {
	propagationFailures.DeleteLabelValues(key.Namespace, key.Name)
	hubTemplateResolutions.DeleteLabelValues(key.Namespace, key.Name)
	hubTemplateFailures.DeleteLabelValues(key.Namespace, key.Name)
}

// setHubTemplateFailures sets canopy_hub_template_failures of a root
// policy, dropping its series when there are none.
func setHubTemplateFailures(root *policyv1.Policy, failures int) {
	if failures == 0 {
		hubTemplateFailures.DeleteLabelValues(root.Namespace, root.Name)
		return
	}
	hubTemplateFailures.WithLabelValues(root.Namespace, root.Name).Set(float64(failures))
}
