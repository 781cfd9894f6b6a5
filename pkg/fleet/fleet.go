package fleet

import (
	"context"
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

	"github.com/nodelifecycle/node-lifecycle-controller/internal/transient"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/reporter"
)

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
