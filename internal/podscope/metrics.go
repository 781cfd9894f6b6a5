package podscope

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

const (
	scopeNode    = "node"
	scopeCluster = "cluster"
)

// podWatches counts the pod watches open, by scope: "node" for the watches
// of one node's pods, "cluster" (0 or 1) for the watch of every pod.
var podWatches = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "node_lifecycle_pod_watches",
	Help: `Pod watches open: scope="node" counts the watches of one node's pods, scope="cluster" is 1 while every pod is watched.`,
}, []string{"scope"})

// Metrics returns the package's metrics, which it registers with
// controller-runtime's registry.
func Metrics() []prometheus.Collector { return []prometheus.Collector{podWatches} }

func init() { metrics.Registry.MustRegister(Metrics()...) }
