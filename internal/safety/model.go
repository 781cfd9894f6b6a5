package safety

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/maintenance"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/taints"
)

// Model owns the safety state of the node lifecycle controller and decides
// what each look at a node calls for. It is safe for concurrent use: every
// decision is made under one lock (turn), which the guard relies on alone;
// the tracker keeps a lock of its own for the heartbeats the informers
// record without a decision.
type Model struct {
	// tracker remembers the heartbeats heard; the informers' handlers
	// record renewals in it (HeardLease, HeardNode), the cheap path of a
	// healthy node.
	tracker *health.Tracker
	// guard holds the disruption state: zones, queues, pools, the freeze.
	guard *disruption.Guard
	// window is the partition freeze's window, the flags' grace period.
	window time.Duration

	// turn serializes the decisions: a look, a confirmation, a tick, the
	// seed, an excuse, a removal, a pool's settings, a failed taint, the
	// evictions' and the resync's questions each find and leave the
	// tracker, the guard and the model's records consistent with one
	// another, whatever the workers that ask at once. Two looks cannot
	// interleave between a node's count in its zone and its turn in the
	// zone's queue. The heartbeats heard go to the tracker alone, without
	// it: the cheap path of a healthy node. It guards the records below.
	turn sync.Mutex
	// skew is how far the local clock runs ahead of the apiserver's, read
	// once at Seed.
	skew time.Duration
	// pods remembers, per node found silent, the pods marked NotReady in
	// the current silence.
	pods map[string]*podEpisode
	// tainted names the nodes last seen with a lifecycle NoExecute taint:
	// with the nodes not judged healthy, what the safety resync checks.
	tainted map[string]struct{}
	// confirmed holds when each node's silence was last confirmed from a
	// live read (Confirm), for Fresh.
	confirmed map[string]time.Time
	// graces holds, on the local clock, the maintenance grace this process
	// found for each node down in maintenance: the record the node should
	// carry, kept here too for while it cannot be written (a patch denied),
	// so that a change of the node's Ready condition meanwhile does not
	// start the grace again.
	graces map[string]MaintenanceGrace
	// version counts the changes whose state Affected took.
	version uint64
	// pending is what SetPool changed since the last look or tick.
	pending disruption.Change
	// untimed holds when each NoExecute taint without timeAdded was first
	// seen, which its pods' deadlines count from.
	untimed map[untimedKey]time.Time
	// unseen names the nodes the seed listed that no look has observed
	// yet. Until a look observes a node, the tracker neither times its
	// silence nor counts it fading, and the resync's other nets, which ask
	// the tracker, cannot find it: the resync looks at these (Unseen),
	// whatever became of the looks asked for at the start.
	unseen map[string]struct{}
}

// freshFor is how long a silence confirmed from a live read stands without
// another: the pods' turn that follows a mark marks the node's pods without
// reading the node again.
const freshFor = time.Second

// New returns a model over a tracker and a guard of no nodes, whose freeze
// window is window. The model owns both from then on.
func New(tracker *health.Tracker, guard *disruption.Guard, window time.Duration) *Model {
	return &Model{tracker: tracker, guard: guard, window: window,
		pods: make(map[string]*podEpisode), tainted: make(map[string]struct{}), confirmed: make(map[string]time.Time),
		graces: make(map[string]MaintenanceGrace), untimed: make(map[untimedKey]time.Time),
		unseen: make(map[string]struct{})}
}

// Input is one look at a node: the node and its Lease as read, the settings
// of its pool, and the time.
type Input struct {
	Node  *corev1.Node
	Lease *coordinationv1.Lease
	// Settings are the node's pool's.
	Settings policy.Settings
	// Now is the local time of the look.
	Now time.Time
	// Stamp is the time to write for what is done now, by the apiserver's
	// clock: one it has surely not reached.
	Stamp time.Time
	// Blind is true while the apiserver is out of reach: what time alone
	// changes (nodes fading) is not re-evaluated, since no heartbeat could
	// be seen.
	Blind bool
}

// WaitingStatus is why a node marked Unknown whose heartbeats are heard
// again gets no NoExecute taint: its kubelet has yet to report its status.
const WaitingStatus = "heard again; waiting for its status"

// Decision is what one look calls for.
type Decision struct {
	// Verdict is the node's judgement.
	Verdict health.Verdict
	// Pool is the node's pool, "" for the nodes no policy selects.
	Pool string
	// First is true when the node was not known before this look.
	First bool
	// Previous is the node's state before this look, for the state metrics;
	// Recorded is false when the look recorded no state (a mark is to be
	// made first).
	Previous health.State
	Recorded bool
	// Mark is true when the node's grace ran out and its conditions are not
	// Unknown yet: confirm the silence live (Confirm) and mark it, then look
	// again. Only Verdict, First, Change and Maintenance are set then.
	Mark bool
	// Change says what the look changed beyond the node (zones, pools, the
	// freeze, the halt), for the caller to tell and to wake the nodes it
	// affects.
	Change disruption.Change
	// Write is the patch of the node's taints and countdown record the look
	// calls for, or nil.
	Write *TaintWrite
	// Want is the lifecycle NoExecute taint the node's Ready condition
	// calls for, "" for none.
	Want string
	// Held says why the node's NoExecute taint and evictions are held, ""
	// when nothing holds them; Waiting says why its taint waits while
	// nothing holds it (its zone's rate, the wait after start).
	Held, Waiting string
	// MarkPods is true when the node's pods are to be marked NotReady
	// (PodsToMark tells which).
	MarkPods bool
	// Maintenance is the node's maintenance window, and InMaintenance
	// whether it holds the node now.
	Maintenance   maintenance.Window
	InMaintenance bool
	// Next is when to look at the node again: at its grace deadline, or
	// sooner for another reason (a turn in the zone's queue, a maintenance
	// grace ending).
	Next Next
}

// Next is when to look at a node again.
type Next struct {
	// At is the time; zero for no look at any time, as for a node whose
	// grace ran out, which waits for a heartbeat (an event).
	At time.Time
	// Deadline is true when At is the node's grace deadline, or none: the
	// heartbeats heard meanwhile move it, and it is read again when it
	// comes.
	Deadline bool
}

// Over returns the look that stands when next is asked for while old is
// set (set false: none is): the earliest asked for, but a deadline replaces
// the deadline set before, which heartbeats have moved since, and no
// deadline drops it. It reports false when no look stands. Both worlds keep
// a node's next look by this rule.
func (next Next) Over(old Next, set bool) (Next, bool) {
	switch {
	case next.At.IsZero():
		return old, set && (!old.Deadline || !next.Deadline)
	case !set, next.Deadline && old.Deadline, next.At.Before(old.At):
		return next, true
	}
	return old, true
}

// nextOf returns the next look: at the deadline, or at retry if sooner;
// a zero time is none.
func nextOf(deadline, retry time.Time) Next {
	if !retry.IsZero() && (deadline.IsZero() || retry.Before(deadline)) {
		return Next{At: retry}
	}
	return Next{At: deadline, Deadline: true}
}

// Seeded reports whether Seed has run.
func (m *Model) Seeded() bool {
	m.turn.Lock()
	defer m.turn.Unlock()
	return m.guard.Seeded()
}

// Look decides what a look at a node calls for, and records what it learnt.
func (m *Model) Look(in Input) Decision {
	m.turn.Lock()
	defer m.turn.Unlock()
	node, now := in.Node, in.Now
	d := Decision{Pool: in.Settings.Pool}
	d.Change = merge(m.takePending(), m.guard.SetBlind(in.Blind, now))
	obs := m.tracker.Observe(node.Name, node.UID, health.PulseOf(node, in.Lease), now)
	delete(m.unseen, node.Name)
	d.First = obs.First
	v := health.Judge(node, obs.LastHeartbeat, in.Settings.Grace, now)
	d.Verdict = v
	if v.Expired && !m.guard.Silent(node.Name) {
		// The node has just gone silent: see how many others are fading
		// with it before anything destructive is done to it.
		ticked, _ := m.tick(now, in.Blind)
		d.Change = merge(d.Change, ticked)
	}
	m.seenTaint(node)
	heardAt := m.tracker.HeardAt(node.Name)
	heard := !heardAt.IsZero()
	d.Maintenance, d.InMaintenance = m.maintenance(node, in.Settings, now)
	counted := v
	if in.Blind {
		// No heartbeat can be heard while the apiserver is out of reach:
		// a grace running out then says nothing of the node, and must not
		// count towards a freeze or a breaker. Its mark waits too.
		counted.Expired = false
	}
	d.Change = merge(d.Change, m.guard.Update(node.Name, m.status(node, counted, in.Settings.Pool, heardAt, d.Maintenance, d.InMaintenance, now), now))
	if counted.Expired {
		if _, changed := health.MarkUnknown(node.Status.Conditions, node.CreationTimestamp, metav1.NewTime(now)); changed {
			// The node waits for no taint until it is marked: a mark
			// that keeps failing must not hold its zone's queue.
			m.guard.CancelTaint(node.Name)
			d.Mark = true
			return d
		}
	}

	d.Want = WantedNoExecute(node)
	// A node marked Unknown whose heartbeats are heard again is alive: its
	// kubelet has yet to report its status, and no countdown starts.
	alive := d.Want == corev1.TaintNodeUnreachable && heard && !v.Expired
	var retry, deadline time.Time
	d.Write, d.Held, d.Waiting, retry = m.noExecute(node, d.Want, alive, in.Stamp, now)
	if grace, changed := m.graceWrite(node, d.Maintenance); changed {
		if d.Write == nil {
			d.Write = &TaintWrite{Taints: node.Spec.Taints, Countdown: recordedOrNil(CountdownOf(node))}
		}
		d.Write.Grace = grace
	}
	if d.Want == "" {
		m.endEpisode(node.Name)
	}
	d.MarkPods = m.marksPods(node)
	if d.InMaintenance && !d.Maintenance.Until.IsZero() && d.Want != "" {
		retry = health.Earliest(retry, d.Maintenance.Until)
	}
	if !v.Expired {
		deadline = v.Deadline
	}
	d.Next = nextOf(deadline, retry)
	if counted.Expired == v.Expired {
		// A verdict the apiserver's absence blurred is not recorded: the
		// node stays overdue, and the resync looks at it again once the
		// outage is excused.
		d.Previous, d.Recorded = m.tracker.Judged(node.Name, v), true
	}
	return d
}

// noExecute decides the node's NoExecute taint: the write it calls for, why
// it is held or waits, and when to ask again.
func (m *Model) noExecute(node *corev1.Node, want string, alive bool, stamp, now time.Time) (w *TaintWrite, held, waiting string, retry time.Time) {
	base := node
	if ts, changed := taints.ReconcileNoSchedule(node, metav1.NewTime(now)); changed {
		base = node.DeepCopy()
		base.Spec.Taints = ts
	}
	done := func(w *TaintWrite) *TaintWrite {
		if w == nil && base != node {
			// Only the NoSchedule taints change.
			w = &TaintWrite{Taints: base.Spec.Taints, Countdown: recordedOrNil(CountdownOf(node)), Grace: graceOrNil(node)}
		}
		return w
	}
	if want == "" {
		m.guard.CancelTaint(node.Name)
		return done(setNoExecute(base, "", stamp)), "", "", time.Time{}
	}
	if why := m.guard.Hold(node.Name); why != "" {
		m.guard.CancelTaint(node.Name)
		return done(pauseNoExecute(base, stamp)), why, "", time.Time{}
	}
	other := corev1.TaintNodeUnreachable
	if want == other {
		other = corev1.TaintNodeNotReady
	}
	if HasNoExecute(base, want) || HasNoExecute(base, other) {
		// Kept, or swapped at once: one failure, one countdown.
		m.guard.CancelTaint(node.Name)
		return done(setNoExecute(base, want, stamp)), "", "", time.Time{}
	}
	if alive {
		m.guard.CancelTaint(node.Name)
		return done(nil), "", WaitingStatus, time.Time{}
	}
	ok, wait, why := m.guard.TakeTaint(node.Name, now)
	if !ok {
		if wait >= 0 {
			retry = now.Add(max(wait, time.Millisecond))
		}
		return done(nil), "", why, retry
	}
	w = setNoExecute(base, want, stamp)
	w.Took = true
	return w, "", "", time.Time{}
}

// TaintFailed gives back the zone token a failed write took, and returns the
// nodes waiting in the zone, which should look again: they were told to wait
// for a turn the node no longer takes.
func (m *Model) TaintFailed(name string, w *TaintWrite) []string {
	m.turn.Lock()
	defer m.turn.Unlock()
	if w == nil || !w.Took {
		return nil
	}
	return m.guard.ReturnTaint(name)
}
