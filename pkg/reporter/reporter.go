package reporter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// maxTries is how many writes a lease renewal or a status sync makes
	// before it gives up for the round (the kubelet's nodeStatusUpdateRetry).
	maxTries = 5
	// loopJitter is the largest share of an interval added at random to it,
	// so that reporters started together drift apart.
	loopJitter = 0.04
	// retryJitter is the largest share of a backoff taken off it at random,
	// so that reporters that failed together, as a fleet sharing a client
	// does while the apiserver restarts, do not retry together. It shortens
	// rather than lengthens, so that MaxBackoff still bounds every wait.
	retryJitter = 0.5
)

// Reporter writes one node's heartbeats: it registers the Node, renews its
// Lease and reports its status. Pause and Resume may be called at any time,
// from any goroutine.
type Reporter struct {
	client  kubernetes.Interface
	clock   clock.WithTicker
	cfg     Config
	setters []StatusSetter
	// random returns a number in [0, 1) at random for jitter; it is safe
	// for concurrent use. Tests replace it to make jitter predictable.
	random func() float64

	gate    gate
	running atomic.Bool

	// lease is the Lease as returned by the last successful write; only the
	// lease loop uses it.
	lease *coordinationv1.Lease
	// node holds the Node as the reporter's watch of it last saw it (see
	// watchNode), or nothing.
	node cache.Store
	// lastReport is when the status was last written, and reportDelay what
	// is added to NodeStatusReportFrequency before an unchanged status is
	// written again; only registration and the status loop, which never run
	// at once, use them.
	lastReport  time.Time
	reportDelay time.Duration
}

// New returns a reporter of the node cfg names, writing through c and timed
// by clk. Zero fields of cfg take the kubelet's defaults; an invalid cfg is
// an error that lists every problem.
func New(c kubernetes.Interface, clk clock.WithTicker, cfg Config) (*Reporter, error) {
	if c == nil {
		return nil, fmt.Errorf("reporter of node %q: nil client", cfg.NodeName)
	}
	if clk == nil {
		return nil, fmt.Errorf("reporter of node %q: nil clock", cfg.NodeName)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	setters := make([]StatusSetter, 0, len(cfg.Setters)+3)
	setters = append(setters, CapacitySetter(cfg.Capacity, cfg.Allocatable), AddressesSetter(cfg.Addresses), ImagesSetter(cfg.Images))
	setters = append(setters, cfg.Setters...)
	return &Reporter{
		client: c, clock: clk, cfg: cfg, setters: setters, random: rand.Float64,
		node: cache.NewStore(cache.MetaNamespaceKeyFunc),
	}, nil
}

// Health returns the switches the default setters report.
func (r *Reporter) Health() *Health {
	return r.cfg.Health
}

// NodeName returns the name of the reporter's node.
func (r *Reporter) NodeName() string {
	return r.cfg.NodeName
}

// Run registers the Node if it is missing, then renews the Lease and reports
// the status until ctx ends. It registers only once: a Node deleted later
// stays deleted, and its status reports fail as not found. It returns nil
// when ctx ends, and an error only when the reporter is already running.
func (r *Reporter) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return fmt.Errorf("reporter of node %q is already running", r.cfg.NodeName)
	}
	defer r.running.Store(false)
	log := klog.FromContext(ctx).WithValues("Node", klog.KRef("", r.cfg.NodeName))
	ctx = klog.NewContext(ctx, log)
	r.gate.start(ctx)
	defer r.gate.stop()

	log.V(1).Info("Starting node reporter")
	var created bool
	for {
		active, ok := r.gate.await(ctx)
		if !ok {
			return nil
		}
		var err error
		if created, err = r.register(active); err == nil {
			break
		}
		// Paused while registering: start over once resumed.
	}

	updateEvery := r.cfg.NodeStatusUpdateFrequency
	var wg sync.WaitGroup
	wg.Go(func() { r.watchNode(ctx) })
	wg.Go(func() {
		r.every(ctx, r.cfg.StartOffset, r.cfg.renewInterval(), r.renewLeaseUntilDone)
	})
	wg.Go(func() {
		if !created {
			// An adopted Node holds whatever was last written to it,
			// perhaps by the controller: report at once.
			if active, ok := r.gate.await(ctx); ok {
				r.syncStatus(active)
			}
		}
		r.every(ctx, r.cfg.StartOffset+r.jittered(updateEvery), updateEvery, r.syncStatus)
	})
	wg.Wait()
	log.V(1).Info("Stopped node reporter")
	return nil
}

// Pause stops the writing of heartbeats, Lease and status alike, as if the
// kubelet died or lost the network; writes under way are canceled. The
// loops keep running, so Resume restarts them at once.
func (r *Reporter) Pause() {
	r.gate.pause()
}

// Resume undoes Pause: the Lease is renewed and the status synced at once,
// then on the usual schedule.
func (r *Reporter) Resume() {
	r.gate.resume()
}

// Paused says whether the reporter is paused.
func (r *Reporter) Paused() bool {
	return r.gate.isPaused()
}

// every calls fn first after delay and then interval (jittered) after each
// call ends, while the reporter is not paused, until ctx ends. fn runs with
// a context that ends when the reporter is paused; after a pause, fn runs as
// soon as the reporter resumes.
func (r *Reporter) every(ctx context.Context, delay, interval time.Duration, fn func(context.Context)) {
	for {
		active, ok := r.gate.await(ctx)
		if !ok {
			return
		}
		if r.sleep(active, delay) {
			fn(active)
			delay = r.jittered(interval)
		}
		if active.Err() != nil {
			delay = 0
		}
	}
}

// sleep waits d on the reporter's clock and says whether ctx is still live.
func (r *Reporter) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return ctx.Err() == nil
	}
}

// jittered returns d lengthened by up to loopJitter of it.
func (r *Reporter) jittered(d time.Duration) time.Duration {
	return d + time.Duration(r.random()*loopJitter*float64(d))
}

// reportSpread returns the delay added to the report interval after a report
// of a changed status: uniform over [-1/2, 1/2) of NodeStatusReportFrequency,
// as the kubelet draws it, so that nodes whose status changed together (a
// fleet registered at once, a zone that came back) do not all report again
// in the same second one interval later.
func (r *Reporter) reportSpread() time.Duration {
	return time.Duration((r.random() - 0.5) * float64(r.cfg.NodeStatusReportFrequency))
}

// backoff doubles d up to the configured MaxBackoff.
func (r *Reporter) backoff(d time.Duration) time.Duration {
	return min(2*d, r.cfg.MaxBackoff)
}

// retryAfter is the wait before a retry that backs off d: d, capped at
// MaxBackoff, shortened by up to retryJitter of it. It is written here
// rather than taken from wait.Backoff or wait.Jitter because those draw from
// a source tests cannot seed and lengthen the wait past its cap.
func (r *Reporter) retryAfter(d time.Duration) time.Duration {
	d = min(d, r.cfg.MaxBackoff)
	return d - time.Duration(r.random()*retryJitter*float64(d))
}

func (r *Reporter) onRepeatedFailure() {
	if r.cfg.OnRepeatedFailure != nil {
		r.cfg.OnRepeatedFailure()
	}
}
