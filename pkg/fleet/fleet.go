package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/transient"
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

// Fleet is a set of running simulated nodes.
type Fleet struct {
	opts   Options
	client kubernetes.Interface
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// pods is the client of the pods, nil without them; closePods closes
	// its idle connections.
	pods      kubernetes.Interface
	closePods func()
	// podCreation is how long Start took to create the pods.
	podCreation time.Duration
	podWrites   writeCounts

	names   []string
	members map[string]*member
}

type member struct {
	zone     string
	pool     string
	reporter *reporter.Reporter
}

// Start registers the fleet's nodes and runs their reporters until Close.
// It returns once every node exists and, if asked for, its pods are bound
// and Ready.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (*Fleet, error) {
	pools, err := opts.pools()
	if err != nil {
		return nil, err
	}
	nodes := 0
	for _, p := range pools {
		nodes += p.Nodes
	}
	if opts.PodStatusEvery < 0 {
		return nil, fmt.Errorf("fleet: PodStatusEvery must not be negative, got %v", opts.PodStatusEvery)
	}
	if opts.ImagesPerNode < 0 {
		return nil, fmt.Errorf("fleet: ImagesPerNode must not be negative, got %d", opts.ImagesPerNode)
	}
	opts = opts.withDefaults()
	leaseDuration := time.Duration(opts.LeaseDurationSeconds) * time.Second
	client, closeIdle, err := reporter.NewHeartbeatClient(cfg, min(opts.NodeStatusUpdateFrequency, leaseDuration))
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &Fleet{opts: opts, client: client, cancel: cancel, members: make(map[string]*member, nodes)}

	// Spread the renewals evenly over one renewal interval, so that
	// thousands of nodes do not renew in bursts.
	renewEvery := time.Duration(float64(leaseDuration) * opts.RenewIntervalFraction)
	images := Images(opts.ImagesPerNode)
	i := 0
	for _, p := range pools {
		for j := range p.Nodes {
			name := fmt.Sprintf("%s%04d", p.NamePrefix, j)
			zone := fmt.Sprintf("%s-%c", opts.Region, 'a'+rune(j%p.Zones))
			labels := maps.Clone(p.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels[corev1.LabelTopologyRegion] = opts.Region
			labels[corev1.LabelTopologyZone] = zone
			r, err := reporter.New(client, opts.Clock, reporter.Config{
				NodeName:                  name,
				Labels:                    labels,
				RegisterWithTaints:        p.Taints,
				Addresses:                 []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)}},
				Images:                    images,
				LeaseDurationSeconds:      opts.LeaseDurationSeconds,
				RenewIntervalFraction:     opts.RenewIntervalFraction,
				NodeStatusUpdateFrequency: opts.NodeStatusUpdateFrequency,
				NodeStatusReportFrequency: opts.NodeStatusReportFrequency,
				StartOffset:               renewEvery * time.Duration(i) / time.Duration(nodes),
				MaxBackoff:                opts.MaxBackoff,
				OnRepeatedFailure:         closeIdle,
			})
			if err != nil {
				cancel()
				return nil, fmt.Errorf("fleet: node %s: %w", name, err)
			}
			f.names = append(f.names, name)
			f.members[name] = &member{zone: zone, pool: p.Name, reporter: r}
			i++
		}
	}

	// The nodes join in waves, as a cluster's nodes join over time: ten
	// thousand registrations at once, each a Node with its images, take
	// the apiserver past its requests' timeouts, and their retries keep
	// it there.
	for wave := range slices.Chunk(f.names, registrationWave) {
		for _, name := range wave {
			r := f.members[name].reporter
			f.wg.Go(func() { _ = r.Run(runCtx) })
		}
		if err := f.waitRegistered(ctx, wave); err != nil {
			f.Close()
			return nil, err
		}
	}
	if opts.PodsPerNode > 0 {
		if f.pods, f.closePods, err = newPodClient(cfg); err != nil {
			f.Close()
			return nil, fmt.Errorf("fleet: %w", err)
		}
		began := opts.Clock.Now()
		if err := f.createPods(ctx); err != nil {
			f.Close()
			return nil, err
		}
		f.podCreation = opts.Clock.Since(began)
		if opts.PodStatusEvery > 0 {
			f.churnPods(runCtx, began)
		}
	}
	return f, nil
}

// Close stops every reporter and waits for them. The Nodes, Leases and pods
// stay; the controller will find them silent.
func (f *Fleet) Close() {
	f.cancel()
	f.wg.Wait()
	if f.closePods != nil {
		f.closePods()
	}
}

// PodStatusWrites counts the pod status writes since Start; all zero
// without PodStatusEvery.
func (f *Fleet) PodStatusWrites() PodStatusWrites { return f.podWrites.snapshot() }

// PodCreation is how long Start took to create the pods and mark them
// running, on the fleet's clock; zero without pods.
func (f *Fleet) PodCreation() time.Duration { return f.podCreation }

// Client is the fleet's shared heartbeat client.
func (f *Fleet) Client() kubernetes.Interface { return f.client }

// Nodes returns the names of the fleet's nodes, in order.
func (f *Fleet) Nodes() []string { return slices.Clone(f.names) }

// Zone returns a node's zone.
func (f *Fleet) Zone(name string) string {
	if m := f.members[name]; m != nil {
		return m.zone
	}
	return ""
}

// Zones returns the zone names, in order.
func (f *Fleet) Zones() []string {
	var zones []string
	for _, n := range f.names {
		if z := f.members[n].zone; !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	return zones
}

// InZone returns the nodes of a zone.
func (f *Fleet) InZone(zone string) []string {
	var out []string
	for _, n := range f.names {
		if f.members[n].zone == zone {
			out = append(out, n)
		}
	}
	return out
}

// Pool returns the nodes of the pool named name, in order: with
// Options.Pools, that pool's; without, every node is in the pool "fleet".
func (f *Fleet) Pool(name string) []string {
	var out []string
	for _, n := range f.names {
		if f.members[n].pool == name {
			out = append(out, n)
		}
	}
	return out
}

// Stop stops the heartbeats of the named nodes, as if their kubelets died,
// and with them the writes of their pods' statuses. A write under way
// still lands.
func (f *Fleet) Stop(names ...string) {
	for _, n := range names {
		if m := f.members[n]; m != nil {
			m.reporter.Pause()
		}
	}
}

// Partition cuts the named nodes off from the control plane. Seen from the
// apiserver that is the same as Stop: no heartbeat arrives.
func (f *Fleet) Partition(names ...string) { f.Stop(names...) }

// Resume restarts the heartbeats of the named nodes: each renews its Lease
// and reports its status at once. Their pods' statuses are written again
// from their next turn on.
func (f *Fleet) Resume(names ...string) {
	for _, n := range names {
		if m := f.members[n]; m != nil {
			m.reporter.Resume()
		}
	}
}

// Stopped reports whether a node's heartbeats are stopped.
func (f *Fleet) Stopped(name string) bool {
	m := f.members[name]
	return m != nil && m.reporter.Paused()
}

// SetReady makes a node report Ready=True or, with a message, Ready=False,
// as a kubelet whose runtime failed would.
func (f *Fleet) SetReady(name string, ready bool, message string) {
	if m := f.members[name]; m != nil {
		m.reporter.Health().SetReady(ready, message)
	}
}

// WaitFor polls a node until cond holds or ctx ends. A read that may
// succeed if sent again (no answer in time, a 429, a server error), as a
// fleet of thousands registering at once makes some, is tried again: only
// an answer that no retry changes (403, say) ends the wait early.
func (f *Fleet) WaitFor(ctx context.Context, name string, cond func(*corev1.Node) bool) error {
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		node, err := f.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err != nil && transient.Is(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return cond(node), nil
	})
}

// ReadyIs returns a condition for WaitFor: the node's Ready condition has
// the given status.
func ReadyIs(status corev1.ConditionStatus) func(*corev1.Node) bool {
	return func(n *corev1.Node) bool {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == status
			}
		}
		return false
	}
}

// registrationWave is how many nodes register at once.
const registrationWave = 500

// waitRegistered waits until each named node exists.
func (f *Fleet) waitRegistered(ctx context.Context, names []string) error {
	for _, n := range names {
		if err := f.WaitFor(ctx, n, func(*corev1.Node) bool { return true }); err != nil {
			return fmt.Errorf("fleet: node %s did not register: %w", n, err)
		}
	}
	return nil
}
