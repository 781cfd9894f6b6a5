package health

import "time"

// The silence side of the tracker: how long each node has been quiet, as
// the partition freeze counts it, which a refresh leaves as it was and an
// excused outage moves on.

// RefreshAll counts now as a heartbeat of every tracked node, giving each a
// fresh grace period before it is marked. The refresh is no heartbeat
// heard: how long a node has been quiet, as the partition freeze counts it,
// does not change.
func (t *Tracker) RefreshAll(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.quietFrom == nil {
		t.quietFrom = make(map[string]time.Time, len(t.nodes))
	}
	for name, e := range t.nodes {
		if _, kept := t.quietFrom[name]; !kept {
			t.quietFrom[name] = e.lastHeartbeat
		}
		e.lastHeartbeat = now
	}
}

// heard forgets the quiet time a refresh kept of a node that has shown life
// since. Called with mu held.
func (t *Tracker) heard(name string) {
	if len(t.quietFrom) > 0 {
		delete(t.quietFrom, name)
	}
}

// quietSince returns when the node last showed life to the partition
// freeze. Called with mu held.
func (t *Tracker) quietSince(name string, e *entry) time.Time {
	if q, ok := t.quietFrom[name]; ok {
		return q
	}
	return e.lastHeartbeat
}

// Excuse discounts a span during which the controller could not see the
// apiserver, from from to to: that time no longer counts against any
// node's silence, as the kubelets could not write while the controller
// could not read. A node last heard before from has its last heartbeat, and
// its deadline, moved on by the length of the span; a node heard within it
// counts as heard at to.
func (t *Tracker) Excuse(from, to time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.nodes {
		e.lastHeartbeat = excused(e.lastHeartbeat, from, to)
	}
	for name, q := range t.quietFrom {
		t.quietFrom[name] = excused(q, from, to)
	}
}

// excused returns t, a time a node was last heard, moved on by as much of
// the span from from to to as came after it.
func excused(t, from, to time.Time) time.Time {
	if !t.Before(to) {
		return t
	}
	return t.Add(to.Sub(Later(t, from)))
}

// Later returns the later of two times.
func Later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Earliest returns the earlier of two times, the zero time counting as
// none.
func Earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Quiet is what the tracker knows, at one instant, of the nodes going
// quiet: what the partition freeze needs beyond the nodes already marked.
type Quiet struct {
	// Fading names the judged nodes that went quiet recently: without a
	// heartbeat for at least half their grace period, but whose grace ran
	// out no longer ago than the window. Nodes silent for longer, and
	// nodes already marked when first observed, are not fading: their
	// silence is old news, not part of what is happening now.
	Fading []string
	// FadingSooner names the nodes not in Fading that fade on the window's
	// clock, for the partition freeze: from half the shorter of their
	// grace and the window. Nodes of pools with a long grace, cut off with
	// the others, are counted with them, not when their own grace is half
	// run.
	FadingSooner []string
	// Decided counts the judged nodes whose liveness is known: heard since
	// first observed, already marked then, or fading. Until every node is,
	// a controller that has just started cannot tell a partition from a
	// few dead nodes.
	Decided int
}

// Quiet returns the fading nodes and the count of decided ones at now;
// window is how long after its grace ran out a node still counts as fading.
func (t *Tracker) Quiet(now time.Time, window time.Duration) Quiet {
	t.mu.Lock()
	defer t.mu.Unlock()
	var q Quiet
	for name, e := range t.nodes {
		if e.grace == 0 {
			continue
		}
		if e.datedByMark {
			q.Decided++
			continue
		}
		quiet := now.Sub(t.quietSince(name, e))
		fading := quiet >= e.grace/2 && quiet <= e.grace+window
		if fading {
			q.Fading = append(q.Fading, name)
		} else if quiet >= min(e.grace, window)/2 && quiet <= e.grace+window {
			q.FadingSooner = append(q.FadingSooner, name)
		}
		if fading || !e.heardAt.IsZero() || quiet > e.grace+window {
			q.Decided++
		}
	}
	return q
}
