package sim

import (
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
)

// Config sets the simulated cluster and the controller's settings.
type Config struct {
	// Nodes and Zones: node i is in zone i mod Zones.
	Nodes, Zones int
	// PoolNodes is how many nodes (the last ones) a policy selects into
	// the pool "p", whose breaker is PoolMaxUnhealthy.
	PoolNodes        int
	PoolMaxUnhealthy intstr.IntOrString
	// PoolGrace is the grace of the pool's nodes; 0 means Grace.
	PoolGrace time.Duration
	// PodsPerNode: pod 0 of a node tolerates unreachable and not-ready for
	// TolerationSeconds, the others not at all (EvictionTimeout).
	PodsPerNode       int
	TolerationSeconds int64

	Grace            time.Duration
	EvictionTimeout  time.Duration
	MaintenanceGrace time.Duration
	Rate             float64
	FreezeThreshold  float64
	FreezeCooldown   time.Duration
	MonitorPeriod    time.Duration
	// LeaseEvery is how often a live kubelet renews its Lease; PodsEvery
	// how often it sets its pods' readiness back to what it sees.
	LeaseEvery, PodsEvery time.Duration
	// Step is the virtual time of one step.
	Step time.Duration
	// Interleave has a look due in a step cut in on another between its
	// decision and its write, as the looks of two workers interleave.
	Interleave bool
	// Settle is how long the world runs after the last event, with every
	// fault of limited length over, before the final checks.
	Settle time.Duration
}

// DefaultConfig is a small cluster at demo timings: 12 nodes in 3 zones, 4
// of them in a pool, a 20s grace.
func DefaultConfig() Config {
	return Config{
		Nodes: 12, Zones: 3, PoolNodes: 4, PoolMaxUnhealthy: intstr.FromString("50%"),
		PodsPerNode: 2, TolerationSeconds: 10,
		Grace: 20 * time.Second, EvictionTimeout: 30 * time.Second, MaintenanceGrace: 40 * time.Second,
		Rate: 1, FreezeThreshold: 0.6, FreezeCooldown: 20 * time.Second, MonitorPeriod: 5 * time.Second,
		LeaseEvery: 5 * time.Second, PodsEvery: 10 * time.Second,
		Step: time.Second, Settle: 6 * time.Minute,
	}
}

// ConfigFor returns the configuration a random sequence of the seed runs
// in: DefaultConfig, or one of a few other shapes of cluster and settings,
// so that the sequences cover small and larger clusters, one zone and
// several, a freeze turned off and a long cooldown.
func ConfigFor(seed uint64) Config {
	cfg := DefaultConfig()
	// Every shape, with its looks one after another and interleaved.
	cfg.Interleave = (seed/6)%2 == 1
	switch seed % 6 {
	case 1:
		cfg.Nodes, cfg.Zones, cfg.PoolNodes = 6, 2, 2
	case 2:
		cfg.Nodes, cfg.Zones, cfg.PoolNodes = 20, 4, 6
		cfg.PoolMaxUnhealthy, cfg.PoolGrace = intstr.FromString("25%"), 90*time.Second
	case 3:
		cfg.Nodes, cfg.Zones, cfg.PoolNodes = 10, 1, 0
		cfg.FreezeCooldown = time.Minute
	case 4:
		cfg.FreezeThreshold = 0
	case 5:
		cfg.Nodes, cfg.Zones, cfg.PoolNodes = 30, 3, 10
		cfg.EvictionTimeout, cfg.MaintenanceGrace = 90*time.Second, 20*time.Second
	}
	return cfg
}

// t0 is when every run starts.
var t0 = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

// kubelet is a node's ground truth: what its kubelet does, and what really
// landed.
type kubelet struct {
	name, zone, pool string
	// alive is true while the kubelet runs and reaches the network.
	alive bool
	// ready is what a live kubelet reports.
	ready bool
	// landed is when its last heartbeat reached the apiserver.
	landed time.Time
	// renewed and podsSet are when it last renewed its Lease and set its
	// pods.
	renewed, podsSet time.Time
	// maintenance is whether its maintenance condition should be True,
	// and maintenanceSince when it was set.
	maintenance      bool
	maintenanceSince time.Time
	// maintenanceEnded is when its maintenance condition was last cleared
	// in the cluster.
	maintenanceEnded time.Time
	// delivered is when the leader first saw its newest Lease, renewed at
	// seenRenewal: delivered by its watch, or read live.
	delivered, seenRenewal time.Time
	// lagUntil and lag delay the node's watch events to the controller.
	lagUntil time.Time
	lag      time.Duration
}

// world is the cluster: the objects the apiserver holds, and the kubelets.
type world struct {
	cfg      Config
	now      time.Time
	kubelets []*kubelet
	nodes    map[string]*corev1.Node
	leases   map[string]*coordinationv1.Lease
	pods     map[string][]corev1.Pod
	evicted  map[types.UID]time.Time
	rv       int
	// changed lists the nodes written since the controllers last heard.
	changed []string
	paused  bool
	// freeze is the partition freeze the cluster keeps (on the
	// kube-node-lease Namespace), nil for none.
	freeze *disruption.Record
	// unwatched are the recent spans no leader could mark a node in (its
	// outages) that the cluster keeps beside it.
	unwatched []disruption.Span
	// down is true during an apiserver outage; refuse during refused
	// writes.
	down, refuse bool
	// denied is until when the controller's patches of each Node (not of
	// its status) are refused; a zero time means to the end.
	denied map[string]time.Time
	// downSince and upSince are when the last outage began and ended.
	downSince, upSince time.Time
	// ends are the ends of faults of limited length.
	ends []pending
}

// pending is something that happens at a later time.
type pending struct {
	at time.Time
	do func()
}

func newWorld(cfg Config) *world {
	w := &world{cfg: cfg, now: t0, nodes: map[string]*corev1.Node{}, leases: map[string]*coordinationv1.Lease{},
		pods: map[string][]corev1.Pod{}, evicted: map[types.UID]time.Time{}, denied: map[string]time.Time{}}
	for i := range cfg.Nodes {
		k := &kubelet{name: fmt.Sprintf("node-%d", i), zone: fmt.Sprintf("zone-%d", i%cfg.Zones),
			alive: true, ready: true, landed: t0, renewed: t0, podsSet: t0, seenRenewal: t0}
		if i >= cfg.Nodes-cfg.PoolNodes {
			k.pool = "p"
		}
		w.kubelets = append(w.kubelets, k)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.name, UID: types.UID("uid-" + k.name),
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
			Labels:            map[string]string{corev1.LabelTopologyRegion: "r", corev1.LabelTopologyZone: k.zone}}}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}
		w.nodes[k.name] = node
		w.bump(node)
		w.leases[k.name] = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: k.name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(k.name), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: &metav1.MicroTime{Time: t0}}}
		for p := range cfg.PodsPerNode {
			pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-pod-%d", k.name, p),
				UID: types.UID(fmt.Sprintf("uid-%s-pod-%d", k.name, p))}}
			pod.Spec.NodeName = k.name
			if p == 0 {
				for _, key := range []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady} {
					pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: key,
						Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(cfg.TolerationSeconds)})
				}
			}
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			w.pods[k.name] = append(w.pods[k.name], pod)
		}
	}
	return w
}

// bump gives an object written a new resourceVersion, and has the watches
// tell of it.
func (w *world) bump(node *corev1.Node) {
	w.rv++
	node.ResourceVersion = strconv.Itoa(w.rv)
	w.changed = append(w.changed, node.Name)
}

// heard returns the nodes written since it was last called.
func (w *world) heard() []string {
	out := w.changed
	w.changed = nil
	return out
}

// deniedNode reports whether the controller's patches of the Node are
// refused now.
func (w *world) deniedNode(name string) bool {
	_, ok := w.denied[name]
	return ok
}

func (w *world) kubelet(name string) *kubelet {
	for _, k := range w.kubelets {
		if k.name == name {
			return k
		}
	}
	return nil
}

// settings returns the settings a node follows.
func (w *world) settings(node *corev1.Node) policy.Settings {
	s := policy.Settings{
		Grace:              health.Grace{Monitor: w.cfg.Grace, Startup: w.cfg.Grace},
		PodEvictionTimeout: w.cfg.EvictionTimeout,
		MaintenanceGrace:   w.cfg.MaintenanceGrace,
		Disruption:         w.defaults(),
	}
	if k := w.kubelet(node.Name); k != nil && k.pool != "" {
		s.Pool = k.pool
		s.Disruption = w.pool()
		s.Grace = health.Grace{Monitor: w.graceOf(k), Startup: w.graceOf(k)}
	}
	return s
}

// graceOf returns the grace of a node's pool.
func (w *world) graceOf(k *kubelet) time.Duration {
	if k.pool != "" && w.cfg.PoolGrace > 0 {
		return w.cfg.PoolGrace
	}
	return w.cfg.Grace
}

// defaults are the disruption settings of the nodes no policy selects.
func (w *world) defaults() disruption.Pool {
	return disruption.Pool{Rates: disruption.Rates{Normal: w.cfg.Rate, Secondary: w.cfg.Rate / 10, LargeClusterSizeThreshold: 50},
		UnhealthyZoneThreshold: 0.55}
}

// pool is the disruption settings of the pool "p".
func (w *world) pool() disruption.Pool {
	p := w.defaults()
	m := w.cfg.PoolMaxUnhealthy
	p.MaxUnhealthy = &m
	p.Paused = w.paused
	return p
}

// guardConfig is the guard's configuration.
func (w *world) guardConfig() disruption.Config {
	d := w.defaults()
	return disruption.Config{Rates: d.Rates, UnhealthyZoneThreshold: d.UnhealthyZoneThreshold,
		FreezeThreshold: w.cfg.FreezeThreshold, FreezeWindow: w.cfg.Grace, FreezeCooldown: w.cfg.FreezeCooldown}
}

// apply makes an event happen now.
func (w *world) apply(e Event, c *controllers) {
	later := func(d time.Duration, do func()) { w.ends = append(w.ends, pending{at: w.now.Add(d), do: do}) }
	kill := func(i int) { w.kubelets[i].alive = false }
	revive := func(i int) { k := w.kubelets[i]; k.alive, k.ready = true, true }
	switch e.Kind {
	case Kill:
		kill(e.Node)
	case Revive:
		revive(e.Node)
	case NotReady:
		k := w.kubelets[e.Node]
		k.alive, k.ready = true, false
	case Flap:
		kill(e.Node)
		later(e.For, func() { revive(e.Node) })
	case ZoneLoss:
		for i := range w.kubelets {
			if i%w.cfg.Zones == e.Zone {
				kill(i)
			}
		}
	case Partition:
		for _, i := range e.Nodes {
			kill(i)
		}
		if e.For > 0 {
			nodes := e.Nodes
			later(e.For, func() {
				for _, i := range nodes {
					revive(i)
				}
			})
		}
	case MaintenanceOn:
		if k := w.kubelets[e.Node]; !k.maintenance {
			k.maintenance, k.maintenanceSince = true, w.now
		}
	case MaintenanceOff:
		w.kubelets[e.Node].maintenance = false
	case Pause, Unpause:
		w.paused = e.Kind == Pause
		c.policyChanged()
	case Outage:
		if !w.down {
			w.down, w.downSince = true, w.now
			later(e.For, func() {
				w.down, w.upSince = false, w.now
				c.outageEnded(w.downSince, w.now)
			})
		}
	case Lag:
		k := w.kubelets[e.Node]
		k.lag, k.lagUntil = e.For, w.now.Add(e.For)
	case RefuseWrites:
		w.refuse = true
		later(e.For, func() { w.refuse = false })
	case Deny:
		name := w.kubelets[e.Node].name
		w.denied[name] = time.Time{}
		if e.For > 0 {
			until := w.now.Add(e.For)
			w.denied[name] = until
			later(e.For, func() {
				if w.denied[name].Equal(until) {
					delete(w.denied, name)
				}
			})
		}
	case LoseWake:
		c.leader.loseWake(w.kubelets[e.Node].name)
		c.obs.wakeLost[w.kubelets[e.Node].name] = w.now
	case PodsReady:
		if w.down {
			break
		}
		name := w.kubelets[e.Node].name
		for i := range w.pods[name] {
			setPodReady(&w.pods[name][i], corev1.ConditionTrue)
		}
		// The pod watch has a node whose pods turn Ready looked at.
		for _, c := range []*controller{c.leader, c.old} {
			if c != nil {
				c.wakeNow(name)
			}
		}
	case Failover:
		c.failover()
	}
}

// endsDue runs the ends of faults that are due.
func (w *world) endsDue() {
	var rest []pending
	var due []pending
	for _, p := range w.ends {
		if p.at.After(w.now) {
			rest = append(rest, p)
		} else {
			due = append(due, p)
		}
	}
	w.ends = rest
	for _, p := range due {
		p.do()
	}
}
