package nodehealth

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// wakes is the one path by which a node is scheduled for its next look,
// other than the watch events that queue it themselves: its grace deadline,
// a retry (after a lost write race, while the apiserver cannot be reached,
// when the zone's rate lets its taint through), the safety resync, and the
// guard's changes that alter what other nodes should carry all set a wake,
// and one goroutine, started with the controller as its source, adds the
// nodes whose wake has come to the work queue.
// A failed reconcile is the exception: its error goes back to the work
// queue, whose per-node exponential backoff and error metrics are made for
// it.
//
// Each node has at most one wake, the earliest asked for. A deadline wake
// reads the deadline again when it comes: a heartbeat the tracker heard in
// the meantime has moved it, and the wake is set again for the new one
// without a reconcile. A healthy node is thus reconciled when something
// about it changes, not at every renewal nor at every grace period.
//
// A delaying work queue (AddAfter) cannot do this: what it is given it
// delivers, and a deadline that moves with every heartbeat would leave one
// stale entry, and one reconcile, per renewal.
type wakes struct {
	clock clock.WithTicker
	// deadline returns a node's current deadline, false for a node with
	// none.
	deadline func(name string) (time.Time, bool)

	mu sync.Mutex
	// at holds each node's next look, kept by safety.Next.Over.
	at     map[string]safety.Next
	queue  wakeQueue
	signal chan struct{}
	// ahead is due's scratch list of the wakes it reads ahead of their
	// time, kept between calls; due is called by one goroutine at a time.
	ahead []queued
	// handed holds when each node whose deadline passed was handed to the
	// work queue, until its look takes it (tookAt): the mark's time from
	// its deadline is split at it into the wake's and the queue's.
	handed map[string]time.Time
}

func newWakes(clk clock.WithTicker, deadline func(string) (time.Time, bool)) *wakes {
	return &wakes{clock: clk, deadline: deadline, at: make(map[string]safety.Next), handed: make(map[string]time.Time),
		signal: make(chan struct{}, 1)}
}

// source is the wakes' source of the controller's work queue: it runs them
// while the controller runs.
func (w *wakes) source() source.Source {
	return source.Func(func(ctx context.Context, q queue) error {
		go w.run(ctx, q)
		return nil
	})
}

// set asks for the node's next look. A deadline replaces the deadline set
// before, which the heartbeats since have moved, but not an earlier wake of
// another kind: that may have been set while the reconcile that asks for the
// deadline was in flight, by a change (a hold lifting) that the reconcile did
// not see, and the look it brings sets the deadline again. No deadline drops
// a deadline wake and no other: a node whose grace ran out waits for no
// deadline, but a wake set by a change it did not see must still come. A nil
// wakes, as in tests that call the reconciler directly, sets nothing.
func (w *wakes) set(name string, next safety.Next) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	old, ok := w.at[name]
	e, stands := next.Over(old, ok)
	switch {
	case !stands:
		delete(w.at, name)
		return
	case ok && e.Deadline == old.Deadline && e.At.Equal(old.At):
		return
	}
	w.at[name] = e
	w.queue.push(queued{at: e.At, name: name})
	if w.queue[0].name == name && w.queue[0].at.Equal(e.At) {
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
}

// clear drops the node's wake: it is gone.
func (w *wakes) clear(name string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.at, name)
}

// when returns when the node's next look comes, if one is set.
func (w *wakes) when(name string) (time.Time, bool) {
	if w == nil {
		return time.Time{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.at[name]
	return e.At, ok
}

// run adds the nodes whose wake has come to q until ctx ends.
func (w *wakes) run(ctx context.Context, q queue) {
	for {
		var timer clock.Timer
		var fire <-chan time.Time
		if next, ok := w.next(); ok {
			timer = w.clock.NewTimer(next.Sub(w.clock.Now()))
			// The clock may have passed the wake while the timer was
			// made, and a timer made then would wait too long.
			if now := w.clock.Now(); !next.After(now) {
				timer.Stop()
				w.sendDue(q, now)
				continue
			}
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-w.signal:
		case <-fire:
			w.sendDue(q, w.clock.Now())
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// next returns the earliest wake set, dropping those replaced or cleared.
func (w *wakes) next() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.queue) > 0 {
		q := w.queue[0]
		if e, ok := w.at[q.name]; ok && e.At.Equal(q.at) {
			return q.at, true
		}
		w.queue.pop()
	}
	return time.Time{}, false
}

// lookAhead is how far ahead of now due reads the deadlines of the deadline
// wakes to come. A healthy node's heartbeat has moved its deadline on long
// before its wake, and setting that wake again early lets one timer serve
// every wake of the next lookAhead, where each would otherwise wake the
// goroutine on its own: at 5,000 nodes renewing every 10s, a wake every 8ms.
// A wake whose deadline still stands is left to come at its time.
const lookAhead = time.Second

// due takes every wake that has come at now and returns the nodes to look
// at: first those whose deadline has passed, then the rest. A deadline wake
// whose deadline moved is set again for the new one, as is one due within
// lookAhead.
func (w *wakes) due(now time.Time) (expired, rest []string) {
	var deadlines []string
	var kept []queued
	ahead := w.ahead[:0]
	w.mu.Lock()
	for horizon := now.Add(lookAhead); len(w.queue) > 0 && !w.queue[0].at.After(horizon); {
		q := w.queue.pop()
		e, ok := w.at[q.name]
		switch {
		case !ok || !e.At.Equal(q.at):
			// Replaced or cleared.
		case q.at.After(now) && e.Deadline:
			ahead = append(ahead, q)
		case q.at.After(now):
			kept = append(kept, q)
		case e.Deadline:
			delete(w.at, q.name)
			deadlines = append(deadlines, q.name)
		default:
			delete(w.at, q.name)
			rest = append(rest, q.name)
		}
	}
	// Pushed back after the loop, which would otherwise pop them again.
	for _, q := range kept {
		w.queue.push(q)
	}
	w.mu.Unlock()
	for _, name := range deadlines {
		if d, ok := w.deadline(name); ok && d.After(now) {
			w.set(name, safety.Next{At: d, Deadline: true})
			continue
		}
		expired = append(expired, name)
	}
	for _, q := range ahead {
		d, ok := w.deadline(q.name)
		if !ok {
			d = q.at
		}
		w.move(q, d)
	}
	clear(ahead)
	w.ahead = ahead
	return expired, rest
}

// move sets the deadline wake q, taken from the queue before its time, for
// the node's deadline d, unless the node's wake changed meanwhile: then the
// change pushed its own entry.
func (w *wakes) move(q queued, d time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.at[q.name]; !ok || !e.Deadline || !e.At.Equal(q.at) {
		return
	}
	w.at[q.name] = safety.Next{At: d, Deadline: true}
	w.queue.push(queued{at: d, name: q.name})
}

// sendDue queues the nodes whose wake has come at now, those whose deadline
// passed ahead of any other work (markPriority).
func (w *wakes) sendDue(q queue, now time.Time) {
	expired, rest := w.due(now)
	w.hand(expired, now)
	for _, name := range expired {
		addFirst(q, name)
	}
	for _, name := range rest {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
}

// markPriority is the work queue priority of a node whose deadline has
// passed. Watch events and other wakes come at the queue's default, 0, and
// the nodes listed at start below it: a mark never waits behind them, however
// many nodes a zone's change of state sends to the queue.
const markPriority = 100

// addFirst queues the node ahead of work of lower priority.
func addFirst(q queue, name string) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(markPriority)}, req)
		return
	}
	q.Add(req)
}

// hand notes that the nodes whose deadline passed are handed to the work
// queue at now, before they are sent: a look that follows the send then
// always finds it. The first hand-over since the node's last look stands: a
// node still waiting in the queue when the resync finds it overdue and hands
// it over again has waited since the first.
func (w *wakes) hand(names []string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, name := range names {
		if _, ok := w.handed[name]; !ok {
			w.handed[name] = now
		}
	}
}

// handedAt returns when the node was first handed to the work queue for
// its passed deadline since its last look, if it was, and forgets it.
func (w *wakes) handedAt(name string) (time.Time, bool) {
	if w == nil {
		return time.Time{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.handed[name]
	delete(w.handed, name)
	return t, ok
}

// queued is an entry of the wake queue; it is stale once the node's wake
// changed.
type queued struct {
	at   time.Time
	name string
}

// wakeQueue is a min-heap of wakes by time. It is written out rather than
// built on container/heap, whose interface takes and returns entries as any:
// each push and pop would allocate, and a healthy fleet pushes and pops a
// wake per node per grace period.
type wakeQueue []queued

// push adds an entry.
func (q *wakeQueue) push(e queued) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h[i].at.Before(h[parent].at) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

// pop removes and returns the earliest entry; the queue must not be empty.
func (q *wakeQueue) pop() queued {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = queued{} // let the name go
	h = h[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l].at.Before(h[least].at) {
			least = l
		}
		if r < len(h) && h[r].at.Before(h[least].at) {
			least = r
		}
		if least == i {
			break
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
	*q = h
	return top
}
