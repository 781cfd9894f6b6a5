package disruption

import "k8s.io/apimachinery/pkg/util/intstr"

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

// poolHold returns why a pool with the given settings, counts and fading
// nodes holds NoExecute taints and evictions back as a whole, or "": its
// policy is not in force, it is paused, or its breaker tripped: more of its
// nodes not ready, or fading, than MaxUnhealthy allows.
func poolHold(p Pool, c Counts, fading int) string {
	if p.Invalid {
		return HeldInvalid
	}
	if p.Paused {
		return HeldPaused
	}
	if p.MaxUnhealthy == nil {
		return ""
	}
	// Nodes that went quiet together count before they are marked, so
	// that the first of them to expire is not tainted alone.
	unhealthy := max(c.NotReady, fading)
	// A share rounds up: a pool of two nodes at 25% may lose one, not
	// none, or a small pool's single failure would be held for ever. Only
	// an explicit 0 or 0% holds the first failure.
	limit, err := intstr.GetScaledValueFromIntOrPercent(p.MaxUnhealthy, c.Size(), true)
	if err != nil || unhealthy > limit {
		return HeldBreaker
	}
	return ""
}

// pools holds the settings of each pool and the holds they put on their
// nodes. It remembers each hold so that a change can say which pools'
// holds started or ended.
type pools struct {
	// defaults are the settings of the nodes no pool claims, and of a
	// pool whose settings were dropped.
	defaults Pool
	settings map[string]Pool
	// held says why each pool that holds does so.
	held map[string]string
	// fading counts the fading nodes of each pool.
	fading map[string]int
}

// newPools returns no pool settings beside the defaults cfg gives.
func newPools(cfg Config) pools {
	return pools{
		defaults: Pool{Rates: cfg.Rates, UnhealthyZoneThreshold: cfg.UnhealthyZoneThreshold},
		settings: make(map[string]Pool),
		held:     make(map[string]string),
		fading:   make(map[string]int),
	}
}

// get returns the settings of the named pool.
func (p *pools) get(name string) Pool {
	if s, ok := p.settings[name]; ok {
		return s
	}
	return p.defaults
}

// set sets the settings of a pool, or with nil drops them.
func (p *pools) set(name string, s *Pool) {
	if s == nil {
		delete(p.settings, name)
	} else {
		p.settings[name] = *s
	}
}

// setFading replaces the counts of fading nodes, by pool.
func (p *pools) setFading(byPool map[string]int) { p.fading = byPool }

// update brings a pool's remembered hold up to date, and reports whether it
// started, ended or changed reason. counts adds up the pool's zones; it is
// called only for a pool with a breaker, the one hold that needs the counts
// and the fading nodes, so that a heartbeat need not add them up.
func (p *pools) update(name string, counts func() Counts) bool {
	s := p.get(name)
	var c Counts
	var fading int
	if s.MaxUnhealthy != nil {
		c, fading = counts(), p.fading[name]
	}
	why := poolHold(s, c, fading)
	if why == p.held[name] {
		return false
	}
	if why == "" {
		delete(p.held, name)
	} else {
		p.held[name] = why
	}
	return true
}

// nodeHold returns why a node's pool, or its zone in a pool that halts
// fully disrupted zones, holds NoExecute taints and evictions back, or "".
func (p *pools) nodeHold(st NodeStatus, zone ZoneState) string {
	if why := p.held[st.Pool]; why != "" {
		return why
	}
	if zone == ZoneFullDisruption && p.get(st.Pool).HaltFullZones {
		return HeldFullZone
	}
	return ""
}

// names adds to out every pool with settings or a hold.
func (p *pools) names(out map[string]struct{}) {
	for name := range p.settings {
		out[name] = struct{}{}
	}
	for name := range p.held {
		out[name] = struct{}{}
	}
}
