package history

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	rowsWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "canopy_history_rows_written_total",
		Help: "Compliance transitions written to the history store (rows already stored are not counted).",
	})
	gapsWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "canopy_history_gaps_total",
		Help: "Gaps recorded: more transitions happened between two reads of a replica than its status history holds.",
	})
	storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "canopy_history_errors_total",
		Help: "Failed operations of the history store, by operation (open, read, write, prune).",
	}, []string{"op"})
)

// lagOf is the recorder whose lag canopy_history_lag_seconds reports: the
// last one set up (one per hub process).
var lagOf atomic.Pointer[Recorder]

func init() {
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "canopy_history_lag_seconds",
		Help: "How long the oldest replica change not yet in the history store has waited; 0 when caught up.",
	}, func() float64 {
		if r := lagOf.Load(); r != nil {
			return r.lag()
		}
		return 0
	})
	metrics.Registry.MustRegister(rowsWritten, gapsWritten, storeErrors, lag)
}
