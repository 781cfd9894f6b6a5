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
}

// Merge returns c with what o changed added.
func (c Change) Merge(o Change) Change {
	return Change{Change: merge(c.Change, o.Change), Wake: appendNew(c.Wake, o.Wake...)}
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
	out := Change{Change: c}
	if c.Halt && !c.Halted {
		m.Tracker.RefreshAll(now)
	}
	switch {
	case c.Halt || c.Decided || c.Freeze:
		out.Wake = m.Guard.Nodes()
	default:
		if len(c.Held) > 0 {
			out.Wake = append(out.Wake, m.Guard.PoolNodes(c.Held...)...)
		}
		if len(c.StateChanged) > 0 {
			out.Wake = append(out.Wake, m.Guard.Nodes(c.StateChanged...)...)
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
