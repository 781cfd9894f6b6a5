package safety

import (
	"time"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
)

// Change is what a look, a tick, a policy or a node's removal changed
// beyond one node: the guard's change, for the caller to tell, and the nodes
// it calls for a look at.
type Change struct {
	disruption.Change
	// Wake are the nodes to look at again at once.
	Wake []string
	// State is the disruption state after the change, to publish: the
	// zones, the pools' holds, the halt and the freeze; Lost and Total,
	// when the freeze started or ended, how many nodes it counted silent
	// of how many.
	State       disruption.Snapshot
	Lost, Total int
	// Version orders the states: a later change's state has a higher
	// one, so that a publisher can tell an older state from a newer.
	Version uint64
}

// Merge returns c with what o changed added, o's state standing.
func (c Change) Merge(o Change) Change {
	if c.Empty() {
		return o
	}
	if o.Empty() {
		return c
	}
	o.Change, o.Wake = merge(c.Change, o.Change), appendNew(c.Wake, o.Wake...)
	return o
}

// Affected returns the nodes a change of the disruption state calls for a
// look at, their taints' place or pace having changed: those of the pools
// whose hold started or ended, those of the zones whose state changed, and
// every node when every zone has gone down or come back, when the guard
// has learnt enough to decide on a freeze, or when a freeze starts or ends.
// When a zone comes back after every zone was down, every node gets a fresh
// grace: nobody is judged on heartbeats lost while the whole cluster was
// dark.
func (m *Model) Affected(c disruption.Change, now time.Time) Change {
	m.turn.Lock()
	defer m.turn.Unlock()
	out := Change{Change: c}
	if c.Empty() {
		return out
	}
	m.version++
	out.Version, out.State = m.version, m.guard.Snapshot()
	if c.Freeze {
		out.Lost, out.Total = m.guard.LostCount(now)
	}
	if c.Halt && !c.Halted {
		m.tracker.RefreshAll(now)
	}
	switch {
	case c.Halt || c.Decided || c.Freeze:
		out.Wake = m.guard.Nodes()
	default:
		if len(c.Held) > 0 {
			out.Wake = append(out.Wake, m.guard.PoolNodes(c.Held...)...)
		}
		if len(c.StateChanged) > 0 {
			out.Wake = append(out.Wake, m.guard.Nodes(c.StateChanged...)...)
		}
	}
	return out
}

// merge returns a with what b changed added, b's word standing on the
// halt and the freeze.
func merge(a, b disruption.Change) disruption.Change {
	if a.Empty() {
		return b
	}
	if b.Empty() {
		return a
	}
	a.Zones = appendNew(a.Zones, b.Zones...)
	a.StateChanged = appendNew(a.StateChanged, b.StateChanged...)
	a.Held = appendNew(a.Held, b.Held...)
	if b.Halt {
		a.Halt, a.Halted = true, b.Halted
	}
	if b.Freeze {
		a.Freeze, a.Frozen = true, b.Frozen
	}
	a.Cooldown = a.Cooldown || b.Cooldown
	a.Decided = a.Decided || b.Decided
	return a
}

func appendNew[T comparable](s []T, vs ...T) []T {
	for _, v := range vs {
		found := false
		for _, x := range s {
			if x == v {
				found = true
				break
			}
		}
		if !found {
			s = append(s, v)
		}
	}
	return s
}
