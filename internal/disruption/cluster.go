package disruption

import "time"

// clusterHold holds what stops destructive work across the whole cluster:
// the partition freeze with the silences and fading nodes it counts, the
// halt while every zone is fully disrupted, and the wait after Seed.
type clusterHold struct {
	freeze Freeze
	// silent holds, for each node without heartbeats, when its grace ran
	// out.
	silent map[string]time.Time
	// fading names the nodes that went quiet within the freeze window.
	fading map[string]struct{}
	halted bool
	seeded bool
	// blind is true while the apiserver is out of the controller's reach:
	// nothing about the freeze is decided then, since no heartbeat can be
	// heard.
	blind bool
	// deciding holds destructive work back from Seed until every node is
	// known to live or to be going quiet, or until decideBy.
	deciding bool
	decideBy time.Time
}

// newClusterHold returns a hold that holds nothing, with the freeze cfg
// sets.
func newClusterHold(cfg Config) clusterHold {
	return clusterHold{
		freeze: Freeze{Threshold: cfg.FreezeThreshold, Window: cfg.FreezeWindow, Cooldown: cfg.FreezeCooldown},
		silent: make(map[string]time.Time),
	}
}

// silence records since when a node has been without heartbeats; the zero
// time records that it has them.
func (h *clusterHold) silence(name string, since time.Time) {
	if since.IsZero() {
		delete(h.silent, name)
	} else {
		h.silent[name] = since
	}
}

// seed starts the wait after Seed, until one freeze window from now, and
// takes up the freeze the cluster kept, if any, or else rebuilds it from the
// silences, each window judged against totalAt its start. It reports
// whether that started a freeze.
func (h *clusterHold) seed(totalAt func(time.Time) int, kept *Record, now time.Time) (froze bool) {
	h.seeded = true
	h.deciding, h.decideBy = true, now.Add(h.freeze.Window)
	h.freeze.started = now
	if frozen, _ := h.freeze.Frozen(); frozen {
		return false
	}
	if kept != nil {
		// Taken up however old: the record may lag the freeze it keeps (a
		// cooldown called off, but not written down before the leader
		// died), and a freeze that has ended ends again once every node is
		// decided.
		h.freeze.Restore(*kept, now)
		if frozen, _ := h.freeze.Frozen(); frozen {
			return true
		}
	}
	return h.freeze.Rebuild(totalAt, h.silent, now)
}

// setFading records the nodes that went quiet within the freeze window.
func (h *clusterHold) setFading(names map[string]struct{}) { h.fading = names }

// notFading takes a node out of those going quiet until the next tick.
func (h *clusterHold) notFading(name string) { delete(h.fading, name) }

// settle re-evaluates the halt, given whether every zone is fully
// disrupted, and the freeze over the total nodes, noting in c what started
// or ended.
func (h *clusterHold) settle(allFull bool, total int, now time.Time, c *Change) {
	if allFull != h.halted {
		h.halted = allFull
		c.Halt, c.Halted = true, allFull
	}
	if h.blind {
		return
	}
	cooling := h.freeze.clearSince
	if h.freeze.Update(total, h.silent, h.fading, h.deciding, now) {
		c.Freeze, c.Frozen = true, h.frozen()
	} else if !h.freeze.clearSince.Equal(cooling) {
		c.Cooldown = true
	}
}

// decide ends the wait after Seed once decided nodes of total are known to
// live or to be going quiet, or its time is up, and reports whether it has
// just ended.
func (h *clusterHold) decide(decided, total int, now time.Time) bool {
	if h.deciding && !h.blind && (decided >= total || !now.Before(h.decideBy)) {
		h.deciding = false
		return true
	}
	return false
}

// setBlind records whether the apiserver is out of reach, and reports
// whether the freeze's record changed. A cooldown under way starts again
// once it answers, and so does the wait after start: the time it could not
// be reached says nothing of the nodes, and the nodes it finds silent then
// may be the ones that kept the freeze.
func (h *clusterHold) setBlind(blind bool, now time.Time) (cooldownChanged bool) {
	if blind == h.blind {
		return false
	}
	h.blind = blind
	if blind {
		return false
	}
	if h.deciding {
		h.decideBy = now.Add(h.freeze.Window)
	}
	if !h.freeze.clearSince.IsZero() {
		h.freeze.clearSince = time.Time{}
		return true
	}
	return false
}

// hold returns why destructive work is held back everywhere: a partition
// freeze, or every zone fully disrupted; or "". The wait after Seed is not
// a hold.
func (h *clusterHold) hold() string {
	if h.frozen() {
		return HeldFrozen
	}
	if h.halted {
		return HeldHalted
	}
	return ""
}

// frozen reports whether a partition freeze holds.
func (h *clusterHold) frozen() bool {
	frozen, _ := h.freeze.Frozen()
	return frozen
}

// isSilent reports whether the node is known to be without heartbeats.
func (h *clusterHold) isSilent(name string) bool {
	_, ok := h.silent[name]
	return ok
}

// lost returns how many nodes the freeze counts as without heartbeats at
// now.
func (h *clusterHold) lost(now time.Time) int {
	return h.freeze.Counted(h.silent, h.fading, now)
}
