package podeviction

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// podDeletions keeps kube-controller-manager's name.
	podDeletions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "taint_eviction_controller_pod_deletions_total",
		Help: "Pods deleted because of a NoExecute taint they do not tolerate long enough.",
	})

	evictionDelay = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "node_lifecycle_pod_eviction_delay_seconds",
		Help:    "Delay between a pod's eviction deadline and its deletion.",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	})

	evictionFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "node_lifecycle_pod_eviction_failures_total",
		Help: "Pod evictions that failed and will be tried again.",
	})

	pendingEvictions = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "node_lifecycle_pending_evictions",
		Help: "Pods whose eviction deadline is still ahead.",
	})
)

// Metrics returns the package's metrics, which it registers with
// controller-runtime's registry.
func Metrics() []prometheus.Collector {
	return []prometheus.Collector{podDeletions, evictionDelay, evictionFailures, pendingEvictions}
}

func init() { metrics.Registry.MustRegister(Metrics()...) }

// pendingCounts keeps the number of pending evictions per node, so that the
// gauge is their sum.
type pendingCounts struct {
	mu    sync.Mutex
	nodes map[string]int
	total int
}

func (p *pendingCounts) set(node string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes == nil {
		p.nodes = make(map[string]int)
	}
	p.total += n - p.nodes[node]
	if n == 0 {
		delete(p.nodes, node)
	} else {
		p.nodes[node] = n
	}
	pendingEvictions.Set(float64(p.total))
}
