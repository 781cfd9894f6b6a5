package disruption

import (
	"maps"
	"time"
)

// Silent reports whether the guard knows the node as one without heartbeats.
func (g *Guard) Silent(name string) bool {
	return g.cluster.isSilent(name)
}

// LostCount returns how many nodes the freeze counts as without heartbeats
// at now (those that went silent within its window, or the fading ones
// when there are more of them), and how many nodes it judges: all but
// those in maintenance.
func (g *Guard) LostCount(now time.Time) (lost, total int) {
	return g.cluster.lost(now), g.census.judged()
}

// Nodes returns the names of the nodes in the given zones, or of every node
// when zones is empty.
func (g *Guard) Nodes(zones ...ZoneID) []string {
	return g.census.inZones(zones)
}

// PoolNodes returns the names of the nodes of the given pools.
func (g *Guard) PoolNodes(pools ...string) []string {
	return g.census.inPools(pools)
}

// Snapshot is a copy of the guard's state at one moment, for metrics and
// status: reading it takes no lock, and changing it changes nothing.
type Snapshot struct {
	// Zones holds the zones with counted nodes.
	Zones map[ZoneID]ZoneSnapshot
	// Held says why each pool that holds as a whole does so.
	Held map[string]string
	// Nodes is how many nodes the guard knows, excluded ones included.
	Nodes int
	// Halted is true while every zone is fully disrupted.
	Halted bool
	// Frozen is true during a partition freeze, which began at
	// FrozenSince.
	Frozen      bool
	FrozenSince time.Time
	// Deciding is true during the wait after Seed.
	Deciding bool
}

// Snapshot returns the guard's state at one moment, its parts agreeing.
func (g *Guard) Snapshot() Snapshot {
	frozen, since := g.cluster.freeze.Frozen()
	return Snapshot{
		Zones:       g.census.snapshot(),
		Held:        maps.Clone(g.pools.held),
		Nodes:       g.census.size(),
		Halted:      g.cluster.halted,
		Frozen:      frozen,
		FrozenSince: since,
		Deciding:    g.cluster.deciding,
	}
}
