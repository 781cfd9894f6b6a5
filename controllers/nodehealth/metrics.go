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
		// 1ms to about 33s: the interesting range is well under a second.
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
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
