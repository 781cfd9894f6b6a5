package nodehealth

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

var (
	nodesByState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "node_lifecycle_nodes",
		Help: "Number of nodes in each health state (Healthy, NotReady, NeverReported, Unreachable).",
	}, []string{"state"})

	markDelay = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "node_lifecycle_mark_delay_seconds",
		Help: "Delay between a node's grace deadline and the moment it was marked Unknown.",
		// The interesting range is well under a second; the 1s bucket marks
		// the promise that a node is marked within a second of its deadline.
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	})

	// updateNodeHealthDuration keeps kube-controller-manager's name, so that
	// dashboards built on it keep working.
	updateNodeHealthDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "node_collector_update_node_health_duration_seconds",
		Help:    "Duration in seconds of judging one node's health and acting on the verdict.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
	})
)

func init() {
	metrics.Registry.MustRegister(nodesByState, markDelay, updateNodeHealthDuration)
}

// resetStateGauge zeroes the per-state gauge, for a controller that starts
// with an empty tracker.
func resetStateGauge() {
	for _, s := range health.States {
		nodesByState.WithLabelValues(s.String()).Set(0)
	}
}

// moveState moves one node from one state's count to another's.
func moveState(from, to health.State) {
	if from == to {
		return
	}
	if from != health.StateUnjudged {
		nodesByState.WithLabelValues(from.String()).Dec()
	}
	if to != health.StateUnjudged {
		nodesByState.WithLabelValues(to.String()).Inc()
	}
}
