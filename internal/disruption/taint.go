package disruption

import (
	"slices"
	"time"
)

// Why a NoExecute taint is held back.
const (
	HeldHalted = "every zone is fully disrupted"
	HeldFrozen = "partition freeze"
	HeldRate   = "zone rate limit"
	// HeldPaused: the pool's policy has pause requests.
	HeldPaused = "pool paused"
	// HeldBreaker: more of the pool is unhealthy than its maxUnhealthy.
	HeldBreaker = "too many unhealthy nodes in the pool"
	// HeldFullZone: the node's zone of its pool has no ready node, and the
	// pool halts such zones.
	HeldFullZone = "zone fully disrupted, and the pool halts such zones"
	// HeldInvalid: the node's pool's policy is not in force; its nodes
	// are held until it is fixed or deleted.
	HeldInvalid = "pool's policy not in force"
	// HeldDeciding: the controller has just started and does not know yet
	// whether the nodes it finds marked are a partition.
	HeldDeciding = "deciding on a partition freeze after start"
	// HeldMaintenance: the node is in maintenance, and its maintenance
	// grace has not run out.
	HeldMaintenance = "node in maintenance"
)

// TakeTaint asks whether the node may be tainted NoExecute now. Nodes wait in
// their zone's queue in the order they first asked; the head takes a token
// from the zone's bucket. When the answer is no, wait says when to ask again,
// or is negative when only a change of state can help.
func (g *Guard) TakeTaint(name string, now time.Time) (ok bool, wait time.Duration, why string) {
	if why := g.hold(name); why != "" {
		return false, -1, why
	}
	if g.cluster.deciding {
		return false, -1, HeldDeciding
	}
	st, _ := g.census.node(name)
	id := zoneOf(st)
	q := g.queues[id]
	if q == nil {
		q = newZoneQueue(g.pools.get(st.Pool).Normal, now)
		g.queues[id] = q
	}
	if ok, wait := q.take(name, now); !ok {
		return false, wait, HeldRate
	}
	return true, 0, ""
}

// ReturnTaint gives back the token TakeTaint gave a node whose taint could
// not be written: a node whose writes keep failing (a webhook denying them)
// must not spend its zone's rate, one token at each of its retries, while
// the zone's other nodes wait. The node joins the back of the queue when it
// asks again. It returns the nodes waiting in the zone, which should ask
// again now: they were told to wait for a turn the node no longer takes.
func (g *Guard) ReturnTaint(name string) (waiting []string) {
	st, _ := g.census.node(name)
	q := g.queues[zoneOf(st)]
	if q == nil {
		return nil
	}
	return q.refund()
}

// CancelTaint takes a node out of its zone's queue: it no longer needs the
// taint.
func (g *Guard) CancelTaint(name string) {
	st, _ := g.census.node(name)
	g.queues.leave(zoneOf(st), name)
}

// DestructiveAllowedFor reports whether the named node may be tainted
// NoExecute, its pods marked NotReady or evicted, and if not, why: the
// cluster-wide holds, then its pool's and its zone's, then the wait after
// start.
func (g *Guard) DestructiveAllowedFor(name string) (bool, string) {
	return g.allowedFor(name, true)
}

// PodMarkingAllowedFor reports whether the named node's pods may be marked
// NotReady, and if not, why: what holds its evictions holds the marking
// too, but for every zone being down, where the pods are marked as
// kube-controller-manager marks them, and for maintenance: the pods of a
// node that went quiet serve nobody, planned or not.
func (g *Guard) PodMarkingAllowedFor(name string) (bool, string) {
	return g.allowedFor(name, false)
}

// allowedFor reports whether destructive work may touch the named node, and
// if not, why; evicting says whether it evicts (or taints NoExecute), which
// every zone being down and maintenance hold, or only marks pods NotReady,
// which they do not.
func (g *Guard) allowedFor(name string, evicting bool) (bool, string) {
	why := g.cluster.hold()
	if why == "" || why == HeldHalted && !evicting {
		why = g.poolHold(name)
	}
	if why == "" && evicting {
		why = g.maintenanceHold(name)
	}
	if why == "" && g.cluster.deciding {
		why = HeldDeciding
	}
	return why == "", why
}

// Hold returns why the named node is held, or "": a partition freeze,
// every zone down, its pool's or zone's hold, or its maintenance. A held node carries none
// of the controller's NoExecute taints; when the hold lifts it is tainted
// again at its zone's rate, and its pods' countdowns start from then. The
// wait after start is not a hold: it takes no taint off.
func (g *Guard) Hold(name string) string {
	return g.hold(name)
}

// hold returns why the named node is held, the cluster-wide holds first.
func (g *Guard) hold(name string) string {
	if why := g.cluster.hold(); why != "" {
		return why
	}
	if why := g.poolHold(name); why != "" {
		return why
	}
	return g.maintenanceHold(name)
}

// poolHold returns why the named node's pool or zone holds NoExecute taints
// and evictions back, or "".
func (g *Guard) poolHold(name string) string {
	st, _ := g.census.node(name)
	return g.pools.nodeHold(st, g.census.zone(zoneOf(st)).State)
}

// InMaintenance reports whether the guard counts the named node as held for
// its maintenance, whatever else holds it: out of every count, until a look
// finds its grace over.
func (g *Guard) InMaintenance(name string) bool {
	return g.maintenanceHold(name) != ""
}

// maintenanceHold returns HeldMaintenance for a node in maintenance, or "".
func (g *Guard) maintenanceHold(name string) string {
	if st, _ := g.census.node(name); st.Maintenance {
		return HeldMaintenance
	}
	return ""
}

// Waiting reports whether the named node's NoExecute taint waits for
// something that will come without a change of state: the wait after start
// ends, or the node's turn behind the head of its zone's queue, which each
// taint taken brings forward.
func (g *Guard) Waiting(name string) bool {
	if g.cluster.deciding {
		return true
	}
	st, _ := g.census.node(name)
	q := g.queues[zoneOf(st)]
	return q != nil && slices.Index(q.waiting, name) > 0
}
