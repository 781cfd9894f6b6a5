package disruption

import "time"

// minFrozenNodes is the fewest lost nodes that can start a freeze: one or two
// silent nodes in a tiny cluster are node failures, not a partition.
const minFrozenNodes = 3

// Freeze detects a partition: when, within one window (a grace period), at
// least Threshold of all nodes lose their heartbeats, the fault is more
// likely the control plane's or the network's than the nodes'. While frozen,
// nothing destructive happens. The freeze ends once the share of silent
// nodes has stayed below Threshold for Cooldown.
type Freeze struct {
	Threshold float64
	Window    time.Duration
	Cooldown  time.Duration

	frozen     bool
	since      time.Time
	clearSince time.Time
}

// Frozen reports whether destructive work is frozen, and since when.
func (f *Freeze) Frozen() (bool, time.Time) { return f.frozen, f.since }

// Update re-evaluates the freeze. total is the number of nodes, silentSince
// holds, for each node without heartbeats, when its grace ran out, and
// fading is the number of nodes, silent or not yet, without a heartbeat for
// half a grace period: nodes that lose their heartbeats together expire one
// by one as the controller observes them, and counting the fading ones lets
// the freeze start before the first of them is tainted. It reports whether
// the freeze started or ended.
func (f *Freeze) Update(total int, silentSince map[string]time.Time, fading int, now time.Time) (changed bool) {
	if f.Threshold <= 0 || total == 0 {
		return f.end()
	}
	if !f.frozen {
		recent := 0
		for _, at := range silentSince {
			if now.Sub(at) <= f.Window {
				recent++
			}
		}
		if f.over(max(recent, fading), total) {
			f.frozen, f.since, f.clearSince = true, now, time.Time{}
			return true
		}
		return false
	}
	if f.over(max(len(silentSince), fading), total) {
		f.clearSince = time.Time{}
		return false
	}
	if f.clearSince.IsZero() {
		f.clearSince = now
	}
	if now.Sub(f.clearSince) >= f.Cooldown {
		return f.end()
	}
	return false
}

// over reports whether n lost nodes of total are enough for a freeze.
func (f *Freeze) over(n, total int) bool {
	return n >= minFrozenNodes && float64(n)/float64(total) >= f.Threshold
}

func (f *Freeze) end() bool {
	if !f.frozen {
		return false
	}
	f.frozen, f.since, f.clearSince = false, time.Time{}, time.Time{}
	return true
}
