package disruption

import (
	"slices"
	"time"
)

// minFrozenNodes is the fewest lost nodes that can start a freeze: one or two
// silent nodes in a tiny cluster are node failures, not a partition.
const minFrozenNodes = 3

// Freeze detects a partition: when, within one window (a grace period), at
// least Threshold of all nodes lose their heartbeats, the fault is more
// likely the control plane's or the network's than the nodes'. While frozen,
// nothing destructive happens.
//
// Only silences that began together count. Nodes that went silent before the
// window, minutes or days ago, are node failures already dealt with: they
// neither start a freeze nor keep one going. A freeze holds while the nodes
// that went silent from its window on stay at least Threshold of all nodes,
// and ends once they have stayed below it for Cooldown.
type Freeze struct {
	Threshold float64
	Window    time.Duration
	Cooldown  time.Duration

	frozen bool
	since  time.Time
	// from is the start of the window that set the freeze off: nodes
	// silent since then belong to it.
	from       time.Time
	clearSince time.Time
}

// Frozen reports whether destructive work is frozen, and since when.
func (f *Freeze) Frozen() (bool, time.Time) { return f.frozen, f.since }

// Update re-evaluates the freeze. total is the number of nodes, silentSince
// holds, for each node without heartbeats, when its grace ran out, and
// fading is the number of nodes that went quiet within the window, silent
// or not yet: nodes that lose their heartbeats together expire one by one as
// the controller observes them, and counting the fading ones lets the
// freeze start before the first of them is tainted. It reports whether the
// freeze started or ended.
func (f *Freeze) Update(total int, silentSince map[string]time.Time, fading int, now time.Time) (changed bool) {
	if f.Threshold <= 0 || total == 0 {
		return f.end()
	}
	if !f.frozen {
		if f.over(f.Counted(silentSince, fading, now), total) {
			f.frozen, f.since, f.from, f.clearSince = true, now, now.Add(-f.Window), time.Time{}
			return true
		}
		return false
	}
	if f.over(f.Counted(silentSince, fading, now), total) {
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

// Counted returns how many lost nodes the freeze counts at now: those that
// went silent since its window began (the last window while it is off),
// or the fading ones when there are more of them.
func (f *Freeze) Counted(silentSince map[string]time.Time, fading int, now time.Time) int {
	from := now.Add(-f.Window)
	if f.frozen {
		from = f.from
	}
	return max(silentFrom(silentSince, from), fading)
}

// Rebuild decides the freeze from the silences alone, as a controller that
// has just started finds them in the cluster: if, at any time, enough of the
// nodes still silent went silent within one window, the freeze that window
// set off still holds, since none of them has come back. It reports whether
// the freeze is on.
func (f *Freeze) Rebuild(total int, silentSince map[string]time.Time, now time.Time) bool {
	if f.Threshold <= 0 || total == 0 {
		f.end()
		return false
	}
	times := make([]time.Time, 0, len(silentSince))
	for _, at := range silentSince {
		times = append(times, at)
	}
	slices.SortFunc(times, time.Time.Compare)
	// For each silence, count those within one window after it.
	end := 0
	for start := range times {
		for end < len(times) && !times[end].After(times[start].Add(f.Window)) {
			end++
		}
		if f.over(end-start, total) {
			f.frozen, f.since, f.from, f.clearSince = true, now, times[start], time.Time{}
			return true
		}
	}
	return f.frozen
}

// silentFrom counts the silences that began at or after from.
func silentFrom(silentSince map[string]time.Time, from time.Time) int {
	n := 0
	for _, at := range silentSince {
		if !at.Before(from) {
			n++
		}
	}
	return n
}

// over reports whether n lost nodes of total are enough for a freeze.
func (f *Freeze) over(n, total int) bool {
	return n >= minFrozenNodes && float64(n)/float64(total) >= f.Threshold
}

func (f *Freeze) end() bool {
	if !f.frozen {
		return false
	}
	f.frozen, f.since, f.from, f.clearSince = false, time.Time{}, time.Time{}, time.Time{}
	return true
}
