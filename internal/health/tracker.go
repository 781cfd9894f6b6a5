package health

import (
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Tracker remembers, per node, the last pulse observed and when the controller
// observed it change. It is safe for concurrent use.
//
// The tracker starts empty, so after a restart every node's first observation
// counts as a heartbeat: each node gets a full grace period from the moment
// the controller first sees it.
type Tracker struct {
	mu    sync.Mutex
	nodes map[string]*entry
	// quietFrom holds, for the nodes not heard since a refresh
	// (RefreshAll), when they last showed life to the partition freeze:
	// the refresh moved their last heartbeat, and a refresh gives a new
	// grace to mark a node but does not make a node silent for long one
	// going quiet now. It is kept apart, and empty but after a refresh, so
	// that a heartbeat costs no more than recording itself.
	quietFrom map[string]time.Time
}

type entry struct {
	uid           types.UID
	pulse         Pulse
	lastHeartbeat time.Time
	// grace is the grace period of the last verdict, zero before the
	// first: the deadline moves with every heartbeat heard, judged or not.
	grace time.Duration
	state State
	// heardAt is when a heartbeat was last heard after the first
	// observation, zero while none was: the node is known to be alive
	// since the controller started watching it. Unlike lastHeartbeat,
	// neither an excused outage nor a refresh moves it.
	heardAt time.Time
	// leaseAhead and statusAhead are true while that part of the pulse
	// came from a live read the watch has not caught up with: the cache's
	// copies until then are older, and no heartbeat (unstaleLease).
	leaseAhead, statusAhead bool
	// datedByMark is true, until a heartbeat is heard, for a node already
	// marked when first observed: its silence began before this process,
	// and is dated by its mark (the freeze's count of silences), not taken
	// for a node going quiet now.
	datedByMark bool
}

// Observation is what the tracker knows of a node after an observation.
type Observation struct {
	// LastHeartbeat is when a heartbeat was last observed, on the
	// controller's clock.
	LastHeartbeat time.Time
	// First is true when the node was not tracked before (or was tracked
	// under another UID, i.e. deleted and created again).
	First bool
	// Renewed is true when this observation was a heartbeat.
	Renewed bool
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{nodes: make(map[string]*entry)}
}

// Observe records the pulse of a node seen at now in the cache. A pulse that
// differs from the last one, in its Lease or its Ready heartbeat, is a
// heartbeat timed at now. Change matters, not the order of timestamps, so a
// renewTime that moves backwards still counts, but for one case: while the
// watch has not caught up with a live read (ObserveLive), a copy whose
// heartbeat is older than the one read live is a copy from before the read,
// and no heartbeat.
func (t *Tracker) Observe(name string, uid types.UID, p Pulse, now time.Time) Observation {
	return t.observe(name, uid, p, now, false)
}

// ObserveLive records the pulse of a node read live from the apiserver at
// now, as Observe does; the watch may deliver the same heartbeat later, and
// the copies before it, none of which is heard again.
func (t *Tracker) ObserveLive(name string, uid types.UID, p Pulse, now time.Time) Observation {
	return t.observe(name, uid, p, now, true)
}

func (t *Tracker) observe(name string, uid types.UID, p Pulse, now time.Time, live bool) Observation {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.nodes[name]
	if !ok || e.uid != uid {
		if !ok {
			e = &entry{}
			t.nodes[name] = e
		}
		*e = entry{uid: uid, pulse: p, lastHeartbeat: now, state: e.state, datedByMark: p.ReadyUnknown}
		t.heard(name)
		return Observation{LastHeartbeat: now, First: true, Renewed: true}
	}
	if e.leaseAhead && !live {
		e.unstaleLease(&p, false)
	}
	if e.statusAhead && !live {
		e.unstaleStatus(&p, false)
	}
	if lease, status := p.LeaseChanged(e.pulse), p.StatusChanged(e.pulse); lease || status {
		e.heard(now)
		e.pulse = p
		e.leaseAhead, e.statusAhead = e.leaseAhead || live && lease, e.statusAhead || live && status
		t.heard(name)
		return Observation{LastHeartbeat: now, Renewed: true}
	}
	// A Lease that disappeared is remembered as gone, so that a new one
	// counts when it appears.
	e.pulse.HasLease = p.HasLease
	return Observation{LastHeartbeat: e.lastHeartbeat}
}

// Heard is what a Lease or Node heard off the watch asks of the controller.
type Heard uint8

const (
	// NoHeartbeat is heard when nothing a heartbeat is made of changed, or
	// the node is not tracked yet.
	NoHeartbeat Heard = iota
	// OnTime is a heartbeat of a node judged healthy, heard before its
	// deadline. Its deadline moves with it, and the node needs no look:
	// it is judged again when the old deadline comes. The bulk of a
	// cluster's events.
	OnTime
	// NeedsLook is a heartbeat of a node not judged healthy, or heard once
	// its deadline had passed. Either way the node may have been counted
	// as silent (a look at the deadline tells the disruption guard so,
	// whether or not its mark lands), and only a look takes that back.
	NeedsLook
)

// Heartbeat reports whether h is a heartbeat.
func (h Heard) Heartbeat() bool { return h != NoHeartbeat }

// HeardLease records a Lease the moment the informer delivers it, before the
// node's turn in the work queue comes: a renewal is timed when the
// controller first saw it, however long the queue. Only tracked nodes are
// updated; a node's first observation is Observe's.
func (t *Tracker) HeardLease(name string, lease *coordinationv1.Lease, now time.Time) Heard {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.nodes[name]
	if !ok {
		return NoHeartbeat
	}
	p := e.pulse
	p.setLease(lease)
	if e.leaseAhead {
		e.unstaleLease(&p, true)
	}
	if !p.LeaseChanged(e.pulse) {
		return NoHeartbeat
	}
	h := e.heard(now)
	e.pulse = p
	t.heard(name)
	return h
}

// HeardNode records a Node the moment the informer delivers it, as
// HeardLease does a Lease.
func (t *Tracker) HeardNode(node *corev1.Node, now time.Time) Heard {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.nodes[node.Name]
	if !ok || e.uid != node.UID {
		return NoHeartbeat
	}
	ready := readyHeartbeat(node)
	if e.statusAhead {
		p := e.pulse
		p.ReadyHeartbeatNanos = ready
		e.unstaleStatus(&p, true)
		ready = p.ReadyHeartbeatNanos
	}
	if ready == e.pulse.ReadyHeartbeatNanos {
		return NoHeartbeat
	}
	h := e.heard(now)
	e.pulse.ReadyHeartbeatNanos = ready
	t.heard(node.Name)
	return h
}

// unstaleLease puts in p, a pulse the cache or the watch shows while the
// Lease part came from a live read (leaseAhead), that part in place of an
// older one: the watch delivers a node's changes in order, so until it
// delivers what was read live, what the cache shows is from before the read.
// A later part is news, and the watch's delivery of the part read live
// (delivered) has caught up; a look's copy of it may be the live read's own,
// and has not. Called with mu held; the callers test leaseAhead first, which
// keeps the heartbeat path to one branch.
func (e *entry) unstaleLease(p *Pulse, delivered bool) {
	switch {
	case p.HasLease && p.LeaseRenewNanos < e.pulse.LeaseRenewNanos:
		*p = p.withLeaseOf(e.pulse)
	case delivered || p.LeaseChanged(e.pulse):
		e.leaseAhead = false
	}
}

// unstaleStatus is unstaleLease for the Ready heartbeat (statusAhead).
func (e *entry) unstaleStatus(p *Pulse, delivered bool) {
	switch {
	case p.ReadyHeartbeatNanos < e.pulse.ReadyHeartbeatNanos:
		p.ReadyHeartbeatNanos = e.pulse.ReadyHeartbeatNanos
	case delivered || p.StatusChanged(e.pulse):
		e.statusAhead = false
	}
}

// heard records a heartbeat heard at now, and says what it asks of the
// controller.
func (e *entry) heard(now time.Time) Heard {
	h := OnTime
	if e.state != StateHealthy || e.grace != 0 && !now.Before(e.lastHeartbeat.Add(e.grace)) {
		h = NeedsLook
	}
	e.lastHeartbeat = now
	e.heardAt, e.datedByMark = now, false
	return h
}

// Judged records the verdict reached for a node and returns the state it had
// before. Nodes the tracker does not know are ignored.
func (t *Tracker) Judged(name string, v Verdict) State {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.nodes[name]
	if !ok {
		return StateUnjudged
	}
	prev := e.state
	e.state = v.State
	e.grace = v.Grace
	return prev
}

// Deadline returns when the node's grace period ends, counted from the last
// heartbeat heard, or false for a node not tracked or never judged.
func (t *Tracker) Deadline(name string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.nodes[name]
	if !ok || e.grace == 0 {
		return time.Time{}, false
	}
	return e.lastHeartbeat.Add(e.grace), true
}

// Tracked reports whether the tracker knows the node, under this UID.
func (t *Tracker) Tracked(name string, uid types.UID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.nodes[name]
	return ok && e.uid == uid
}

// HeardAt returns when the last heartbeat of the node was heard since the
// tracker first observed it, or the zero time when none was.
func (t *Tracker) HeardAt(name string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.nodes[name]; ok {
		return e.heardAt
	}
	return time.Time{}
}

// Forget drops a node and returns what was known of it.
func (t *Tracker) Forget(name string) (uid types.UID, state State, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.nodes[name]
	if !ok {
		return "", StateUnjudged, false
	}
	delete(t.nodes, name)
	t.heard(name)
	return e.uid, e.state, true
}

// Overdue returns the nodes whose deadline has passed at now but whose last
// verdict was not Unreachable: nodes a missed or delayed requeue would
// otherwise leave unjudged.
func (t *Tracker) Overdue(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for name, e := range t.nodes {
		if e.state != StateUnreachable && e.grace != 0 && !now.Before(e.lastHeartbeat.Add(e.grace)) {
			names = append(names, name)
		}
	}
	return names
}

// NotHealthy returns the nodes whose last verdict was NotReady or
// Unreachable: the few, in a healthy cluster, whose wanted taints the
// safety resync checks against the cluster.
func (t *Tracker) NotHealthy() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var names []string
	for name, e := range t.nodes {
		if e.state == StateNotReady || e.state == StateUnreachable {
			names = append(names, name)
		}
	}
	return names
}

// Len returns the number of tracked nodes.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.nodes)
}
