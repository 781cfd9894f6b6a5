package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// nodeSeen is what the bench last saw of one node.
type nodeSeen struct {
	// leaseRenew is the last Lease renewTime seen, written by the fleet
	// with this machine's clock.
	leaseRenew time.Time
	// statusBeat is when the bench saw the kubelet's Ready heartbeat
	// change; readyBeat is that heartbeat. A status report is a heartbeat
	// too, and the condition's own timestamp has only whole seconds.
	statusBeat time.Time
	readyBeat  time.Time
	ready      corev1.ConditionStatus
	// unreachable is true while the node carries the unreachable NoExecute
	// taint.
	unreachable bool
	// lifecycleTaint names a node lifecycle taint the node carries, "" when
	// it has none.
	lifecycleTaint string
}

// lastHeartbeat is the later of the node's last Lease renewal and its last
// status report.
func (n *nodeSeen) lastHeartbeat() time.Time {
	if n.statusBeat.After(n.leaseRenew) {
		return n.statusBeat
	}
	return n.leaseRenew
}

func isReady(n *nodeSeen) bool { return n.ready == corev1.ConditionTrue }

// isRecovered says whether a node is Ready and free of lifecycle taints.
func isRecovered(n *nodeSeen) bool { return isReady(n) && n.lifecycleTaint == "" }

// observer watches every Node and node Lease of one run's control plane,
// from before the contender starts to the end of its run, so that what it
// sees does not depend on the contender.
type observer struct {
	cancel context.CancelFunc
	client kubernetes.Interface

	mu    sync.Mutex
	nodes map[string]*nodeSeen
	rec   *recording // nil between runs
}

// recording is what the observer saw during one contender's run.
type recording struct {
	// stopped holds the nodes whose heartbeats were stopped, and when.
	stopped map[string]time.Time
	// marked and tainted hold when each stopped node was first seen
	// Ready=Unknown and with the unreachable NoExecute taint, after it was
	// stopped.
	marked, tainted map[string]time.Time
	// heartbeat is each stopped node's last heartbeat, as it was when the
	// node was marked.
	heartbeat map[string]time.Time
	// falsePositives holds the nodes that were not stopped but were seen
	// not Ready or with a lifecycle taint.
	falsePositives map[string]falsePositive
	// pods holds, for each stopped node whose pods are watched, when each
	// of its pods was first seen not Ready (zero while it is Ready).
	pods map[string]map[string]time.Time
	// leaseLag holds, from the stop on, how long after its renewTime each
	// Lease renewal of a node that was not stopped reached the bench: the
	// apiserver's latency for the kubelets' heartbeats, and the watch's.
	leaseLag []float64
}

// falsePositive is a node judged wrongly, as first seen.
type falsePositive struct {
	At   time.Time `json:"at"`
	What string    `json:"what"`
}

// startObserver starts the watches and waits for their first lists.
func startObserver(ctx context.Context, cfg *rest.Config) (*observer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("build the observer's client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	o := &observer{cancel: cancel, client: cs, nodes: map[string]*nodeSeen{}}
	nodes := informers.NewSharedInformerFactory(cs, 0)
	leases := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(corev1.NamespaceNodeLease))
	for what, w := range map[string]struct {
		informer cache.SharedIndexInformer
		saw      func(any)
	}{
		"nodes":  {nodes.Core().V1().Nodes().Informer(), o.sawNode},
		"leases": {leases.Coordination().V1().Leases().Informer(), o.sawLease},
	} {
		if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    w.saw,
			UpdateFunc: func(_, obj any) { w.saw(obj) },
		}); err != nil {
			cancel()
			return nil, fmt.Errorf("watch %s: %w", what, err)
		}
	}
	nodes.Start(ctx.Done())
	leases.Start(ctx.Done())
	for _, f := range []informers.SharedInformerFactory{nodes, leases} {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				cancel()
				return nil, fmt.Errorf("watch %v: the first list did not complete", typ)
			}
		}
	}
	return o, nil
}

// stop ends the watches.
func (o *observer) stop() { o.cancel() }

func (o *observer) seen(name string) *nodeSeen {
	n := o.nodes[name]
	if n == nil {
		n = &nodeSeen{}
		o.nodes[name] = n
	}
	return n
}

func (o *observer) sawLease(obj any) {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok || lease.Spec.RenewTime == nil {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.seen(lease.Name)
	if !lease.Spec.RenewTime.After(n.leaseRenew) {
		return
	}
	n.leaseRenew = lease.Spec.RenewTime.Time
	if r := o.rec; r != nil && len(r.stopped) > 0 {
		if _, stopped := r.stopped[lease.Name]; !stopped {
			r.leaseLag = append(r.leaseLag, now.Sub(n.leaseRenew).Seconds())
		}
	}
}

func (o *observer) sawNode(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.seen(node.Name)
	n.ready = corev1.ConditionUnknown
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		n.ready = c.Status
		// Only the kubelet says True or False; a controller's Unknown mark
		// is not a heartbeat.
		if c.Status != corev1.ConditionUnknown && !c.LastHeartbeatTime.Time.Equal(n.readyBeat) {
			n.readyBeat, n.statusBeat = c.LastHeartbeatTime.Time, now
		}
	}
	n.unreachable, n.lifecycleTaint = false, ""
	for _, t := range node.Spec.Taints {
		if t.Key != corev1.TaintNodeUnreachable && t.Key != corev1.TaintNodeNotReady {
			continue
		}
		if n.lifecycleTaint == "" {
			n.lifecycleTaint = t.Key + ":" + string(t.Effect)
		}
		if t.Key == corev1.TaintNodeUnreachable && t.Effect == corev1.TaintEffectNoExecute {
			n.unreachable = true
		}
	}
	if o.rec != nil {
		o.rec.note(node.Name, n, now)
	}
}

// note records what a node's new state means for the run.
func (r *recording) note(name string, n *nodeSeen, now time.Time) {
	if _, stopped := r.stopped[name]; !stopped {
		if _, seen := r.falsePositives[name]; seen {
			return
		}
		switch {
		case n.ready != corev1.ConditionTrue:
			r.falsePositives[name] = falsePositive{At: now, What: "Ready=" + string(n.ready)}
		case n.lifecycleTaint != "":
			r.falsePositives[name] = falsePositive{At: now, What: "taint " + n.lifecycleTaint}
		}
		return
	}
	if _, ok := r.marked[name]; !ok && n.ready == corev1.ConditionUnknown {
		r.marked[name] = now
		r.heartbeat[name] = n.lastHeartbeat()
	}
	if _, ok := r.tainted[name]; !ok && n.unreachable {
		r.tainted[name] = now
	}
}

// beginRun starts recording for one controller's run, checking every node's
// state as it is now.
func (o *observer) beginRun() {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rec = &recording{
		stopped:        map[string]time.Time{},
		marked:         map[string]time.Time{},
		tainted:        map[string]time.Time{},
		heartbeat:      map[string]time.Time{},
		falsePositives: map[string]falsePositive{},
		pods:           map[string]map[string]time.Time{},
	}
	for name, n := range o.nodes {
		o.rec.note(name, n, now)
	}
}

// stopping records that the named nodes' heartbeats stop now; from here on
// they are expected to be marked and tainted.
func (o *observer) stopping(names []string) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, name := range names {
		o.rec.stopped[name] = now
	}
}

// endRun stops recording and returns what was recorded.
func (o *observer) endRun() *recording {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.rec
	o.rec = nil
	return r
}

// countWhere counts the nodes that satisfy cond.
func (o *observer) countWhere(cond func(*nodeSeen) bool) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := 0
	for _, n := range o.nodes {
		if cond(n) {
			c++
		}
	}
	return c
}

// allMarkedAndTainted says whether every stopped node has been seen both
// Ready=Unknown and tainted.
func (o *observer) allMarkedAndTainted() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.rec.marked) == len(o.rec.stopped) && len(o.rec.tainted) == len(o.rec.stopped)
}

// waitFor polls cond until it holds, ctx ends or timeout passes.
func (o *observer) waitFor(ctx context.Context, what string, timeout time.Duration, cond func() bool) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s: %w", what, err)
	}
	return nil
}
