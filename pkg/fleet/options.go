package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/reporter"
)

// Options describe a fleet. Zero fields take the defaults named.
type Options struct {
	// Nodes is how many nodes to run; required unless Pools are given.
	Nodes int
	// Zones spreads the nodes over this many zones, round robin. Default 1.
	Zones int
	// Region is the nodes' topology.kubernetes.io/region. Default "fleet".
	Region string
	// NamePrefix starts every node name. Default "fleet-".
	NamePrefix string
	// Pools, when given, shape the nodes in groups instead of Nodes, Zones
	// and NamePrefix, which must then be unset: each pool has its own count,
	// zones, name prefix, labels and taints.
	Pools []Pool
	// PodsPerNode bound to each node, running and Ready. Default 0.
	PodsPerNode int
	// ImagesPerNode is how many container images each node's status
	// lists, as a kubelet lists the images on its node: the 50 largest
	// unless configured otherwise, each with a digest and a tag. Every node
	// lists the same images (see Images). They make each Node several
	// kilobytes larger, in every watch event of it, as in a real cluster.
	// Default 0.
	ImagesPerNode int
	// PodNamespace holds the pods. Default "default".
	PodNamespace string
	// PodTolerations are added to every pod. The apiserver's admission adds
	// 300s tolerations for the not-ready and unreachable taints to pods
	// without their own.
	PodTolerations []corev1.Toleration
	// PodStatusEvery, if positive, has each pod's status written once per
	// that interval, as its node's kubelet reports a change. Each node
	// writes its pods in turn, and the nodes' turns are offset evenly, so
	// that the fleet writes Nodes*PodsPerNode/PodStatusEvery statuses a
	// second, spread evenly rather than in bursts; in real clusters pods
	// outnumber nodes 30 to 100 times, and their statuses change far more
	// often than the nodes'. The change written is a container restart:
	// restartCount one higher, the run that ended as lastState, running
	// and ready again since now. A kubelet writes a pod's status only when
	// it changes, and of the changes it reports for long-running pods, a
	// restart (a crash, an OOM kill) is the commonest that leaves readiness
	// alone: a container without a readiness probe that is running again
	// by the kubelet's next look is reported ready throughout. So the pod
	// stays Ready and no controller has cause to act, yet every controller
	// that watches pods receives and decodes each write. The writes are
	// strategic merge patches of the status, the kubelet's own kind of
	// request; PodStatusWrites counts them. A stopped node's pods are not
	// written until it resumes: its kubelet is gone. Zero, the default,
	// writes no pod status after the pods are created; without PodsPerNode
	// there is nothing to write.
	PodStatusEvery time.Duration

	// LeaseDurationSeconds, RenewIntervalFraction, NodeStatusUpdateFrequency
	// and NodeStatusReportFrequency are the reporters' timings; zero takes
	// the kubelet's defaults (40, 0.25, 10s, 5m).
	LeaseDurationSeconds      int32
	RenewIntervalFraction     float64
	NodeStatusUpdateFrequency time.Duration
	NodeStatusReportFrequency time.Duration
	// MaxBackoff caps the reporters' waits between failed lease renewals;
	// zero takes the kubelet's 7s. Shorten it with the lease duration.
	MaxBackoff time.Duration

	// Clock times the reporters; nil means the real clock.
	Clock clock.WithTicker
}

// Pool is a group of the fleet's nodes shaped alike, as a node pool (a
// machine set, a node group) of a cluster is.
type Pool struct {
	// Name names the pool for Fleet.Pool; required, and unique in the
	// fleet.
	Name string
	// Nodes is how many nodes the pool has; required.
	Nodes int
	// Zones spreads the pool's nodes over this many zones, round robin:
	// the fleet's zones <region>-a, <region>-b and on, which the pools
	// share. Default 1.
	Zones int
	// NamePrefix starts the name of each of the pool's nodes, followed by
	// its number in the pool. Default Name + "-".
	NamePrefix string
	// Labels are registered with each node, as a kubelet's --node-labels,
	// beside the fleet's own: the region and zone labels stay the fleet's,
	// which Zone and InZone report.
	Labels map[string]string
	// Taints are registered with each node, as a kubelet's
	// --register-with-taints.
	Taints []corev1.Taint
}

// pools returns the fleet's nodes as pools: Pools, or one pool of Nodes
// over Zones named NamePrefix and a number. It reports what is wrong with
// them.
func (o Options) pools() ([]Pool, error) {
	if len(o.Pools) == 0 {
		if o.Nodes <= 0 {
			return nil, fmt.Errorf("fleet: Nodes must be positive, got %d", o.Nodes)
		}
		return []Pool{{Name: "fleet", Nodes: o.Nodes, Zones: max(o.Zones, 1), NamePrefix: cmp.Or(o.NamePrefix, "fleet-")}}, nil
	}
	if o.Nodes != 0 || o.Zones != 0 || o.NamePrefix != "" {
		return nil, errors.New("fleet: with Pools, set each pool's Nodes, Zones and NamePrefix, not the fleet's")
	}
	pools := make([]Pool, 0, len(o.Pools))
	names, prefixes := map[string]bool{}, map[string]bool{}
	for i, p := range o.Pools {
		if p.Name == "" {
			return nil, fmt.Errorf("fleet: pool %d has no Name", i)
		}
		if names[p.Name] {
			return nil, fmt.Errorf("fleet: two pools are named %q", p.Name)
		}
		names[p.Name] = true
		if p.Nodes <= 0 {
			return nil, fmt.Errorf("fleet: pool %s: Nodes must be positive, got %d", p.Name, p.Nodes)
		}
		if p.Zones <= 0 {
			p.Zones = 1
		}
		if p.NamePrefix == "" {
			p.NamePrefix = p.Name + "-"
		}
		if prefixes[p.NamePrefix] {
			return nil, fmt.Errorf("fleet: two pools name their nodes %q and a number", p.NamePrefix)
		}
		prefixes[p.NamePrefix] = true
		pools = append(pools, p)
	}
	return pools, nil
}

func (o Options) withDefaults() Options {
	if o.Region == "" {
		o.Region = "fleet"
	}
	if o.PodNamespace == "" {
		o.PodNamespace = metav1.NamespaceDefault
	}
	if o.LeaseDurationSeconds == 0 {
		o.LeaseDurationSeconds = reporter.DefaultLeaseDurationSeconds
	}
	if o.RenewIntervalFraction == 0 {
		o.RenewIntervalFraction = reporter.DefaultRenewIntervalFraction
	}
	if o.NodeStatusUpdateFrequency == 0 {
		o.NodeStatusUpdateFrequency = reporter.DefaultNodeStatusUpdateFrequency
	}
	if o.NodeStatusReportFrequency == 0 {
		o.NodeStatusReportFrequency = reporter.DefaultNodeStatusReportFrequency
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}
