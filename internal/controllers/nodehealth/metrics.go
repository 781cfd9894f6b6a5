package nodehealth

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

var (
	nodesByState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "node_lifecycle_nodes",
		Help: "Number of nodes in each health state (Healthy, NotReady, NeverReported, Unreachable).",
	}, []string{"state"})

	transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "node_lifecycle_node_transitions_total",
		Help: "Changes of a judged node's health state, by the state left and the state entered; a node that flaps shows here.",
	}, []string{"from", "to"})

	markDelay = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "node_lifecycle_mark_delay_seconds",
		Help: "Delay between a node's grace deadline and the moment it was marked Unknown.",
		// The interesting range is well under a second; the 1s bucket marks
		// the promise that a node is marked within a second of its deadline.
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	})

	markStage = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "node_lifecycle_mark_stage_seconds",
		Help: "The stages of node_lifecycle_mark_delay_seconds: wake (the deadline to the node handed to the work queue), " +
			"queue (waiting for a worker), look (the look before and between the reads), read (the live reads), patch (the mark's write). " +
			"A mark that no deadline wake started has only read and patch.",
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
	}, []string{"stage"})

	outagesExcused = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "node_lifecycle_apiserver_outage_seconds",
		Help:    "Spans during which the controller could not reach the apiserver; each is excused from every node's silence.",
		Buckets: []float64{0.1, 0.5, 1, 5, 10, 30, 60, 300, 900},
	})

	// updateNodeHealthDuration keeps kube-controller-manager's name, so that
	// dashboards built on it keep working.
	updateNodeHealthDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "node_collector_update_node_health_duration_seconds",
		Help:    "Duration in seconds of judging one node's health and acting on the verdict.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
	})
)

// The zone metrics keep kube-controller-manager's names.
var (
	zoneHealth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "node_collector_zone_health",
		Help: "Percentage of healthy nodes in each zone.",
	}, []string{"zone", "pool"})
	zoneSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "node_collector_zone_size",
		Help: "Number of counted nodes in each zone.",
	}, []string{"zone", "pool"})
	unhealthyNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "node_collector_unhealthy_nodes_in_zone",
		Help: "Number of not-ready nodes in each zone.",
	}, []string{"zone", "pool"})
	taintsApplied = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "node_collector_evictions_total",
		Help: "Number of NoExecute taints added to nodes, per zone.",
	}, []string{"zone", "pool"})
	zoneStates = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "node_lifecycle_zone_state",
		Help: "1 for the state each zone is in (Normal, PartialDisruption, FullDisruption), 0 for the others.",
	}, []string{"zone", "pool", "state"})
	partitionFreeze = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "node_lifecycle_partition_freeze",
		Help: "1 while a partition freeze holds NoExecute tainting, pod NotReady marking and eviction.",
	})
	maintenanceHeld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "node_lifecycle_maintenance_held_nodes",
		Help: "Number of unreachable or not-ready nodes whose NoExecute taint and evictions a maintenance condition holds.",
	})
)

// Metrics returns the package's metrics, which it registers with
// controller-runtime's registry.
func Metrics() []prometheus.Collector {
	return []prometheus.Collector{nodesByState, transitions, markDelay, markStage, outagesExcused, updateNodeHealthDuration,
		zoneHealth, zoneSize, unhealthyNodes, taintsApplied, zoneStates, partitionFreeze, maintenanceHeld, foreignWrites}
}

func init() { metrics.Registry.MustRegister(Metrics()...) }

// zoneLabel is a node's zone as a label value.
func zoneLabel(node *corev1.Node) string { return disruption.ZoneKey(node) }

// zoneGauges orders one model's publications of zone metrics: it holds the
// version of the state each zone was last published from, so that a worker
// holding an older state than the last published cannot bring back the
// series of a zone that another has just deleted.
type zoneGauges struct {
	mu        sync.Mutex
	published map[disruption.ZoneID]uint64
}

// publish brings a zone's gauges in line with the guard. A zone with no
// counted node, which the guard forgets, loses its series: otherwise the
// zone of a deleted or relabelled last node, or of a deleted pool, would stay
// on dashboards for as long as the process runs.
//
// The NoExecute taint counter keeps its series: deleting a counter drops
// the increments not yet scraped, and the last taints of a zone are often
// added just before its nodes are deleted. Its series, one per zone and pool
// ever tainted, go with the process.
func (g *zoneGauges) publish(id disruption.ZoneID, z disruption.ZoneSnapshot, version uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.published[id] > version {
		return
	}
	if g.published == nil {
		g.published = make(map[disruption.ZoneID]uint64)
	}
	g.published[id] = version
	size := z.Size()
	if size == 0 {
		deleteZoneMetrics(id)
		return
	}
	zoneSize.WithLabelValues(id.Zone, id.Pool).Set(float64(size))
	unhealthyNodes.WithLabelValues(id.Zone, id.Pool).Set(float64(z.NotReady))
	zoneHealth.WithLabelValues(id.Zone, id.Pool).Set(100 * float64(z.Ready) / float64(size))
	for _, s := range []disruption.ZoneState{disruption.ZoneNormal, disruption.ZonePartialDisruption, disruption.ZoneFullDisruption} {
		v := 0.0
		if s == z.State {
			v = 1
		}
		zoneStates.WithLabelValues(id.Zone, id.Pool, s.String()).Set(v)
	}
}

// deleteZoneMetrics deletes the zone's gauge series.
func deleteZoneMetrics(id disruption.ZoneID) {
	zoneSize.DeleteLabelValues(id.Zone, id.Pool)
	unhealthyNodes.DeleteLabelValues(id.Zone, id.Pool)
	zoneHealth.DeleteLabelValues(id.Zone, id.Pool)
	zoneStates.DeletePartialMatch(prometheus.Labels{"zone": id.Zone, "pool": id.Pool})
}

func setFreezeMetric(frozen bool) {
	v := 0.0
	if frozen {
		v = 1
	}
	partitionFreeze.Set(v)
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
	if from != health.StateUnjudged && to != health.StateUnjudged {
		transitions.WithLabelValues(from.String(), to.String()).Inc()
	}
}
