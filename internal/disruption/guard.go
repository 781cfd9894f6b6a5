package disruption

import (
	"slices"
	"time"
)

// Config holds the guard's thresholds and rates.
type Config struct {
	// Rates and UnhealthyZoneThreshold are the settings of the nodes no
	// pool claims.
	Rates
	// UnhealthyZoneThreshold is the not-ready share at which a zone is
	// partially disrupted.
	UnhealthyZoneThreshold float64
	// FreezeThreshold is the share of nodes whose heartbeats, lost within
	// one grace period, freeze destructive work; 0 turns the freeze off.
	FreezeThreshold float64
	// FreezeWindow is that grace period.
	FreezeWindow time.Duration
	// FreezeCooldown is how long the share must stay below the threshold
	// before a freeze ends.
	FreezeCooldown time.Duration
}

// NodeStatus is what the guard needs to know of a node.
type NodeStatus struct {
	// Pool is the node's pool, "" for none.
	Pool     string
	Zone     string
	Excluded bool
	// Ready is true when the node's Ready condition is True.
	Ready bool
	// Maintenance is true while a maintenance condition holds a node that
	// is down (package maintenance): it counts in no zone, pool or freeze,
	// and its NoExecute taint and evictions are held, as for a node going
	// quiet on purpose. A Ready node in maintenance is counted as Ready.
	Maintenance bool
	// MaintenanceSince is when the maintenance that takes the node out of
	// the counts began; zero when unknown, or for a node not in
	// maintenance. A new leader judges a wave of silences older than it
	// with the node counted, as the leader of its time did.
	MaintenanceSince time.Time
	// Planned is true while a maintenance condition says the node's
	// silence, if it falls silent, is planned: it never counts as going
	// quiet, nor as silent, for the freeze or a breaker, though it counts
	// as Ready until it is marked down.
	Planned bool
	// SilentSince is when the node's grace period ran out without a
	// heartbeat; zero while it heartbeats.
	SilentSince time.Time
}

// Change says what an update changed beyond the node itself. It names what
// changed and leaves the values to be read when they are acted on: updates
// run concurrently, and a caller that publishes a zone's gauges or wakes a
// pool's nodes from the guard as it is then never shows a value older than
// one already shown, which values carried in the Change could.
type Change struct {
	// Zones lists the zones whose counts or settings changed.
	Zones []ZoneID
	// StateChanged lists the zones whose state changed.
	StateChanged []ZoneID
	// Held lists the pools whose own hold on NoExecute taints and
	// evictions (breaker, pause, halted zones) started or ended.
	Held []string
	// Halt is true when every zone has just become fully disrupted, or has
	// just stopped being so; Halted says which.
	Halt, Halted bool
	// Freeze is true when a partition freeze has just started or ended;
	// Frozen says which.
	Freeze, Frozen bool
	// Cooldown is true when a freeze's cooldown has just started or been
	// called off: the record of the freeze changed.
	Cooldown bool
	// Decided is true when the guard, seeded at start, has just learnt
	// enough of every node to decide on a partition freeze, and lets
	// destructive work begin.
	Decided bool
}

// Empty reports whether nothing beyond the node changed.
func (c Change) Empty() bool {
	return len(c.Zones) == 0 && len(c.StateChanged) == 0 && len(c.Held) == 0 && !c.Halt && !c.Freeze && !c.Cooldown && !c.Decided
}

// Guard is the cluster-wide disruption state: zone counts and states, the
// per-zone NoExecute tainting queues, the pools' holds, the all-zones halt
// and the partition freeze, held by its parts, which know nothing of each
// other. It is not safe for concurrent use: its one owner, the safety
// model, makes every call under its own lock (safety.Model).
type Guard struct {
	census  census
	queues  queues
	pools   pools
	cluster clusterHold
}

// NewGuard returns a guard with no nodes.
func NewGuard(cfg Config) *Guard {
	return &Guard{
		census:  newCensus(),
		queues:  make(queues),
		pools:   newPools(cfg),
		cluster: newClusterHold(cfg),
	}
}

// Update records a node's status.
func (g *Guard) Update(name string, st NodeStatus, now time.Time) Change {
	var c Change
	if !g.record(name, st, &c) {
		return Change{}
	}
	g.settle(now, &c)
	return c
}

// Seed records the status of every node at once, before the first Update:
// zone states, the halt and the freeze are settled only once all are
// counted, so that a new leader does not judge them from the few nodes it
// happened to look at first. The freeze is rebuilt from the silences the
// cluster shows (the nodes already marked, and when), unless the cluster
// kept the freeze an earlier leader held (kept): then that freeze goes on,
// judged from then on as that leader would have. Destructive work then
// waits until Tick finds every node decided, or one freeze window has
// passed: a new leader must not taint or evict the nodes the old one marked
// before it knows whether the others are silent too.
func (g *Guard) Seed(nodes map[string]NodeStatus, kept *Record, now time.Time) Change {
	var c Change
	for name, st := range nodes {
		g.record(name, st, &c)
	}
	if g.cluster.seed(g.census.judgedOver(), kept, now) {
		c.Freeze, c.Frozen = true, true
	}
	g.settle(now, &c)
	return c
}

// FreezeRecord returns the partition freeze as the cluster should keep it,
// and whether one holds.
func (g *Guard) FreezeRecord() (Record, bool) {
	return g.cluster.freeze.Record()
}

// Excuse tells the guard of a span in which no node could be marked (the
// apiserver out of the controller's reach, or no leader watching): the
// partition freeze's window does not count it.
func (g *Guard) Excuse(from, to, now time.Time) {
	g.cluster.freeze.Excuse(from, to, now)
}

// SetBlind tells the guard whether the apiserver is out of the
// controller's reach. While it is, the partition freeze neither starts nor
// cools down, and the wait after start does not end; once it answers, a
// cooldown under way starts again.
func (g *Guard) SetBlind(blind bool, now time.Time) Change {
	var c Change
	c.Cooldown = g.cluster.setBlind(blind, now)
	return c
}

// Excused returns the spans in which no node could be marked (outages,
// time no leader watched) that still bear on the partition freeze's
// window, for the cluster to keep.
func (g *Guard) Excused(now time.Time) []Span {
	return g.cluster.freeze.Excused(now)
}

// Seeded reports whether Seed has run.
func (g *Guard) Seeded() bool {
	return g.cluster.seeded
}

// record counts a node's new status and reports whether it changed. A node
// that stays in its zone keeps its place in the zone's tainting queue, or a
// change of its status (its grace period running out under a new leader)
// would send it to the back, behind nodes that asked later.
func (g *Guard) record(name string, st NodeStatus, c *Change) bool {
	old, known := g.census.node(name)
	if known && old == st {
		return false
	}
	if known && zoneOf(old) != zoneOf(st) {
		g.queues.leave(zoneOf(old), name)
	}
	g.census.set(name, old, known, st, c)
	silentSince := st.SilentSince
	if st.Maintenance || st.Planned {
		// A planned silence is no sign of a partition, from the moment it
		// is known: nor is the node going quiet, whatever the last tick
		// counted.
		silentSince = time.Time{}
		g.cluster.notFading(name)
	}
	g.cluster.silence(name, silentSince)
	return true
}

// Remove forgets a deleted node.
func (g *Guard) Remove(name string, now time.Time) Change {
	var c Change
	old, known := g.census.remove(name, &c)
	if !known {
		return Change{}
	}
	g.queues.leave(zoneOf(old), name)
	g.cluster.silence(name, time.Time{})
	g.settle(now, &c)
	return c
}

// Tick re-evaluates what changes with time alone: the freeze's window and
// cooldown, and the fading nodes, those that went quiet for half their grace
// period within the freeze window. Nodes that lose their heartbeats
// together expire one by one as the controller observes them; counting the
// fading ones lets the freeze, and each pool's breaker, act before the
// first of them is tainted. decided is how many nodes are known to live or
// to be going quiet: once every node is, the wait after Seed ends.
func (g *Guard) Tick(fading []string, decided int, now time.Time) Change {
	return g.TickSooner(fading, nil, decided, now)
}

// TickSooner is Tick with sooner, the nodes that fade for the partition
// freeze before they fade for their pool's breaker: a pool judges its nodes
// by its own grace, the freeze judges every node on one clock, so that a
// partition that cuts pools of different graces at once is seen at once.
func (g *Guard) TickSooner(fading, sooner []string, decided int, now time.Time) Change {
	byPool, n := g.census.fadingByPool(fading)
	if len(sooner) > 0 {
		_, more := g.census.fadingByPool(sooner)
		if n == nil {
			n = make(map[string]struct{}, len(more))
		}
		for name := range more {
			n[name] = struct{}{}
		}
	}
	g.cluster.setFading(n)
	g.pools.setFading(byPool)
	var c Change
	g.settle(now, &c)
	c.Decided = g.cluster.decide(decided, g.census.size(), now)
	for pool := range g.poolNames() {
		g.updateHold(pool, &c)
	}
	return c
}

// SetPool sets the settings of a named pool, or with nil drops them: its
// nodes then follow the guard's Config until they are updated into another
// pool.
func (g *Guard) SetPool(name string, p *Pool, now time.Time) Change {
	g.pools.set(name, p)
	var c Change
	// Every zone with counted nodes has a queue, and so do the zones
	// where nodes wait: their rates change too.
	for id := range g.queues {
		if id.Pool == name {
			c.Zones = appendOnce(c.Zones, id)
		}
	}
	g.settle(now, &c)
	g.updateHold(name, &c)
	return c
}

// settle brings what derives from the counts up to date after a change: the
// states and tainting rates of the zones in c, their pools' holds, the halt
// and the freeze.
func (g *Guard) settle(now time.Time, c *Change) {
	for _, id := range c.Zones {
		pool := g.pools.get(id.Pool)
		z, changed := g.census.restate(id, pool.UnhealthyZoneThreshold)
		if changed {
			c.StateChanged = append(c.StateChanged, id)
		}
		g.queues.settle(id, z.Size(), ZoneRate(z.State, z.Size(), pool.Rates), now)
	}
	for _, id := range c.Zones {
		g.updateHold(id.Pool, c)
	}
	g.cluster.settle(g.census.allFull(), g.census.judged(), now, c)
}

// updateHold brings the pool's remembered hold up to date, noting in c when
// it starts, ends or changes reason.
func (g *Guard) updateHold(pool string, c *Change) {
	if g.pools.update(pool, func() Counts { return g.census.poolCounts(pool) }) {
		c.Held = appendOnce(c.Held, pool)
	}
}

// poolNames returns every pool with settings, nodes, a queue or a hold.
func (g *Guard) poolNames() map[string]struct{} {
	out := map[string]struct{}{"": {}}
	g.pools.names(out)
	for id := range g.census.zones {
		out[id.Pool] = struct{}{}
	}
	for id := range g.queues {
		out[id.Pool] = struct{}{}
	}
	return out
}

// appendOnce appends v to s unless s holds it already.
func appendOnce[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
