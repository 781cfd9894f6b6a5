package disruption

import (
	"slices"
	"sync"
	"time"
)

// Config holds the guard's thresholds and rates.
type Config struct {
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
	Zone     string
	Excluded bool
	// Ready is true when the node's Ready condition is True.
	Ready bool
	// SilentSince is when the node's grace period ran out without a
	// heartbeat; zero while it heartbeats.
	SilentSince time.Time
}

// Change says what an update changed beyond the node itself.
type Change struct {
	// Zones lists the zones whose counts changed.
	Zones []string
	// StateChanged lists the zones whose state changed.
	StateChanged []string
	// Halt is true when every zone has just become fully disrupted, or has
	// just stopped being so; Halted says which.
	Halt, Halted bool
	// Freeze is true when a partition freeze has just started or ended;
	// Frozen says which.
	Freeze, Frozen bool
}

// Empty reports whether nothing beyond the node changed.
func (c Change) Empty() bool {
	return len(c.Zones) == 0 && len(c.StateChanged) == 0 && !c.Halt && !c.Freeze
}

type zone struct {
	counts  Counts
	state   ZoneState
	bucket  *Bucket
	waiting []string
}

// Guard is the cluster-wide disruption state: zone counts and states, the
// per-zone NoExecute tainting queues, the all-zones halt and the partition
// freeze. It is safe for concurrent use.
type Guard struct {
	mu     sync.Mutex
	cfg    Config
	nodes  map[string]NodeStatus
	zones  map[string]*zone
	silent map[string]time.Time
	fading int
	freeze Freeze
	halted bool
}

// NewGuard returns a guard with no nodes.
func NewGuard(cfg Config) *Guard {
	return &Guard{
		cfg:    cfg,
		nodes:  make(map[string]NodeStatus),
		zones:  make(map[string]*zone),
		silent: make(map[string]time.Time),
		freeze: Freeze{Threshold: cfg.FreezeThreshold, Window: cfg.FreezeWindow, Cooldown: cfg.FreezeCooldown},
	}
}

// Update records a node's status.
func (g *Guard) Update(name string, st NodeStatus, now time.Time) Change {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, known := g.nodes[name]
	if known && old == st {
		return Change{}
	}
	var c Change
	g.nodes[name] = st
	if known {
		g.uncount(name, old, &c)
	}
	g.count(st, &c)
	if st.SilentSince.IsZero() {
		delete(g.silent, name)
	} else {
		g.silent[name] = st.SilentSince
	}
	g.settle(now, &c)
	return c
}

// Remove forgets a deleted node.
func (g *Guard) Remove(name string, now time.Time) Change {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, known := g.nodes[name]
	if !known {
		return Change{}
	}
	var c Change
	delete(g.nodes, name)
	delete(g.silent, name)
	g.uncount(name, old, &c)
	g.settle(now, &c)
	return c
}

// Tick re-evaluates what changes with time alone: the freeze's window and
// cooldown, and fading, the number of nodes without a heartbeat for half a
// grace period.
func (g *Guard) Tick(fading int, now time.Time) Change {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fading = fading
	var c Change
	g.settle(now, &c)
	return c
}

func (g *Guard) count(st NodeStatus, c *Change) {
	if st.Excluded {
		return
	}
	z := g.zones[st.Zone]
	if z == nil {
		z = &zone{}
		g.zones[st.Zone] = z
	}
	if st.Ready {
		z.counts.Ready++
	} else {
		z.counts.NotReady++
	}
	c.Zones = appendOnce(c.Zones, st.Zone)
}

func (g *Guard) uncount(name string, st NodeStatus, c *Change) {
	z := g.zones[st.Zone]
	if z == nil {
		return
	}
	z.waiting = slices.DeleteFunc(z.waiting, func(n string) bool { return n == name })
	if st.Excluded {
		return
	}
	if st.Ready {
		z.counts.Ready--
	} else {
		z.counts.NotReady--
	}
	c.Zones = appendOnce(c.Zones, st.Zone)
}

// settle recomputes zone states, the halt and the freeze after a change.
func (g *Guard) settle(now time.Time, c *Change) {
	for _, key := range c.Zones {
		z := g.zones[key]
		s := ZoneStateOf(z.counts, g.cfg.UnhealthyZoneThreshold)
		if s != z.state {
			z.state = s
			c.StateChanged = append(c.StateChanged, key)
		}
		if z.counts.Size() == 0 && len(z.waiting) == 0 {
			delete(g.zones, key)
			continue
		}
		rate := ZoneRate(s, z.counts.Size(), g.cfg.Rates)
		switch {
		case z.bucket == nil:
			z.bucket = NewBucket(rate, now)
		case z.bucket.Rate() != rate:
			z.bucket.SetRate(rate, now)
		}
	}
	if halted := g.allFull(); halted != g.halted {
		g.halted = halted
		c.Halt, c.Halted = true, halted
	}
	if g.freeze.Update(len(g.nodes), g.silent, g.fading, now) {
		frozen, _ := g.freeze.Frozen()
		c.Freeze, c.Frozen = true, frozen
	}
}

// allFull reports whether every zone with counted nodes is fully disrupted.
func (g *Guard) allFull() bool {
	seen := false
	for _, z := range g.zones {
		if z.counts.Size() == 0 {
			continue
		}
		seen = true
		if z.state != ZoneFullDisruption {
			return false
		}
	}
	return seen
}

// Why a NoExecute taint is held back.
const (
	HeldHalted = "every zone is fully disrupted"
	HeldFrozen = "partition freeze"
	HeldRate   = "zone rate limit"
)

// TakeTaint asks whether the node may be tainted NoExecute now. Nodes wait in
// their zone's queue in the order they first asked; the head takes a token
// from the zone's bucket. When the answer is no, wait says when to ask again,
// or is negative when only a change of state can help.
func (g *Guard) TakeTaint(name string, now time.Time) (ok bool, wait time.Duration, why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if frozen, _ := g.freeze.Frozen(); frozen {
		return false, -1, HeldFrozen
	}
	if g.halted {
		return false, -1, HeldHalted
	}
	st := g.nodes[name]
	z := g.zones[st.Zone]
	if z == nil {
		z = &zone{bucket: NewBucket(g.cfg.Normal, now)}
		g.zones[st.Zone] = z
	}
	pos := slices.Index(z.waiting, name)
	if pos < 0 {
		z.waiting = append(z.waiting, name)
		pos = len(z.waiting) - 1
	}
	if pos == 0 {
		if ok, wait := z.bucket.Take(now); ok {
			z.waiting = z.waiting[1:]
			return true, 0, ""
		} else if wait < 0 {
			return false, wait, HeldRate
		}
	}
	return false, z.bucket.Wait(float64(pos+1), now), HeldRate
}

// CancelTaint takes a node out of its zone's queue: it no longer needs the
// taint.
func (g *Guard) CancelTaint(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if z := g.zones[g.nodes[name].Zone]; z != nil {
		z.waiting = slices.DeleteFunc(z.waiting, func(n string) bool { return n == name })
	}
}

// Halted reports whether every zone is fully disrupted.
func (g *Guard) Halted() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.halted
}

// Frozen reports whether a partition freeze holds.
func (g *Guard) Frozen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	frozen, _ := g.freeze.Frozen()
	return frozen
}

// DestructiveAllowed reports whether evictions may proceed, and if not, why.
func (g *Guard) DestructiveAllowed() (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if frozen, _ := g.freeze.Frozen(); frozen {
		return false, HeldFrozen
	}
	if g.halted {
		return false, HeldHalted
	}
	return true, ""
}

// Silent reports whether the guard knows the node as one without heartbeats.
func (g *Guard) Silent(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.silent[name]
	return ok
}

// LostCount returns how many nodes the freeze counts as without heartbeats
// (those past their grace period, or the fading ones when there are more of
// them), and how many nodes there are.
func (g *Guard) LostCount() (lost, total int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return max(len(g.silent), g.fading), len(g.nodes)
}

// ZoneSnapshot is a zone's counts and state.
type ZoneSnapshot struct {
	Counts
	State ZoneState
}

// Zone returns a zone's counts and state.
func (g *Guard) Zone(key string) ZoneSnapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	z := g.zones[key]
	if z == nil {
		return ZoneSnapshot{}
	}
	return ZoneSnapshot{Counts: z.counts, State: z.state}
}

// Nodes returns the names of the nodes in the given zones, or of every node
// when zones is empty.
func (g *Guard) Nodes(zones ...string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for name, st := range g.nodes {
		if len(zones) == 0 || slices.Contains(zones, st.Zone) {
			out = append(out, name)
		}
	}
	return out
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
