package sim

import (
	"bytes"
	"context"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety/act"
)

// controller is one controller process: a model, its cache of the
// cluster, and its wakes. It carries the model's decisions out as the
// reconcilers do. A phantom one writes nothing: it is the old leader,
// carrying on as if it had not died, to compare the new one with.
type controller struct {
	w       *world
	model   *safety.Model
	exec    *act.Executor
	phantom bool
	// nodes and leases are its cache; delivery holds watch events not
	// delivered yet, by when they are due.
	nodes    map[string]*corev1.Node
	leases   map[string]*coordinationv1.Lease
	delivery []delivered
	// lastDelivery is when each node's last watch event is due.
	lastDelivery map[string]time.Time
	// wakes holds each node's next look; podTurns the nodes whose pods'
	// turn has come, as the reconciler's pod workers take them.
	wakes    map[string]safety.Next
	podTurns []string
	// cutIn are the looks due in this step after the one under way, which
	// may cut in on it (letOneCutIn); cutting is true while one does.
	cutIn   []string
	cutting bool
	// resynced is when the safety resync last ran.
	resynced time.Time
	// obs records what the controller did, for the checks.
	obs *observer
	// ended are the outages that ended, not taken by the executor yet.
	ended []disruption.Span
	// started is when the process started.
	started time.Time
	// evicting is true for the nodes whose NoExecute taints the evictions'
	// turn last saw.
	evicting map[string]bool
	// failures counts each node's looks that failed in a row: the next
	// look after a failure waits as the work queue's backoff has it.
	failures map[string]int
	// calls counts the executor's calls that unchanged saw.
	calls int
}

// delivered is a watch event on its way to the controller.
type delivered struct {
	at    time.Time
	node  *corev1.Node
	lease *coordinationv1.Lease
}

func newController(w *world, obs *observer, unled time.Time) *controller {
	c := &controller{w: w, nodes: map[string]*corev1.Node{}, leases: map[string]*coordinationv1.Lease{},
		wakes: map[string]safety.Next{}, lastDelivery: map[string]time.Time{}, obs: obs, resynced: w.now, started: w.now,
		failures: map[string]int{}, evicting: map[string]bool{}}
	c.model = safety.New(health.NewTracker(), disruption.NewGuard(w.guardConfig()), w.cfg.Grace)
	// One pod at a time: the simulation stays deterministic.
	c.exec = act.New(c.model, 1, sight{c})
	c.model.SetPool("p", ptrTo(w.pool()), w.now)
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
		// Taken over from a leader that last renewed its Lease then; kept
		// in the cluster at once.
		c.exec.Unwatched(unled, w.now, w.now)
	}
	ctx, p := context.Background(), port{c}
	c.exec.Changed(ctx, p, c.model.Seed(nodes, w.settings, safety.Kept{Freeze: w.freeze, Unwatched: w.unwatched}, w.now, w.now))
	c.exec.KeepFreeze(ctx, p)
	for _, k := range w.kubelets {
		c.wakeNow(k.name)
	}
	return c
}

func ptrTo[T any](v T) *T { return &v }

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
			c.model.HeardNode(d.node, now)
			c.wakeNow(d.node.Name)
		case d.lease != nil:
			c.leases[d.lease.Name] = d.lease
			c.saw(d.lease)
			if c.model.HeardLease(d.lease.Name, d.lease, now) == health.NeedsLook {
				c.wakeNow(d.lease.Name)
			}
		}
	}
	c.delivery = c.delivery[n:]
}

// saw records, for the ground truth, when the leader first saw a Lease
// renewal, whether its watch delivered it or a live read showed it: from
// then on the leader dates the node's silence from it.
func (c *controller) saw(lease *coordinationv1.Lease) {
	k := c.w.kubelet(lease.Name)
	if c.phantom || k == nil || lease.Spec.RenewTime == nil || !lease.Spec.RenewTime.After(k.seenRenewal) {
		return
	}
	k.delivered, k.seenRenewal = c.w.now, lease.Spec.RenewTime.Time
}

func rv(node *corev1.Node) int {
	n := 0
	for _, ch := range node.ResourceVersion {
		n = n*10 + int(ch-'0')
	}
	return n
}

// resync runs the safety resync when its period has come.
func (c *controller) resync() {
	if c.w.now.Before(c.resynced.Add(c.w.cfg.MonitorPeriod)) {
		return
	}
	c.resynced = c.w.now
	c.exec.Resync(context.Background(), port{c})
}

func (c *controller) wakeNow(name string) { c.wake(name, safety.Next{At: c.w.now}) }

// wake sets the node's next look, by the rule the reconciler's wakes keep.
func (c *controller) wake(name string, next safety.Next) {
	old, set := c.wakes[name]
	if e, ok := next.Over(old, set); ok {
		c.wakes[name] = e
	} else {
		delete(c.wakes, name)
	}
}

// lookDue looks at every node whose look has come, again while a look
// asks for another at once, up to a few times a step; then the pods' turn
// comes for the nodes the looks queued.
func (c *controller) lookDue() {
	for range 4 {
		var due []string
		for _, k := range c.w.kubelets {
			if e, ok := c.wakes[k.name]; ok && !e.At.After(c.w.now) {
				due = append(due, k.name)
			}
		}
		if len(due) == 0 {
			break
		}
		for i, name := range due {
			if _, ok := c.wakes[name]; !ok {
				// It cut in on an earlier look.
				continue
			}
			delete(c.wakes, name)
			c.cutIn = due[i+1:]
			c.look(name)
			c.cutIn = nil
		}
	}
	turns := c.podTurns
	c.podTurns = nil
	for _, name := range turns {
		node := c.nodes[name]
		if err := c.exec.MarkPods(context.Background(), port{c}, node, c.w.pods[name], c.w.settings(node).Grace.Monitor); err != nil {
			// Tried again at the next step, as the pod workers retry.
			c.podTurns = appendNew(c.podTurns, name)
		}
	}
}

// letOneCutIn has the next look waiting in this step cut in, while a look
// that has decided is about to write: two workers' looks interleave so,
// the second deciding from what the first has not written yet. One cuts in
// at a time, and only where the configuration asks for it.
func (c *controller) letOneCutIn() {
	if !c.w.cfg.Interleave || c.cutting {
		return
	}
	for len(c.cutIn) > 0 {
		name := c.cutIn[0]
		c.cutIn = c.cutIn[1:]
		if _, ok := c.wakes[name]; !ok {
			continue
		}
		delete(c.wakes, name)
		c.cutting = true
		c.look(name)
		c.cutting = false
		return
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
	c.wake(name, safety.Next{At: c.w.now.Add(max(c.w.cfg.Step, wait))})
}

// look is one reconcile of a node.
func (c *controller) look(name string) {
	node := c.nodes[name]
	var out act.Outcome
	var err error
	c.unchanged(node, c.leases[name], func() {
		out, err = c.exec.Look(context.Background(), port{c}, node, c.leases[name], c.w.settings(node))
	})
	if err != nil {
		c.failed(name)
		return
	}
	delete(c.failures, name)
	if out.Decision.MarkPods && out.Mark == nil {
		c.podTurns = appendNew(c.podTurns, name)
	}
}

// evict is the pod eviction controller's turn at every node.
func (c *controller) evict() {
	w := c.w
	for _, k := range w.kubelets {
		node := c.nodes[k.name]
		// Its turn comes when its NoExecute taints come or go, as the
		// controller's watch has it, and while it has some.
		tainted := hasNoExecute(node)
		if !tainted && !c.evicting[k.name] {
			continue
		}
		c.evicting[k.name] = tainted
		var pods []corev1.Pod
		for i := range w.pods[k.name] {
			if _, gone := w.evicted[w.pods[k.name][i].UID]; !gone && tainted {
				pods = append(pods, w.pods[k.name][i])
			}
		}
		// A failed turn is tried again at the next step.
		c.unchanged(node, c.leases[k.name], func() {
			_, _ = c.exec.Evict(context.Background(), port{c}, node, pods, w.settings(node), w.now)
		})
	}
}

// appendNew appends name unless s holds it.
func appendNew(s []string, name string) []string {
	if slices.Contains(s, name) {
		return s
	}
	return append(s, name)
}

// hasNoExecute reports whether the node carries a NoExecute taint: the pod
// eviction controller reads the pods of no other node.
func hasNoExecute(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute })
}

// unchanged runs call, and fails the run if call changed the node or its
// Lease: the controller hands the executor the cache's own objects,
// uncopied, and a change would be the cache's. One call in readOnlyEvery
// is checked: an encoding costs more than the look, and a change that is
// not rare is caught all the same.
func (c *controller) unchanged(node *corev1.Node, lease *coordinationv1.Lease, call func()) {
	c.calls++
	if c.calls%readOnlyEvery != 0 {
		call()
		return
	}
	was := encode(node, lease)
	call()
	if !bytes.Equal(encode(node, lease), was) {
		c.obs.fail(InvReadOnly, "the executor changed the cached Node or Lease of %s", node.Name)
	}
}

// InvReadOnly: the executor changes nothing it is given, the cache's own
// Nodes and Leases (checked by unchanged, one call in readOnlyEvery).
const (
	InvReadOnly   = "the cache is read only"
	readOnlyEvery = 4
)

// encode returns the node and its Lease in protobuf, to be compared
// byte for byte (far cheaper than a deep comparison).
func encode(node *corev1.Node, lease *coordinationv1.Lease) []byte {
	b, err := node.Marshal()
	if err != nil {
		panic(err)
	}
	if lease != nil {
		l, err := lease.Marshal()
		if err != nil {
			panic(err)
		}
		b = append(b, l...)
	}
	return b
}
