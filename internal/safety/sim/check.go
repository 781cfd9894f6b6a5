package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// The invariants, as a violation names them.
const (
	// InvFalseEviction: no node that heartbeated within its grace, and
	// reports Ready, is tainted NoExecute or has a pod evicted.
	InvFalseEviction = "1 no false eviction"
	// InvForgotten: every node's wanted state is reached once the faults
	// are over: a dead node under no hold the cluster's state explains is
	// tainted, and its pods past their deadline evicted.
	InvForgotten = "2/6 no dead node forgotten"
	// InvCountdown: a hold pauses an eviction countdown and never restarts
	// it.
	InvCountdown = "3 a countdown never restarts"
	// InvMaintenanceOnce: a maintenance grace runs once per maintenance,
	// and ends on time: within two steps of its end, or a monitor period
	// later when the node's next look was lost.
	InvMaintenanceOnce = "3 a maintenance grace runs once"
	// InvPartition: a partition is frozen: once enough of the nodes have
	// gone silent within one window, destructive work stops.
	InvPartition = "freeze a partition"
	// InvFailover: a new leader keeps the freeze the old one held and wrote
	// down.
	InvFailover = "4 a failover keeps the freeze"
	// InvHeldEviction: nothing is evicted for a node's failure from a pool
	// its operator paused, whatever the node's taints still say.
	InvHeldEviction = "3 a pause holds evictions"
	// InvPodsOnce: pods are marked NotReady only when the controller finds
	// their node silent, once per silence (and per leader).
	InvPodsOnce = "5 pods marked once per silence"
)

// Violation is an invariant found broken.
type Violation struct {
	Invariant string
	// At is the virtual time from the start.
	At     time.Duration
	Detail string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("invariant %q broken at %s: %s", v.Invariant, v.At, v.Detail)
}

// observer watches what the controllers do against the ground truth.
type observer struct {
	w         *world
	violation *Violation
	// served is how long each node's current episode has carried a
	// lifecycle NoExecute taint.
	served map[string]time.Duration
	// podMarks counts the NotReady marks of each pod in each silence.
	podMarks map[podSilence]int
	// notReadyInMaintenance is when each node in maintenance was first
	// seen not Ready in it.
	notReadyInMaintenance map[string]time.Time
	// failoverTimes are the times of the failovers so far.
	failoverTimes []time.Time
	// wakeLost is when each node's next look was last lost.
	wakeLost map[string]time.Time
	// deniedAtFailover holds, for each node whose patches were denied at a
	// failover, the last such failover: the new leader could not read the
	// maintenance grace record the old one could not write.
	deniedAtFailover map[string]time.Time
	// halted is whether the leader last held every zone down, and
	// haltEnded when it last stopped.
	halted    bool
	haltEnded time.Time
	// oldCooling is when the old leader's cooldown began, and oldHot
	// since when it has been over its threshold again.
	oldCooling, oldHot time.Time
	// keptAtFailover is the cooldown's start the cluster kept when the
	// last failover came, zero for none: what the new leader goes on from.
	keptAtFailover time.Time
	// heldCount is how many nodes a maintenance holds, and heldChanged
	// when that last changed.
	heldCount   int
	heldChanged time.Time
	// markedAt is when the controller last marked each node Unknown, and
	// taintedAt when it last added a lifecycle NoExecute taint to it.
	markedAt, taintedAt map[string]time.Time
}

type podSilence struct {
	uid   types.UID
	since time.Time
}

func newObserver(w *world) *observer {
	return &observer{w: w, served: map[string]time.Duration{}, podMarks: map[podSilence]int{},
		notReadyInMaintenance: map[string]time.Time{}, markedAt: map[string]time.Time{}, taintedAt: map[string]time.Time{},
		deniedAtFailover: map[string]time.Time{}, wakeLost: map[string]time.Time{}}
}

func (o *observer) fail(inv, format string, args ...any) {
	if o.violation == nil {
		o.violation = &Violation{Invariant: inv, At: o.w.now.Sub(t0), Detail: fmt.Sprintf(format, args...)}
	}
}

// live reports whether the node's kubelet is alive, reports Ready, and had
// a heartbeat land within its grace: nothing destructive may touch it.
func (o *observer) live(name string) bool {
	k := o.w.kubelet(name)
	return k.alive && k.ready && o.w.now.Sub(k.landed) < o.w.graceOf(k)
}

func (o *observer) marked(name string) { o.markedAt[name] = o.w.now }

func (o *observer) tainted(name, key string) {
	o.taintedAt[name] = o.w.now
	if o.live(name) {
		o.fail(InvFalseEviction, "%s tainted %s while it heartbeats and reports Ready", name, key)
	}
}

func (o *observer) evicted(name string, uid types.UID, taint string) {
	if o.live(name) {
		o.fail(InvFalseEviction, "pod %s of %s evicted while the node heartbeats and reports Ready", uid, name)
	}
	if o.w.kubelet(name).pool == "p" && o.w.paused && eviction.IsLifecycleTaint(taint) {
		o.fail(InvHeldEviction, "pod %s of %s evicted for its node's failure (%s) while its pool is paused", uid, name, taint)
	}
}

func (o *observer) podMarked(name string, uid types.UID) {
	node := o.w.nodes[name]
	if s := health.ReadyStatus(node); s != corev1.ConditionUnknown {
		o.fail(InvPodsOnce, "pod %s of %s marked NotReady while the node's Ready is %s, its kubelet's to set", uid, name, s)
		return
	}
	since := health.ReadyCondition(node).LastTransitionTime.Time
	key := podSilence{uid, since}
	o.podMarks[key]++
	allowed := 1
	for _, at := range o.failoverTimes {
		if !at.Before(since) {
			allowed++
		}
	}
	if o.podMarks[key] > allowed {
		o.fail(InvPodsOnce, "pod %s of %s marked NotReady %d times in one silence (since %s)", uid, name,
			o.podMarks[key], since.Sub(t0))
	}
}

// step checks what must hold after every step.
func (o *observer) step(cs *controllers) {
	w := o.w
	slack := 2 * w.cfg.Step
	for _, k := range w.kubelets {
		node := w.nodes[k.name]
		// A countdown, once started, keeps its time served.
		taint := lifecycleTaint(node)
		switch {
		case taint != nil:
			o.served[k.name] += w.cfg.Step
			if taint.TimeAdded != nil {
				if ran := w.now.Sub(taint.TimeAdded.Time); ran+slack < o.served[k.name] {
					o.fail(InvCountdown, "%s's %s taint counts %s, after %s served in this episode", k.name, taint.Key,
						ran, o.served[k.name])
				}
			}
		case health.ReadyStatus(node) == corev1.ConditionTrue:
			delete(o.served, k.name)
		}
		// A maintenance grace runs once per maintenance.
		if !k.maintenance || !hasMaintenance(node) || health.ReadyStatus(node) == corev1.ConditionTrue {
			// Out of maintenance, or back: a new failure gets a new grace.
			delete(o.notReadyInMaintenance, k.name)
			continue
		}
		if _, seen := o.notReadyInMaintenance[k.name]; !seen && health.ReadyStatus(node) != corev1.ConditionTrue {
			// The grace runs from the later of the two starts as the
			// cluster stores them: the node's ceasing to be Ready, and the
			// maintenance's as its condition is stamped, which may be
			// before the condition landed (set during an outage).
			o.notReadyInMaintenance[k.name] = health.Later(health.ReadyCondition(node).LastTransitionTime.Time, k.maintenanceSince)
		}
		from, seen := o.notReadyInMaintenance[k.name]
		if at, denied := o.deniedAtFailover[k.name]; denied && !at.Before(from) {
			// A new leader dates the grace from what the node shows: the
			// record of its start could not be written.
			continue
		}
		// The look at the grace's end is the node's own, kept through
		// failed writes; only when that look was lost, or a new leader
		// took over, does the resync find the end, a monitor period on.
		ended := from.Add(w.cfg.MaintenanceGrace + slack)
		if o.lookLostSince(k.name, from.Add(-slack)) {
			ended = ended.Add(w.cfg.MonitorPeriod)
		}
		if n := len(o.failoverTimes); n > 0 {
			// A new leader gives the node a fresh grace from its start,
			// and finds the maintenance's end once that has run out too.
			ended = health.Later(ended, o.failoverTimes[n-1].Add(w.cfg.Grace+w.cfg.MonitorPeriod+slack))
		}
		if seen && w.now.After(ended) && cs.leader.model.Hold(k.name) == disruption.HeldMaintenance {
			o.fail(InvMaintenanceOnce, "%s held for its maintenance at %s, though its grace ran from %s", k.name,
				w.now.Sub(t0), from.Sub(t0))
		}
	}
	o.failover(cs)
	o.partition(cs)
}

// lookLostSince reports whether the named node's next look was lost, or a
// failover happened, since the given time.
func (o *observer) lookLostSince(name string, since time.Time) bool {
	if !o.wakeLost[name].Before(since) {
		return true
	}
	return slices.ContainsFunc(o.failoverTimes, func(at time.Time) bool { return !at.Before(since) })
}

// partition checks that a partition the ground truth shows is frozen: at
// least the freeze's threshold of the judged nodes (and three) are dead,
// and their last heartbeats reached the apiserver within one window of each
// other. The leader must hold the freeze from a grace and two monitor
// periods after the last of them, as the leader first saw it, or after
// what kept it from seeing them fade: its start, the end of an outage, the
// end of every zone being down.
func (o *observer) partition(cs *controllers) {
	w := o.w
	if w.cfg.FreezeThreshold <= 0 || w.down {
		return
	}
	g := cs.leader.model.Snapshot()
	if halted := g.Halted; halted != o.halted {
		o.halted = halted
		if !halted {
			o.haltEnded = w.now
		}
	}
	held := o.maintenanceHeld()
	if len(held) != o.heldCount {
		// The count the threshold is a share of changed: a wave is
		// judged against the count of its own time.
		o.heldCount, o.heldChanged = len(held), w.now
	}
	judged := 0
	var deaths []*kubelet
	for _, k := range w.kubelets {
		if held[k.name] {
			continue
		}
		judged++
		// A node in maintenance whose grace has not begun falls silent as
		// planned.
		_, down := o.notReadyInMaintenance[k.name]
		if !k.alive && (!k.maintenance || down) && !o.plannedTooLong(k) {
			deaths = append(deaths, k)
		}
	}
	// A node's silence shows from its last heartbeat that reached the
	// apiserver (none lands in an outage), as the leader first saw it: a
	// lagging watch delivers it late, unless a live read showed it sooner.
	seen := func(k *kubelet) time.Time { return health.Later(k.landed, k.delivered) }
	slices.SortFunc(deaths, func(a, b *kubelet) int { return seen(a).Compare(seen(b)) })
	need := max(3, int(math.Ceil(w.cfg.FreezeThreshold*float64(judged))))
	for first := 0; first+need <= len(deaths); first++ {
		last := first + need - 1
		if seen(deaths[last]).Sub(seen(deaths[first])) > w.cfg.Grace || o.heldChanged.After(seen(deaths[first])) {
			continue
		}
		anchor := health.Later(seen(deaths[last]), health.Later(cs.leader.started, health.Later(w.upSince, o.haltEnded)))
		if w.now.After(anchor.Add(w.cfg.Grace+2*w.cfg.MonitorPeriod+w.cfg.Step)) && !g.Frozen {
			o.fail(InvPartition, "%d of %d judged nodes went silent within %s (from %s) and stay so, but no freeze holds",
				need, judged, w.cfg.Grace, seen(deaths[first]).Sub(t0))
		}
		return
	}
}

// plannedTooLong reports whether a maintenance was cleared more than a
// grace period into the node's silence: planned until then, the silence is
// neither surely part of the nodes that went silent with it, which may have
// left the window by then, nor a node going quiet when it was cleared. A
// freeze may count it or not. Cleared within a grace, it goes with them.
func (o *observer) plannedTooLong(k *kubelet) bool {
	return k.maintenanceEnded.Sub(health.Later(k.landed, k.delivered)) > o.w.cfg.Grace
}

// maintenanceHeld returns the nodes a maintenance holds now, by the ground
// truth: in maintenance, down, and within their maintenance grace.
func (o *observer) maintenanceHeld() map[string]bool {
	held := map[string]bool{}
	for name, from := range o.notReadyInMaintenance {
		if o.w.now.Before(from.Add(o.w.cfg.MaintenanceGrace)) {
			held[name] = true
		}
	}
	return held
}

// failover checks that a new leader keeps the freeze the old one held when
// it died, and had written down (a freeze it could not write is judged
// afresh by the new leader, as partition checks): while the old one, carrying on as if it had not died, would still
// hold it, the new one holds it too, from at most bound after it started,
// and ends it no earlier than cooldownBound before the old one would, or
// the length of an outage the old one lived through before the failover.
// Freezes that either sets off after the failover are not compared: the two
// see the same faults at different moments (the old one heard heartbeats the
// new one dates from its start, and their looks fall apart), and a share of
// silent nodes at the threshold tips either way. The other way round is
// allowed too: a new leader gives every node it finds a fresh grace, and
// nodes that died within one grace before it started fade with a later
// partition as if they had died in it. That freeze holds more, never less.
func (o *observer) failover(cs *controllers) {
	if cs.old == nil || !cs.oldFrozen {
		return
	}
	w := o.w
	if !cs.old.model.Snapshot().Frozen {
		// The freeze the old leader held has ended, as it would have.
		cs.oldFrozen = false
		return
	}
	early := cooldownBound(w.cfg)
	if w.upSince.After(cs.failedOver.Add(-w.cfg.FreezeCooldown)) {
		// The old one starts its cooldown again after an outage; a new one
		// that started after the outage, or before the old one wrote the
		// new start down, goes on from the start before: the one the
		// cluster kept, if it kept one from before the outage ended.
		if kept := o.keptAtFailover; !kept.IsZero() && kept.Before(w.upSince) {
			early += w.upSince.Sub(kept)
		} else {
			early += w.upSince.Sub(w.downSince)
		}
	}
	// A cooldown the old one started again for a moment (a node fading
	// and another coming back in the same second, at the threshold) keeps
	// its start: the two look at different moments.
	rec, _ := cs.old.model.FreezeRecord()
	switch {
	case rec.ClearSince.IsZero():
		if o.oldHot.IsZero() {
			o.oldHot = w.now
		}
	case o.oldCooling.IsZero() || !o.oldHot.IsZero() && rec.ClearSince.Sub(o.oldHot) > w.cfg.MonitorPeriod:
		o.oldCooling, o.oldHot = rec.ClearSince, time.Time{}
	default:
		o.oldHot = time.Time{}
	}
	if cooling := o.oldCooling; !cooling.IsZero() && !w.now.Before(cooling.Add(w.cfg.FreezeCooldown-early)) {
		// The old one's cooldown is over within the bound: the freeze it
		// held when it died is over, and what either does next is theirs.
		cs.oldFrozen = false
		return
	}
	if !cs.leader.model.Snapshot().Frozen && w.now.Sub(cs.failedOver) > w.cfg.Grace+2*w.cfg.MonitorPeriod {
		o.fail(InvFailover, "the new leader (since %s) lost the freeze the old one held when it died, and would still hold",
			cs.failedOver.Sub(t0))
	}
}

// cooldownBound is how much earlier than the old leader a new one may end a
// freeze's cooldown: the nodes the new one dates from its start fade, and
// stop fading, up to half a grace after the old one saw them do so, and a
// tick may come a monitor period late.
func cooldownBound(cfg Config) time.Duration { return cfg.Grace/2 + cfg.MonitorPeriod + cfg.Step }

func lifecycleTaint(node *corev1.Node) *corev1.Taint {
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectNoExecute && eviction.IsLifecycleTaint(t.Key) {
			return t
		}
	}
	return nil
}

// noExecute returns the node's NoExecute taints that evict its pods, as the
// ground truth reads them: not the lifecycle ones of a node that reports
// Ready again.
func noExecute(node *corev1.Node) []corev1.Taint {
	ready := health.ReadyStatus(node) == corev1.ConditionTrue
	var out []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute && (!ready || !eviction.IsLifecycleTaint(t.Key)) {
			out = append(out, t)
		}
	}
	return out
}
