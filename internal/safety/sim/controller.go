package sim

import (
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// controller is one controller process: a model, its cache of the
// cluster, and its wakes. It carries the model's decisions out as the
// reconcilers do. A phantom one writes nothing: it is the old leader,
// carrying on as if it had not died, to compare the new one with.
type controller struct {
	w       *world
	model   *safety.Model
	phantom bool
	// nodes and leases are its cache; delivery holds watch events not
	// delivered yet, by when they are due.
	nodes    map[string]*corev1.Node
	leases   map[string]*coordinationv1.Lease
	delivery []delivered
	// lastDelivery is when each node's last watch event is due.
	lastDelivery map[string]time.Time
	// wakes holds each node's next look.
	wakes map[string]time.Time
	// resynced is when the safety resync last ran.
	resynced time.Time
	// obs records what the controller did, for the checks.
	obs *observer
	// freezeDirty is true while the cluster's freeze record is behind the
	// model's.
	freezeDirty bool
	// started is when the process started.
	started time.Time
	// failures counts each node's looks that failed in a row: the next
	// look after a failure waits as the work queue's backoff has it.
	failures map[string]int
}

// delivered is a watch event on its way to the controller.
type delivered struct {
	at    time.Time
	node  *corev1.Node
	lease *coordinationv1.Lease
}

// controllers holds the leader, and the phantom of the last one to die.
type controllers struct {
	w          *world
	leader     *controller
	old        *controller
	failedOver time.Time
	// oldFrozen is true while the old leader holds the freeze it held when
	// it died, and had written down.
	oldFrozen bool
	obs       *observer
}

func newController(w *world, obs *observer, unled time.Time) *controller {
	c := &controller{w: w, nodes: map[string]*corev1.Node{}, leases: map[string]*coordinationv1.Lease{},
		wakes: map[string]time.Time{}, lastDelivery: map[string]time.Time{}, obs: obs, resynced: w.now, started: w.now,
		failures: map[string]int{}}
	c.model = safety.New(health.NewTracker(), disruption.NewGuard(w.guardConfig()), w.cfg.Grace)
	c.model.Guard.SetPool("p", ptrTo(w.pool()), w.now)
	// A new process lists everything before it judges anything.
	for name, node := range w.nodes {
		c.nodes[name] = node.DeepCopy()
		c.leases[name] = w.leases[name].DeepCopy()
	}
	nodes := make([]*corev1.Node, 0, len(c.nodes))
	for _, k := range w.kubelets {
		nodes = append(nodes, c.nodes[k.name])
	}
	if unled.Before(w.now) {
		// Taken over from a leader that last renewed its Lease then.
		c.model.Unwatched(unled, w.now, w.now)
	}
	c.apply(c.model.Seed(nodes, w.settings, safety.Kept{Freeze: w.freeze, Unwatched: w.unwatched}, w.now, w.now))
	for _, k := range w.kubelets {
		c.wakes[k.name] = w.now
	}
	return c
}

func ptrTo[T any](v T) *T { return &v }

// policyChanged tells both controllers of the pool's new settings.
func (cs *controllers) policyChanged() {
	for _, c := range []*controller{cs.leader, cs.old} {
		if c == nil {
			continue
		}
		c.apply(c.model.Guard.SetPool("p", ptrTo(c.w.pool()), c.w.now))
		for _, k := range c.w.kubelets {
			if k.pool == "p" {
				c.wakes[k.name] = c.w.now
			}
		}
	}
}

// outageEnded excuses the outage from every node's silence, as the
// controller does once it reaches the apiserver again.
func (cs *controllers) outageEnded(from, to time.Time) {
	for _, c := range []*controller{cs.leader, cs.old} {
		if c != nil {
			c.model.Excuse(from, to, c.w.now)
		}
	}
	// The leader keeps it in the cluster at once.
	cs.leader.freezeDirty = true
	cs.leader.keepFreeze()
}

// failover kills the leader: it becomes the phantom, and a new process
// starts from the cluster alone.
func (cs *controllers) failover() {
	cs.leader.phantom = true
	cs.old = cs.leader
	// The freeze a new leader must keep is the one the cluster kept: one
	// the old leader held but could not write down (its writes refused)
	// is known to no one else. The new leader judges the partition afresh
	// from the cluster, and the ground truth's check (freeze a partition)
	// holds it to that.
	cs.oldFrozen = cs.old.model.Guard.Frozen() && cs.w.freeze != nil
	// The old leader last renewed its Lease when the apiserver last
	// answered it.
	renewed := cs.w.now
	if cs.w.down {
		renewed = cs.w.downSince
	}
	cs.leader = newController(cs.w, cs.obs, renewed)
	cs.failedOver = cs.w.now
	cs.obs.failoverTimes = append(cs.obs.failoverTimes, cs.w.now)
	for name := range cs.w.denied {
		cs.obs.deniedAtFailover[name] = cs.w.now
	}
	cs.obs.oldCooling, cs.obs.oldHot = time.Time{}, time.Time{}
	cs.obs.keptAtFailover = time.Time{}
	if f := cs.w.freeze; f != nil {
		cs.obs.keptAtFailover = f.ClearSince
	}
}

// loseWake drops a node's next look.
func (c *controller) loseWake(name string) { delete(c.wakes, name) }

// hear delivers the watch events of the kubelets' writes: at once, or
// after the node's lag.
func (c *controller) hear(nodesChanged, leasesRenewed []string) {
	now := c.w.now
	// A watch delivers one object's changes in order: a lagging one
	// delays them, and never lets a later change overtake an earlier.
	at := func(name string) time.Time {
		t := now
		if k := c.w.kubelet(name); k != nil && now.Before(k.lagUntil) {
			t = now.Add(k.lag)
		}
		if last := c.lastDelivery[name]; last.After(t) {
			t = last
		}
		c.lastDelivery[name] = t
		return t
	}
	for _, name := range nodesChanged {
		c.delivery = append(c.delivery, delivered{at: at(name), node: c.w.nodes[name].DeepCopy()})
	}
	for _, name := range leasesRenewed {
		c.delivery = append(c.delivery, delivered{at: at(name), lease: c.w.leases[name].DeepCopy()})
	}
	slices.SortStableFunc(c.delivery, func(a, b delivered) int { return a.at.Compare(b.at) })
	n := 0
	for _, d := range c.delivery {
		if d.at.After(now) {
			break
		}
		n++
		switch {
		case d.node != nil:
			if old := c.nodes[d.node.Name]; old != nil && rv(old) > rv(d.node) {
				// A newer copy is cached already (the controller's own
				// write).
				continue
			}
			c.nodes[d.node.Name] = d.node
			c.model.Tracker.HeardNode(d.node, now)
			c.wakes[d.node.Name] = now
		case d.lease != nil:
			c.leases[d.lease.Name] = d.lease
			if k := c.w.kubelet(d.lease.Name); !c.phantom && k != nil {
				k.delivered = now
			}
			if c.model.Tracker.HeardLease(d.lease.Name, d.lease, now) == health.NeedsLook {
				c.wakes[d.lease.Name] = now
			}
		}
	}
	c.delivery = c.delivery[n:]
}

func rv(node *corev1.Node) int {
	n := 0
	for _, ch := range node.ResourceVersion {
		n = n*10 + int(ch-'0')
	}
	return n
}

// resync runs the safety resync when its period has come: ticks, and looks
// at the overdue and stray nodes.
func (c *controller) resync() {
	now := c.w.now
	if now.Before(c.resynced.Add(c.w.cfg.MonitorPeriod)) {
		return
	}
	c.resynced = now
	c.apply(c.model.Tick(now, c.w.down))
	c.keepFreeze()
	for _, name := range c.model.Tracker.Overdue(now) {
		c.wakeNow(name)
	}
	for _, name := range c.model.Candidates() {
		if node := c.nodes[name]; node != nil && c.model.Stray(node, c.w.settings(node), now) {
			c.wakeNow(name)
		}
	}
}

func (c *controller) wakeNow(name string) {
	if at, ok := c.wakes[name]; !ok || at.After(c.w.now) {
		c.wakes[name] = c.w.now
	}
}

// apply wakes the nodes a change of the guard affects, as the reconciler's
// applyChange does.
func (c *controller) apply(ch disruption.Change) {
	if ch.Empty() {
		return
	}
	g := c.model.Guard
	var names []string
	if len(ch.Held) > 0 {
		names = append(names, g.PoolNodes(ch.Held...)...)
	}
	if len(ch.StateChanged) > 0 {
		names = append(names, g.Nodes(ch.StateChanged...)...)
	}
	if ch.Freeze || ch.Cooldown {
		c.freezeDirty = true
	}
	c.keepFreeze()
	if ch.Halt && !ch.Halted {
		c.model.Tracker.RefreshAll(c.w.now)
	}
	if ch.Halt || ch.Decided || ch.Freeze {
		names = append(names, g.Nodes()...)
	}
	for _, name := range names {
		c.wakeNow(name)
	}
}

// keepFreeze writes the model's freeze record and its unwatched spans to the
// cluster when they are behind, as the reconciler does.
func (c *controller) keepFreeze() {
	if !c.freezeDirty || !c.canWrite() {
		return
	}
	if r, ok := c.model.FreezeRecord(); ok {
		c.w.freeze = &r
	} else {
		c.w.freeze = nil
	}
	c.w.unwatched = c.model.UnwatchedSpans(c.w.now)
	c.freezeDirty = false
}

// lookDue looks at every node whose look has come, again while a look
// asks for another at once, up to a few times a step.
func (c *controller) lookDue() {
	for range 4 {
		var due []string
		for _, k := range c.w.kubelets {
			if at, ok := c.wakes[k.name]; ok && !at.After(c.w.now) {
				due = append(due, k.name)
			}
		}
		if len(due) == 0 {
			return
		}
		for _, name := range due {
			delete(c.wakes, name)
			c.look(name)
		}
	}
}

// canWrite reports whether a write of the controller would land now.
func (c *controller) canWrite() bool { return !c.phantom && !c.w.down && !c.w.refuse }

// canWriteNode reports whether a patch of the controller to the Node (its
// taints and records, not its status) would land now.
func (c *controller) canWriteNode(name string) bool { return c.canWrite() && !c.w.deniedNode(name) }

// Backoff after failed looks, as controller-runtime's default rate limiter
// has it for one item.
const (
	backoffBase = 5 * time.Millisecond
	backoffMax  = 1000 * time.Second
)

// failed schedules the look after a failed one, as a reconcile that returns
// an error is retried: after a backoff that doubles with each failure in a
// row. A wake set for later gives way to it; one set sooner stays.
func (c *controller) failed(name string) {
	n := c.failures[name]
	c.failures[name] = n + 1
	wait := backoffMax
	if n < 40 {
		wait = min(backoffMax, backoffBase<<n)
	}
	at := c.w.now.Add(max(c.w.cfg.Step, wait))
	if cur, ok := c.wakes[name]; !ok || at.Before(cur) {
		c.wakes[name] = at
	}
}

// look is one reconcile of a node.
func (c *controller) look(name string) {
	w, now := c.w, c.w.now
	node := c.nodes[name]
	s := w.settings(node)
	d := c.model.Look(safety.Input{Node: node, Lease: c.leases[name], Settings: s, Now: now, Stamp: now, Blind: w.down})
	c.apply(d.Change)
	if d.Mark {
		if w.down {
			// The live read fails.
			c.wakes[name] = now.Add(w.cfg.Step)
			return
		}
		live := w.nodes[name]
		if _, silent := c.model.Confirm(live, w.leases[name], s.Grace, now); !silent {
			c.wakes[name] = now
			return
		}
		if !c.canWrite() {
			c.failed(name)
			return
		}
		delete(c.failures, name)
		conds, _ := health.MarkUnknown(live.Status.Conditions, live.CreationTimestamp, metav1.NewTime(now))
		live.Status.Conditions = conds
		w.bump(live)
		c.nodes[name] = live.DeepCopy()
		c.obs.marked(name)
		c.wakes[name] = now
		return
	}
	if d.Write != nil {
		live := w.nodes[name]
		if refused, conflict := !c.canWriteNode(name), live.ResourceVersion != node.ResourceVersion; refused || conflict {
			for _, n := range c.model.TaintFailed(name, d.Write) {
				c.wakeNow(n)
			}
			if refused {
				c.failed(name)
			} else {
				// Locked out by a newer version: looked at again soon.
				c.wakes[name] = now.Add(w.cfg.Step)
			}
			// The look's own time to look again stands, as the
			// reconciler keeps it when its write fails.
			if at, ok := c.wakes[name]; !d.Retry.IsZero() && (!ok || d.Retry.Before(at)) {
				c.wakes[name] = d.Retry
			}
			return
		}
		written := d.Write.Apply(node)
		w.bump(written)
		w.nodes[name] = written
		c.nodes[name] = written.DeepCopy()
		if d.Write.Added != "" {
			c.obs.tainted(name, d.Write.Added)
		}
		node = c.nodes[name]
	}
	delete(c.failures, name)
	if !d.Deadline.IsZero() {
		c.wakes[name] = d.Deadline
	}
	if !d.Retry.IsZero() {
		if at, ok := c.wakes[name]; !ok || d.Retry.Before(at) {
			c.wakes[name] = d.Retry
		}
	}
	if d.MarkPods && c.canWrite() {
		todo := c.model.PodsToMark(node, w.pods[name])
		if len(todo) > 0 && !c.model.Fresh(name, now) && !c.model.Silent(w.nodes[name], w.leases[name], s.Grace.Monitor, now) {
			// Its Lease read live first: a node back while the watch lags
			// keeps its pods' readiness.
			todo = nil
		}
		for _, pod := range todo {
			for i := range w.pods[name] {
				if p := &w.pods[name][i]; p.UID == pod.UID && setPodReady(p, corev1.ConditionFalse) {
					c.obs.podMarked(name, p.UID)
				}
			}
			c.model.PodMarked(node, pod.UID)
		}
	}
}

// evict deletes the pods whose NoExecute deadline passed, where the model
// lets evictions through, as the pod eviction controller does.
func (c *controller) evict() {
	if !c.canWrite() {
		return
	}
	w, now := c.w, c.w.now
	for _, k := range w.kubelets {
		node := c.nodes[k.name]
		taints := noExecute(node)
		if len(taints) == 0 {
			continue
		}
		timeout := w.settings(node).PodEvictionTimeout
		confirmed := false
		for _, pod := range w.pods[k.name] {
			if _, gone := w.evicted[pod.UID]; gone {
				continue
			}
			d := eviction.Deadline(&pod, taints, timeout, now)
			if !d.Evict || d.At.After(now) {
				continue
			}
			if !c.model.Seeded() {
				continue
			}
			if ok, _ := c.model.Guard.DestructiveAllowedFor(k.name); !ok {
				continue
			}
			if eviction.IsLifecycleTaint(d.Taint) && !confirmed {
				// The node and its Lease read live before evicting for
				// its failure.
				if c.model.Back(w.nodes[k.name], w.leases[k.name], w.graceOf(k), now) {
					break
				}
				confirmed = true
			}
			w.evicted[pod.UID] = now
			c.obs.evicted(k.name, pod.UID)
		}
	}
}

// noExecute returns the node's NoExecute taints, without the lifecycle ones
// on a node that reports Ready again, as the pod eviction controller reads
// them.
func noExecute(node *corev1.Node) []corev1.Taint {
	ready := readyStatus(node) == corev1.ConditionTrue
	var out []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if ready && eviction.IsLifecycleTaint(t.Key) {
			continue
		}
		out = append(out, t)
	}
	return out
}
