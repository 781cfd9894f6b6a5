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
	// excused are the spans in which no node could be marked (outages,
	// time no leader watched), merged, latest last: they count in no
	// window.
	excused []Span
	// started is when a new process seeded the freeze. For one window
	// (of time not excused) after it, silences are counted from two
	// windows (of time not excused) before it: the nodes
	// it sees fade are dated from its start, not from when they fell
	// silent, which may have been up to a grace before it (a node silent
	// for longer was marked); the marks it finds within one window before
	// that may belong to the same partition.
	started time.Time
	// from is the start of the window that set the freeze off: nodes
	// silent since then belong to it.
	from       time.Time
	clearSince time.Time
}

// Frozen reports whether destructive work is frozen, and since when.
func (f *Freeze) Frozen() (bool, time.Time) { return f.frozen, f.since }

// Record is a freeze as the cluster keeps it, so that a new leader carries
// on with the freeze the old one held rather than rebuild it from what the
// nodes show, which can tell less: marks spread past one window, silences
// of several waves, a cooldown under way.
type Record struct {
	// Since is when the freeze began.
	Since time.Time `json:"since"`
	// From is the start of the window that set it off: nodes silent since
	// then belong to it.
	From time.Time `json:"from"`
	// ClearSince is when the lost nodes fell below the threshold, the
	// start of the cooldown; zero while they are above it.
	ClearSince time.Time `json:"clearSince,omitzero"`
}

// Record returns the freeze as the cluster keeps it, and whether there is
// one.
func (f *Freeze) Record() (Record, bool) {
	if !f.frozen {
		return Record{}, false
	}
	return Record{Since: f.since, From: f.from, ClearSince: f.clearSince}, true
}

// Restore takes up at now a freeze the cluster kept; the next Update judges
// it by the nodes lost since its window began. A cooldown under way starts
// again from now: nodes that went quiet shortly before the takeover and
// came back within half a grace period after it called the old leader's
// cooldown off and started it again, and the new leader, which dates every
// silence from its own start, never sees them fade. Holding one cooldown
// longer than the old leader would, at most, is the safe side of that.
func (f *Freeze) Restore(r Record, now time.Time) {
	if f.Threshold <= 0 {
		return
	}
	f.frozen, f.since, f.from, f.clearSince = true, r.Since, r.From, r.ClearSince
	if !f.clearSince.IsZero() {
		f.clearSince = laterOf(f.clearSince, now)
	}
}

// Update re-evaluates the freeze. total is the number of nodes, silentSince
// holds, for each node without heartbeats, when its grace ran out, and
// fading names the nodes that went quiet within the window, silent or not
// yet: nodes that lose their heartbeats together expire one by one as the
// controller observes them, and counting the fading ones lets the freeze
// start before the first of them is tainted. It reports whether the freeze
// started or ended. A freeze does not end while settling is true: a
// process that has just taken over does not know yet whether the nodes it
// has not heard since are silent, and must not release what its
// predecessor held on their account.
func (f *Freeze) Update(total int, silentSince map[string]time.Time, fading map[string]struct{}, settling bool, now time.Time) (changed bool) {
	if f.Threshold <= 0 || total == 0 {
		return f.end()
	}
	if !f.frozen {
		if f.over(f.Counted(silentSince, fading, now), total) {
			f.frozen, f.since, f.from, f.clearSince = true, now, f.windowStart(now), time.Time{}
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
	if now.Sub(f.clearSince) >= f.Cooldown && !settling {
		return f.end()
	}
	return false
}

// Counted returns how many lost nodes the freeze counts at now: those that
// went silent since its window began (the last window while it is off), and
// the fading ones, each node once. A new leader finds some of a partition's
// nodes marked by its predecessor, silent since their marks, and sees the
// others fade: both belong to the one partition.
func (f *Freeze) Counted(silentSince map[string]time.Time, fading map[string]struct{}, now time.Time) int {
	from := f.windowStart(now)
	if f.frozen {
		from = f.from
	}
	n := len(fading)
	for name, at := range silentSince {
		if _, counted := fading[name]; !counted && !at.Before(from) {
			n++
		}
	}
	return n
}

// windowStart returns the start of the window that ends at now, stretched
// back, while the seed lies within it, to two windows before the seed. Both
// are windows of time not excused: an outage just after a seed keeps the
// nodes the new process could not see fade, and those it found marked, in
// one window; and so does one just before it, which the process knows of
// from the cluster (Excused), during which no node could be marked.
func (f *Freeze) windowStart(now time.Time) time.Time {
	from := f.unexcused(now, f.Window)
	if seeded := f.unexcused(f.started, 2*f.Window); seeded.Before(from) && !from.After(f.started) {
		from = seeded
	}
	return from
}

// unexcused returns the time from which d of time not excused runs up to
// now: a span excused within it stretches it back by as much, since nodes
// that fell silent on either side of an outage (the ones marked before it,
// and those whose silence it moved on) went together.
func (f *Freeze) unexcused(now time.Time, d time.Duration) time.Time {
	from := now
	for i := len(f.excused) - 1; i >= 0; i-- {
		e := f.excused[i]
		if !e.From.Before(from) {
			continue
		}
		if gap := from.Sub(e.To); gap >= d {
			break
		} else if gap > 0 {
			d -= gap
		}
		from = e.From
	}
	return from.Add(-d)
}

// Span is a stretch of time in which no node could be marked, which no
// freeze window counts: one during which the controller could not reach
// the apiserver, or one no leader watched the cluster. The cluster keeps
// the recent ones for a new leader (Excused).
type Span struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Excuse records a span in which no node could be marked: an outage, or
// time no leader watched. Spans no window can reach any more are forgotten
// (reach); a span that overlaps the latest one known, or comes before it,
// is taken in order, as the cluster's record and the process's own may
// both hold it.
func (f *Freeze) Excuse(from, to, now time.Time) {
	if !from.Before(to) {
		return
	}
	f.excused = append(f.excused, Span{From: from, To: to})
	slices.SortFunc(f.excused, func(a, b Span) int { return a.From.Compare(b.From) })
	merged := f.excused[:0]
	for _, e := range f.excused {
		if n := len(merged); n > 0 && !e.From.After(merged[n-1].To) {
			merged[n-1].To = laterOf(merged[n-1].To, e.To)
			continue
		}
		merged = append(merged, e)
	}
	f.excused = merged
	keep := f.reach(now)
	for len(f.excused) > 0 && f.excused[0].To.Before(keep) {
		f.excused = f.excused[1:]
	}
}

// reach returns the earliest time that a window, of this process or of a
// leader taking over from it, can reach back to from now on: the start of
// this process's window (stretched over its seed), or two windows of time
// not excused before now, as far as a new leader's seed stretches. Both
// count time not excused, not time on the clock: two outages a few seconds
// apart make one window reach back over both, and a span that ended two
// windows ago by the clock may still join a node marked before it with
// those found silent after the next.
func (f *Freeze) reach(now time.Time) time.Time {
	r := f.unexcused(now, 2*f.Window)
	if s := f.windowStart(now); s.Before(r) {
		r = s
	}
	return r
}

// Excused returns the excused spans that still count in a window, as the
// cluster keeps them (AnnotationUnwatched in package safety): a new leader
// reads them before it seeds, so that the window it stretches back over
// the nodes it finds marked reaches over an outage its predecessor lived
// through, and it did not. Without them, a partition whose first nodes
// were marked just before an outage, and whose others could not be marked
// during it, falls into two windows for a leader that takes over after it.
func (f *Freeze) Excused(now time.Time) []Span {
	keep := f.reach(now)
	var out []Span
	for _, e := range f.excused {
		if !e.To.Before(keep) {
			out = append(out, e)
		}
	}
	return out
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Rebuild decides the freeze from the silences alone, as a controller that
// has just started finds them in the cluster: if, at any time, enough of the
// nodes still silent went silent within one window, the freeze that window
// set off still holds, since none of them has come back. totalAt returns
// the number of nodes a window that begins at the given time is judged
// against: the count of its own time, as the controller that saw it
// judged it, not a count that nodes leaving since (into maintenance) made
// smaller. It reports whether the freeze is on.
func (f *Freeze) Rebuild(totalAt func(time.Time) int, silentSince map[string]time.Time, now time.Time) bool {
	if f.Threshold <= 0 || totalAt(now) == 0 {
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
		if f.over(end-start, totalAt(times[start])) {
			f.frozen, f.since, f.from, f.clearSince = true, now, times[start], time.Time{}
			return true
		}
	}
	return f.frozen
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
