package safety

import (
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/maintenance"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/taints"
)

// Model owns the safety state of the node lifecycle controller and decides
// what each look at a node calls for. It is safe for concurrent use: its
// parts hold their own locks, and a look reads and updates them in an order
// that leaves each consistent.
type Model struct {
	// tracker remembers the heartbeats heard; the informers' handlers
	// record renewals in it (HeardLease, HeardNode), the cheap path of a
	// healthy node.
	tracker *health.Tracker
	// guard holds the disruption state: zones, queues, pools, the freeze.
	guard *disruption.Guard
	// window is the partition freeze's window, the flags' grace period.
	window time.Duration

	mu sync.Mutex
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
		graces: make(map[string]MaintenanceGrace), untimed: make(map[untimedKey]time.Time)}
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

// nextOf returns the next look: at the deadline, or at retry if sooner;
// a zero time is none.
func nextOf(deadline, retry time.Time) Next {
	if !retry.IsZero() && (deadline.IsZero() || retry.Before(deadline)) {
		return Next{At: retry}
	}
	return Next{At: deadline, Deadline: true}
}

// Seed counts every node in the guard before the first look, as the cluster
// shows them: a new leader judges zones, the halt and the freeze from every
// node, not from the few it happens to look at first. It also reads how far
// the local clock runs ahead of the apiserver's (now minus apiNow), once for
// the process's life.
//
// kept is what the cluster kept of the disruption state, on the apiserver's
// clock: a new leader carries on with the freeze the old one held, its
// window and its cooldown, and knows of the spans no leader could mark a
// node in (AnnotationUnwatched).
func (m *Model) Seed(nodes []*corev1.Node, settings func(*corev1.Node) policy.Settings, kept Kept, now, apiNow time.Time) disruption.Change {
	m.mu.Lock()
	m.skew = now.Sub(apiNow)
	m.mu.Unlock()
	freeze := kept.Freeze
	if freeze != nil {
		freeze = ptr.To(m.shiftRecord(*freeze, m.skewNow()))
	}
	for _, o := range kept.Unwatched {
		m.guard.Excuse(o.From.Add(m.skewNow()), o.To.Add(m.skewNow()), now)
	}
	statuses := make(map[string]disruption.NodeStatus, len(nodes))
	for _, node := range nodes {
		s := settings(node)
		w, held := m.maintenance(node, s, now)
		// Nothing is heard yet: a node already marked counts as silent
		// since its mark, unless its maintenance holds it.
		statuses[node.Name] = m.status(node, health.Verdict{}, s.Pool, time.Time{}, w, held, now)
	}
	return m.guard.Seed(statuses, freeze, now)
}

// Kept is what the cluster keeps of the disruption state for a new leader,
// on the apiserver's clock.
type Kept struct {
	// Freeze is the partition freeze (AnnotationFreeze), nil for none.
	Freeze *disruption.Record
	// Unwatched are the recent spans in which no leader could mark a node
	// (AnnotationUnwatched).
	Unwatched []disruption.Span
}

// UnwatchedSpans returns the recent spans in which no leader could mark a
// node (the outages excused, the time before this process took over), as
// the cluster should keep them, on the apiserver's clock.
func (m *Model) UnwatchedSpans(now time.Time) []disruption.Span {
	spans := m.guard.Excused(now)
	d := m.skewNow()
	for i := range spans {
		spans[i].From, spans[i].To = spans[i].From.Add(-d), spans[i].To.Add(-d)
	}
	return spans
}

// FreezeRecord returns the partition freeze as the cluster should keep it,
// on the apiserver's clock, and whether one holds.
func (m *Model) FreezeRecord() (disruption.Record, bool) {
	r, ok := m.guard.FreezeRecord()
	if !ok {
		return r, false
	}
	return m.shiftRecord(r, -m.skewNow()), true
}

// shiftRecord moves a freeze record's times by d: from the apiserver's
// clock to the local one, or back.
func (m *Model) shiftRecord(r disruption.Record, d time.Duration) disruption.Record {
	shift := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.Add(d)
	}
	return disruption.Record{Since: shift(r.Since), From: shift(r.From), ClearSince: shift(r.ClearSince)}
}

// Seeded reports whether Seed has run.
func (m *Model) Seeded() bool { return m.guard.Seeded() }

// Look decides what a look at a node calls for, and records what it learnt.
func (m *Model) Look(in Input) Decision {
	node, now := in.Node, in.Now
	d := Decision{Pool: in.Settings.Pool}
	d.Change = merge(m.takePending(), m.guard.SetBlind(in.Blind, now))
	obs := m.tracker.Observe(node.Name, node.UID, health.PulseOf(node, in.Lease), now)
	d.First = obs.First
	v := health.Judge(node, obs.LastHeartbeat, in.Settings.Grace, now)
	d.Verdict = v
	if v.Expired && !m.guard.Silent(node.Name) {
		// The node has just gone silent: see how many others are fading
		// with it before anything destructive is done to it.
		d.Change = merge(d.Change, m.Tick(now, in.Blind))
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
	d.MarkPods = m.MarksPods(node)
	if d.InMaintenance && !d.Maintenance.Until.IsZero() && d.Want != "" {
		retry = earliest(retry, d.Maintenance.Until)
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
	if w == nil || !w.Took {
		return nil
	}
	return m.guard.ReturnTaint(name)
}

// Confirm judges a node again from what a live read shows, just before it
// is marked: a heartbeat the cache had not shown, or an outage excused while
// the read was in flight, moves the deadline. It reports whether the node is
// still silent, with the verdict that stands.
func (m *Model) Confirm(node *corev1.Node, lease *coordinationv1.Lease, grace health.Grace, now time.Time) (health.Verdict, bool) {
	obs := m.tracker.Observe(node.Name, node.UID, health.PulseOf(node, lease), now)
	v := health.Judge(node, obs.LastHeartbeat, grace, now)
	silent := !obs.Renewed && v.Expired
	if silent {
		m.mu.Lock()
		m.confirmed[node.Name] = now
		m.mu.Unlock()
	}
	return v, silent
}

// MarksPods reports whether the node's pods are to be marked NotReady as
// the node stands: it is Unknown (the controller found it silent) and
// nothing holds the marking. A look decides it so, and so does the pods'
// own turn, which may come after the node is back.
func (m *Model) MarksPods(node *corev1.Node) bool {
	if WantedNoExecute(node) != corev1.TaintNodeUnreachable {
		return false
	}
	ok, _ := m.guard.PodMarkingAllowedFor(node.Name)
	return ok
}

// Fresh reports whether the node's silence was confirmed from a live read
// within the last second, and nothing was heard of it since: a write that
// follows needs no live read of its own.
func (m *Model) Fresh(name string, now time.Time) bool {
	m.mu.Lock()
	at, ok := m.confirmed[name]
	m.mu.Unlock()
	return ok && now.Sub(at) < freshFor && m.tracker.HeardAt(name).Before(at)
}

// HeardLive reports whether the node's Lease, read live, or what the
// controller heard before, shows a heartbeat within its grace: the node is
// alive, whatever the cache says of it, and nothing is to be evicted from it
// for its silence. The pods of a
// node that came back while the watch lagged are not evicted in the moment
// before its heartbeats arrive. A node not looked at yet is not judged here.
func (m *Model) HeardLive(node *corev1.Node, lease *coordinationv1.Lease, grace time.Duration, now time.Time) bool {
	if !m.tracker.Tracked(node.Name, node.UID) {
		return false
	}
	m.tracker.Observe(node.Name, node.UID, health.PulseOf(node, lease), now)
	heard := m.tracker.HeardAt(node.Name)
	return !heard.IsZero() && now.Sub(heard) < grace
}

// Back reports, from a node and its Lease as read live, whether the node is
// back: Ready, or, still marked Unknown, heard within its grace. Nothing is
// evicted from a node that is back, nor its pods marked NotReady: the watch
// may lag behind a node that has just come back, and the cache still show
// it down.
func (m *Model) Back(live *corev1.Node, lease *coordinationv1.Lease, grace time.Duration, now time.Time) bool {
	ready := health.ReadyCondition(live)
	switch {
	case ready == nil:
		return false
	case ready.Status == corev1.ConditionTrue:
		return true
	case ready.Status == corev1.ConditionUnknown:
		return m.HeardLive(live, lease, grace, now)
	default:
		return false
	}
}

// Silent reports, from a node and its Lease as read live, whether the node
// is still silent: marked Unknown, and not heard within its grace. Its pods
// are marked NotReady only then: a kubelet that is back, Ready or not, owns
// its pods' readiness.
func (m *Model) Silent(live *corev1.Node, lease *coordinationv1.Lease, grace time.Duration, now time.Time) bool {
	ready := health.ReadyCondition(live)
	return ready != nil && ready.Status == corev1.ConditionUnknown && !m.HeardLive(live, lease, grace, now)
}

// Tick re-evaluates what changes with time alone: the nodes going quiet
// within the freeze window, and whether every node is known well enough to
// end the wait after start. While the apiserver is out of reach (blind)
// nothing is re-evaluated: no heartbeat could be seen, and the time will be
// excused from every node's silence once it answers.
func (m *Model) Tick(now time.Time, blind bool) disruption.Change {
	c := merge(m.takePending(), m.guard.SetBlind(blind, now))
	if blind {
		return c
	}
	q := m.tracker.Quiet(now, m.window)
	return merge(c, m.guard.TickSooner(q.Fading, q.FadingSooner, q.Decided, now))
}

// Excuse takes a span during which the controller could not reach the
// apiserver off every node's silence, and out of the partition freeze's
// window: the kubelets' heartbeats could not be written, or not be seen, so
// the span says nothing of the nodes.
func (m *Model) Excuse(from, to, now time.Time) {
	m.tracker.Excuse(from, to)
	m.guard.Excuse(from, to, now)
}

// Unwatched takes a span no leader watched the cluster (this process took
// the leader election Lease from one that last renewed it at from) out of
// the partition freeze's window, as an outage: no node could be marked in
// it, so the nodes marked before it and those seen going quiet after it may
// have gone silent together. Unlike an outage, it says nothing of the
// nodes' heartbeats, which the apiserver took all along: no node's silence
// is excused.
func (m *Model) Unwatched(from, to, now time.Time) {
	m.guard.Excuse(from, to, now)
}

// Forgotten is what the model knew of a node it forgot.
type Forgotten struct {
	// Known is false for a node the tracker never saw.
	Known bool
	UID   types.UID
	State health.State
}

// Remove forgets a node that no longer exists, and returns what the guard
// changed and what the tracker knew of it.
func (m *Model) Remove(name string, now time.Time) (disruption.Change, Forgotten) {
	c := m.guard.Remove(name, now)
	m.mu.Lock()
	delete(m.pods, name)
	delete(m.tainted, name)
	delete(m.confirmed, name)
	delete(m.graces, name)
	for key := range m.untimed {
		if key.node == name {
			delete(m.untimed, key)
		}
	}
	m.mu.Unlock()
	uid, state, ok := m.tracker.Forget(name)
	return c, Forgotten{Known: ok, UID: uid, State: state}
}

// Candidates returns the nodes the safety resync checks against what the
// model wants of them (Stray): those not judged healthy, and those last seen
// with a lifecycle NoExecute taint. In a healthy cluster, a handful.
func (m *Model) Candidates() []string {
	names := m.tracker.NotHealthy()
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.tainted {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// Stray reports whether a node, as the cluster shows it, is short of what
// the model wants of it with nothing to wait for: one that needs its
// lifecycle NoExecute taint, lacks it, and is neither held nor waiting for
// its zone's turn; one the guard counts as held for a maintenance whose
// grace has run out since it was last looked at, tainted or not, whatever
// else holds it; or one Ready again that keeps the taint. The safety
// resync looks at such nodes again, whatever wakes were lost.
func (m *Model) Stray(node *corev1.Node, s policy.Settings, now time.Time) bool {
	m.seenTaint(node)
	want := WantedNoExecute(node)
	if want == "" {
		return lifecycleNoExecute(node) != nil
	}
	if m.guard.InMaintenance(node.Name) {
		// Its grace ending changes what the guard counts, whatever else
		// holds the node, and whether its taint is on (a hold whose
		// removal failed) or off.
		if _, held := m.maintenance(node, s, now); !held {
			return true
		}
	}
	if HasNoExecute(node, want) {
		return false
	}
	return m.guard.Hold(node.Name) == "" && !m.guard.Waiting(node.Name)
}

// seenTaint records whether the node carries a lifecycle NoExecute taint.
func (m *Model) seenTaint(node *corev1.Node) {
	has := lifecycleNoExecute(node) != nil
	m.mu.Lock()
	defer m.mu.Unlock()
	if has {
		m.tainted[node.Name] = struct{}{}
	} else {
		delete(m.tainted, node.Name)
	}
}

// skewNow returns the skew read at Seed.
func (m *Model) skewNow() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.skew
}

// earliest returns the earlier of two times, the zero time counting as
// none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
