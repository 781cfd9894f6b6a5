package disruption

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
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

// Pool holds the disruption settings of a pool of nodes. Zones are counted
// within a pool: a zone's state and rate come from its pool's nodes only.
type Pool struct {
	Rates
	// UnhealthyZoneThreshold is the not-ready share at which a zone of the
	// pool is partially disrupted.
	UnhealthyZoneThreshold float64
	// HaltFullZones holds NoExecute taints and evictions back in a zone of
	// the pool with no ready node, instead of tainting at the normal rate.
	HaltFullZones bool
	// MaxUnhealthy, when set, is how many of the pool's nodes (a number or
	// a percentage) may be not ready; while more are, the pool's nodes get
	// no NoExecute taint and their pods are not evicted.
	MaxUnhealthy *intstr.IntOrString
	// Paused holds NoExecute taints and evictions back in the whole pool.
	Paused bool
	// Invalid holds them back too: the pool's policy is not in force, and
	// a policy edited into something wrong must not release what it held.
	Invalid bool
}

// ZoneID names a zone of a pool.
type ZoneID struct {
	// Pool is the pool's name, "" for the nodes no pool claims.
	Pool string
	// Zone is the zone's key, as ZoneKey returns it.
	Zone string
}

// NodeStatus is what the guard needs to know of a node.
type NodeStatus struct {
	// Pool is the node's pool, "" for none.
	Pool     string
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
	// Decided is true when the guard, seeded at start, has just learnt
	// enough of every node to decide on a partition freeze, and lets
	// destructive work begin.
	Decided bool
}

// Empty reports whether nothing beyond the node changed.
func (c Change) Empty() bool {
	return len(c.Zones) == 0 && len(c.StateChanged) == 0 && len(c.Held) == 0 && !c.Halt && !c.Freeze && !c.Decided
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
	pools  map[string]Pool
	held   map[string]string // pool -> why it holds, for the pools that do
	nodes  map[string]NodeStatus
	zones  map[ZoneID]*zone
	silent map[string]time.Time
	fading int
	// fadingByPool counts the fading nodes of each pool.
	fadingByPool map[string]int
	freeze       Freeze
	halted       bool
	seeded       bool
	// deciding holds destructive work back from Seed until every node is
	// known to live or to be going quiet, or until decideBy.
	deciding bool
	decideBy time.Time
}

// NewGuard returns a guard with no nodes.
func NewGuard(cfg Config) *Guard {
	return &Guard{
		cfg:          cfg,
		pools:        make(map[string]Pool),
		held:         make(map[string]string),
		nodes:        make(map[string]NodeStatus),
		zones:        make(map[ZoneID]*zone),
		silent:       make(map[string]time.Time),
		fadingByPool: make(map[string]int),
		freeze:       Freeze{Threshold: cfg.FreezeThreshold, Window: cfg.FreezeWindow, Cooldown: cfg.FreezeCooldown},
	}
}

// Update records a node's status.
func (g *Guard) Update(name string, st NodeStatus, now time.Time) Change {
	g.mu.Lock()
	defer g.mu.Unlock()
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
// cluster shows (the nodes already marked, and when). Destructive work then
// waits until Tick finds every node decided, or one freeze window has
// passed: a new leader must not taint or evict the nodes the old one marked
// before it knows whether the others are silent too.
func (g *Guard) Seed(nodes map[string]NodeStatus, now time.Time) Change {
	g.mu.Lock()
	defer g.mu.Unlock()
	var c Change
	for name, st := range nodes {
		g.record(name, st, &c)
	}
	g.seeded = true
	g.deciding, g.decideBy = true, now.Add(g.cfg.FreezeWindow)
	if !g.freeze.frozen && g.freeze.Rebuild(len(g.nodes), g.silent, now) {
		c.Freeze, c.Frozen = true, true
	}
	g.settle(now, &c)
	return c
}

// Seeded reports whether Seed has run.
func (g *Guard) Seeded() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seeded
}

// record counts a node's new status and reports whether it changed.
func (g *Guard) record(name string, st NodeStatus, c *Change) bool {
	old, known := g.nodes[name]
	if known && old == st {
		return false
	}
	g.nodes[name] = st
	if known {
		g.uncount(name, old, zoneOf(old) != zoneOf(st), c)
	}
	g.count(st, c)
	if st.SilentSince.IsZero() {
		delete(g.silent, name)
	} else {
		g.silent[name] = st.SilentSince
	}
	return true
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
	g.uncount(name, old, true, &c)
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
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fading = len(fading)
	clear(g.fadingByPool)
	for _, name := range fading {
		if st, ok := g.nodes[name]; ok && !st.Excluded {
			g.fadingByPool[st.Pool]++
		}
	}
	var c Change
	g.settle(now, &c)
	if g.deciding && (decided >= len(g.nodes) || !now.Before(g.decideBy)) {
		g.deciding, c.Decided = false, true
	}
	for pool := range g.poolNames() {
		g.updateHold(pool, &c)
	}
	return c
}

// poolNames returns every pool with settings, nodes or a hold.
func (g *Guard) poolNames() map[string]struct{} {
	out := map[string]struct{}{"": {}}
	for name := range g.pools {
		out[name] = struct{}{}
	}
	for id := range g.zones {
		out[id.Pool] = struct{}{}
	}
	for name := range g.held {
		out[name] = struct{}{}
	}
	return out
}

// SetPool sets the settings of a named pool, or with nil drops them: its
// nodes then follow the guard's Config until they are updated into another
// pool.
func (g *Guard) SetPool(name string, p *Pool, now time.Time) Change {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p == nil {
		delete(g.pools, name)
	} else {
		g.pools[name] = *p
	}
	var c Change
	for id := range g.zones {
		if id.Pool == name {
			c.Zones = appendOnce(c.Zones, id)
		}
	}
	g.settle(now, &c)
	g.updateHold(name, &c)
	return c
}

// updateHold brings the pool's remembered hold up to date, noting in c when
// it starts, ends or changes reason.
func (g *Guard) updateHold(pool string, c *Change) {
	why := g.poolHold(pool)
	if why == g.held[pool] {
		return
	}
	if why == "" {
		delete(g.held, pool)
	} else {
		g.held[pool] = why
	}
	c.Held = appendOnce(c.Held, pool)
}

// pool returns the settings of the named pool.
func (g *Guard) pool(name string) Pool {
	if p, ok := g.pools[name]; ok {
		return p
	}
	return Pool{Rates: g.cfg.Rates, UnhealthyZoneThreshold: g.cfg.UnhealthyZoneThreshold}
}

func zoneOf(st NodeStatus) ZoneID { return ZoneID{Pool: st.Pool, Zone: st.Zone} }

func (g *Guard) count(st NodeStatus, c *Change) {
	if st.Excluded {
		return
	}
	id := zoneOf(st)
	z := g.zones[id]
	if z == nil {
		z = &zone{}
		g.zones[id] = z
	}
	if st.Ready {
		z.counts.Ready++
	} else {
		z.counts.NotReady++
	}
	c.Zones = appendOnce(c.Zones, id)
}

// uncount takes a node out of its zone's counts and, when it leaves the zone,
// out of the zone's tainting queue: a node that stays keeps its place, or a
// change of its status (its grace period running out under a new leader)
// would send it to the back, behind nodes that asked later.
func (g *Guard) uncount(name string, st NodeStatus, leaving bool, c *Change) {
	id := zoneOf(st)
	z := g.zones[id]
	if z == nil {
		return
	}
	if leaving {
		z.waiting = slices.DeleteFunc(z.waiting, func(n string) bool { return n == name })
	}
	if st.Excluded {
		return
	}
	if st.Ready {
		z.counts.Ready--
	} else {
		z.counts.NotReady--
	}
	c.Zones = appendOnce(c.Zones, id)
}

// settle recomputes zone states, the halt and the freeze after a change.
func (g *Guard) settle(now time.Time, c *Change) {
	for _, key := range c.Zones {
		z := g.zones[key]
		if z == nil {
			continue
		}
		pool := g.pool(key.Pool)
		s := ZoneStateOf(z.counts, pool.UnhealthyZoneThreshold)
		if s != z.state {
			z.state = s
			c.StateChanged = append(c.StateChanged, key)
		}
		if z.counts.Size() == 0 && len(z.waiting) == 0 {
			delete(g.zones, key)
			continue
		}
		rate := ZoneRate(s, z.counts.Size(), pool.Rates)
		switch {
		case z.bucket == nil:
			z.bucket = NewBucket(rate, now)
		case z.bucket.Rate() != rate:
			z.bucket.SetRate(rate, now)
		}
	}
	for _, key := range c.Zones {
		g.updateHold(key.Pool, c)
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
)

// poolHold returns why the pool as a whole holds NoExecute taints and
// evictions back, or "": paused, or its breaker tripped: more of its nodes
// not ready, or fading, than MaxUnhealthy allows.
func (g *Guard) poolHold(name string) string {
	p := g.pool(name)
	if p.Invalid {
		return HeldInvalid
	}
	if p.Paused {
		return HeldPaused
	}
	if p.MaxUnhealthy == nil {
		return ""
	}
	var c Counts
	for id, z := range g.zones {
		if id.Pool == name {
			c.Ready += z.counts.Ready
			c.NotReady += z.counts.NotReady
		}
	}
	// Nodes that went quiet together count before they are marked, so
	// that the first of them to expire is not tainted alone.
	unhealthy := max(c.NotReady, g.fadingByPool[name])
	limit, err := intstr.GetScaledValueFromIntOrPercent(p.MaxUnhealthy, c.Size(), false)
	if err != nil || unhealthy > limit {
		return HeldBreaker
	}
	return ""
}

// nodeHold returns why the node's pool or zone holds NoExecute taints and
// evictions back, or "".
func (g *Guard) nodeHold(st NodeStatus) string {
	if why := g.held[st.Pool]; why != "" {
		return why
	}
	if z := g.zones[zoneOf(st)]; z != nil && z.state == ZoneFullDisruption && g.pool(st.Pool).HaltFullZones {
		return HeldFullZone
	}
	return ""
}

// TakeTaint asks whether the node may be tainted NoExecute now. Nodes wait in
// their zone's queue in the order they first asked; the head takes a token
// from the zone's bucket. When the answer is no, wait says when to ask again,
// or is negative when only a change of state can help.
func (g *Guard) TakeTaint(name string, now time.Time) (ok bool, wait time.Duration, why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if why := g.hold(name); why != "" {
		return false, -1, why
	}
	if g.deciding {
		return false, -1, HeldDeciding
	}
	st := g.nodes[name]
	id := zoneOf(st)
	z := g.zones[id]
	if z == nil {
		z = &zone{bucket: NewBucket(g.pool(st.Pool).Normal, now)}
		g.zones[id] = z
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

// ReturnTaint gives back the token TakeTaint gave a node whose taint could
// not be written: a node whose writes keep failing (a webhook denying them)
// must not spend its zone's rate, one token at each of its retries, while
// the zone's other nodes wait. The node joins the back of the queue when it
// asks again. It returns the nodes waiting in the zone, which should ask
// again now: they were told to wait for a turn the node no longer takes.
func (g *Guard) ReturnTaint(name string) (waiting []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	z := g.zones[zoneOf(g.nodes[name])]
	if z == nil {
		return nil
	}
	z.bucket.Refund()
	return slices.Clone(z.waiting)
}

// CancelTaint takes a node out of its zone's queue: it no longer needs the
// taint.
func (g *Guard) CancelTaint(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if z := g.zones[zoneOf(g.nodes[name])]; z != nil {
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

// DestructiveAllowed reports whether evictions may proceed anywhere, and if
// not, why.
func (g *Guard) DestructiveAllowed() (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.destructiveAllowed()
}

func (g *Guard) destructiveAllowed() (bool, string) {
	if frozen, _ := g.freeze.Frozen(); frozen {
		return false, HeldFrozen
	}
	if g.halted {
		return false, HeldHalted
	}
	return true, ""
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
// kube-controller-manager marks them.
func (g *Guard) PodMarkingAllowedFor(name string) (bool, string) {
	return g.allowedFor(name, false)
}

func (g *Guard) allowedFor(name string, haltHolds bool) (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	why := g.hold(name)
	if why == HeldHalted && !haltHolds {
		why = g.nodeHold(g.nodes[name])
	}
	if why == "" && g.deciding {
		why = HeldDeciding
	}
	return why == "", why
}

// Hold returns why the named node is held, or "": a partition freeze,
// every zone down, or its pool's or zone's hold. A held node carries none
// of the controller's NoExecute taints; when the hold lifts it is tainted
// again at its zone's rate, and its pods' countdowns start from then. The
// wait after start is not a hold: it takes no taint off.
func (g *Guard) Hold(name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.hold(name)
}

func (g *Guard) hold(name string) string {
	if ok, why := g.destructiveAllowed(); !ok {
		return why
	}
	return g.nodeHold(g.nodes[name])
}

// PoolHold reports why the named pool holds NoExecute taints and evictions
// back as a whole (paused, or its breaker tripped), or "".
func (g *Guard) PoolHold(name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held[name]
}

// Silent reports whether the guard knows the node as one without heartbeats.
func (g *Guard) Silent(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.silent[name]
	return ok
}

// LostCount returns how many nodes the freeze counts as without heartbeats
// at now (those that went silent within its window, or the fading ones
// when there are more of them), and how many nodes there are.
func (g *Guard) LostCount(now time.Time) (lost, total int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.freeze.Counted(g.silent, g.fading, now), len(g.nodes)
}

// ZoneSnapshot is a zone's counts and state.
type ZoneSnapshot struct {
	Counts
	State ZoneState
}

// Zone returns a zone's counts and state.
func (g *Guard) Zone(key ZoneID) ZoneSnapshot {
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
func (g *Guard) Nodes(zones ...ZoneID) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for name, st := range g.nodes {
		if len(zones) == 0 || slices.Contains(zones, zoneOf(st)) {
			out = append(out, name)
		}
	}
	return out
}

// PoolNodes returns the names of the nodes of the given pools.
func (g *Guard) PoolNodes(pools ...string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for name, st := range g.nodes {
		if slices.Contains(pools, st.Pool) {
			out = append(out, name)
		}
	}
	return out
}

// PoolZones returns the zones of a pool with their counts and states.
func (g *Guard) PoolZones(pool string) map[string]ZoneSnapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]ZoneSnapshot{}
	for id, z := range g.zones {
		if id.Pool == pool && z.counts.Size() > 0 {
			out[id.Zone] = ZoneSnapshot{Counts: z.counts, State: z.state}
		}
	}
	return out
}

func appendOnce[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
