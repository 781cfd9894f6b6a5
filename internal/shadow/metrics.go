package shadow

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	actions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "node_lifecycle_dry_run_actions_total",
		Help: "What a dry run would have written, by action: mark, taint, untaint, noschedule, mark-pod-not-ready, evict.",
	}, []string{"action"})

	upstreamActions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "node_lifecycle_dry_run_upstream_actions_total",
		Help: "What the controller beside a dry run did, as the dry run saw it, by action: mark, taint, evict.",
	}, []string{"action"})

	differences = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "node_lifecycle_dry_run_held_total",
		Help: "Actions of the controller beside a dry run that the dry run held back, by action (taint, evict) and reason.",
	}, []string{"action", "reason"})
)

// Metrics returns the package's metrics, which it registers with
// controller-runtime's registry.
func Metrics() []prometheus.Collector {
	return []prometheus.Collector{actions, upstreamActions, differences}
}

func init() { metrics.Registry.MustRegister(Metrics()...) }
