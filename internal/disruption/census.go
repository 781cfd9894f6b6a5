package disruption

import (
	"slices"
	"time"
)

// census records the nodes and what they add up to in each zone of each
// pool: counts, and the state last derived from them. It keeps the counts
// up to date node by node, so that a heartbeat costs a lookup rather than a
// recount; what a node counts as, and what a count means, are the pure
// rules of zones.go.
type census struct {
	nodes map[string]NodeStatus
	// maintenance counts the nodes in maintenance.
	maintenance int
	// zones holds the zones with counted nodes, and between a change and
	// its restate, those that have just lost their last one.
	zones map[ZoneID]*ZoneSnapshot
}

// newCensus returns a census of no nodes.
func newCensus() census {
	return census{nodes: make(map[string]NodeStatus), zones: make(map[ZoneID]*ZoneSnapshot)}
}

// node returns a node's status, and whether the node is known.
func (cs *census) node(name string) (NodeStatus, bool) {
	st, ok := cs.nodes[name]
	return st, ok
}

// size returns how many nodes are known, excluded ones and those in
// maintenance included.
func (cs *census) size() int { return len(cs.nodes) }

// judged returns how many nodes the partition freeze judges: all but those
// in maintenance, whose silence says nothing of the control plane.
func (cs *census) judged() int { return len(cs.nodes) - cs.maintenance }

// judgedOver returns how many nodes the partition freeze judged at a given
// time, as far as the nodes show it: those it judges now, and those in
// maintenance since after that time.
func (cs *census) judgedOver() func(time.Time) int {
	var since []time.Time
	for _, st := range cs.nodes {
		if st.Maintenance && !st.MaintenanceSince.IsZero() {
			since = append(since, st.MaintenanceSince)
		}
	}
	slices.SortFunc(since, time.Time.Compare)
	judged := cs.judged()
	return func(t time.Time) int {
		i, _ := slices.BinarySearchFunc(since, t, func(s, t time.Time) int {
			if s.After(t) {
				return 1
			}
			return -1
		})
		return judged + len(since) - i
	}
}

// set records a node's changed status, moving it from the counts of old,
// its status so far if known, to those of st, and notes in c the zones whose
// counts changed. The caller looks old up with node, and compares: most
// statuses are heartbeats that change nothing, and cost that lookup only.
func (cs *census) set(name string, old NodeStatus, known bool, st NodeStatus, c *Change) {
	cs.nodes[name] = st
	if known {
		cs.count(old, -1, c)
	}
	cs.count(st, 1, c)
}

// remove forgets a node, notes in c the zone whose counts changed, and
// returns the status the node had.
func (cs *census) remove(name string, c *Change) (NodeStatus, bool) {
	old, known := cs.nodes[name]
	if !known {
		return NodeStatus{}, false
	}
	delete(cs.nodes, name)
	cs.count(old, -1, c)
	return old, true
}

// count adds a node to its zone's counts (n = 1) or takes it out (n = -1).
// An excluded node, or one in maintenance, counts in no zone, and a node taken out of a zone the
// census does not hold was never counted in it.
func (cs *census) count(st NodeStatus, n int, c *Change) {
	if st.Maintenance {
		cs.maintenance += n
		return
	}
	if st.Excluded {
		return
	}
	id := zoneOf(st)
	z := cs.zones[id]
	if z == nil {
		if n < 0 {
			return
		}
		z = new(ZoneSnapshot)
		cs.zones[id] = z
	}
	z.Counts = z.tally(st.Ready, n)
	c.Zones = appendOnce(c.Zones, id)
}

// restate derives a zone's state from its counts under the given
// threshold, forgets the zone once it has no counted node, and returns the
// zone and whether its state changed.
func (cs *census) restate(id ZoneID, threshold float64) (ZoneSnapshot, bool) {
	z := cs.zones[id]
	if z == nil {
		return ZoneSnapshot{}, false
	}
	s := ZoneStateOf(z.Counts, threshold)
	changed := s != z.State
	z.State = s
	if z.Size() == 0 {
		delete(cs.zones, id)
	}
	return *z, changed
}

// zone returns a zone's counts and state; a zone with no counted node is
// the zero ZoneSnapshot.
func (cs *census) zone(id ZoneID) ZoneSnapshot {
	if z := cs.zones[id]; z != nil {
		return *z
	}
	return ZoneSnapshot{}
}

// allFull reports whether every zone with counted nodes is fully
// disrupted, and there is one.
func (cs *census) allFull() bool {
	seen := false
	for _, z := range cs.zones {
		if z.Size() == 0 {
			continue
		}
		seen = true
		if z.State != ZoneFullDisruption {
			return false
		}
	}
	return seen
}

// poolCounts adds up the counts of a pool's zones.
func (cs *census) poolCounts(pool string) Counts {
	var c Counts
	for id, z := range cs.zones {
		if id.Pool == pool {
			c.Ready += z.Ready
			c.NotReady += z.NotReady
		}
	}
	return c
}

// fadingByPool returns how many of the named nodes each pool counts, and
// which the partition freeze counts: excluded and unknown nodes count in
// no pool, and nodes in maintenance in neither.
func (cs *census) fadingByPool(names []string) (byPool map[string]int, judged map[string]struct{}) {
	byPool = make(map[string]int)
	if len(names) == 0 {
		// A healthy fleet, at every tick: nothing to keep.
		return byPool, nil
	}
	judged = make(map[string]struct{}, len(names))
	for _, name := range names {
		st, ok := cs.nodes[name]
		if ok && (st.Maintenance || st.Planned) {
			continue
		}
		judged[name] = struct{}{}
		if ok && !st.Excluded {
			byPool[st.Pool]++
		}
	}
	return byPool, judged
}

// names returns the nodes for which keep is true.
func (cs *census) names(keep func(NodeStatus) bool) []string {
	var out []string
	for name, st := range cs.nodes {
		if keep(st) {
			out = append(out, name)
		}
	}
	return out
}

// inZones returns the nodes of the given zones, or every node when there
// are none.
func (cs *census) inZones(zones []ZoneID) []string {
	return cs.names(func(st NodeStatus) bool { return len(zones) == 0 || slices.Contains(zones, zoneOf(st)) })
}

// inPools returns the nodes of the given pools.
func (cs *census) inPools(pools []string) []string {
	return cs.names(func(st NodeStatus) bool { return slices.Contains(pools, st.Pool) })
}

// ZoneStates counts the nodes into the zones of their pools, as the guard
// does, and derives each zone's state under its pool's threshold: the
// zones as a new leader would find them. Zones with no counted node are
// left out.
func ZoneStates(nodes []NodeStatus, threshold func(pool string) float64) map[ZoneID]ZoneSnapshot {
	cs := newCensus()
	var c Change
	for _, st := range nodes {
		cs.count(st, 1, &c)
	}
	for _, id := range c.Zones {
		cs.restate(id, threshold(id.Pool))
	}
	return cs.snapshot()
}

// snapshot returns a copy of the zones with counted nodes.
func (cs *census) snapshot() map[ZoneID]ZoneSnapshot {
	out := make(map[ZoneID]ZoneSnapshot, len(cs.zones))
	for id, z := range cs.zones {
		out[id] = *z
	}
	return out
}
