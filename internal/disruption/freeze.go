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
// holds, for each node without heartbeats, when its grace ran out. It
// reports whether the freeze started or ended.
func (f *Freeze) Update(total int, silentSince map[string]time.Time, now time.Time) (changed bool) {
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
		if recent >= minFrozenNodes && float64(recent)/float64(total) >= f.Threshold {
			f.frozen, f.since, f.clearSince = true, now, time.Time{}
			return true
		}
		return false
	}
	silent := len(silentSince)
	if silent >= minFrozenNodes && float64(silent)/float64(total) >= f.Threshold {
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

// ClearsAt returns when a freeze whose cause has gone will end, or the zero
// time when it is not ending.
func (f *Freeze) ClearsAt() time.Time {
	if !f.frozen || f.clearSince.IsZero() {
		return time.Time{}
	}
	return f.clearSince.Add(f.Cooldown)
}

func (f *Freeze) end() bool {
	if !f.frozen {
		return false
	}
	f.frozen, f.since, f.clearSince = false, time.Time{}, time.Time{}
	return true
}
