package nodehealth

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// alarms wakes a node's reconcile when its deadline passes. The deadline is
// read again when the alarm goes off: a heartbeat the tracker heard in the
// meantime has moved it, and the alarm is set again for the new one without
// a reconcile. A healthy node is thus reconciled when something about it
// changes, not at every renewal nor at every grace period.
type alarms struct {
	clock clock.WithTicker
	// deadline returns a node's current deadline, false for a node with
	// none.
	deadline func(name string) (time.Time, bool)
	// kick queues nodes for a reconcile.
	kick func(names ...string)

	mu    sync.Mutex
	at    map[string]time.Time
	queue alarmQueue
	wake  chan struct{}
}

func newAlarms(clk clock.WithTicker, deadline func(string) (time.Time, bool), kick func(...string)) *alarms {
	return &alarms{clock: clk, deadline: deadline, kick: kick, at: make(map[string]time.Time), wake: make(chan struct{}, 1)}
}

// set makes the node's alarm go off at t, in place of any set before. A nil
// alarms, as in tests that call the reconciler directly, sets nothing.
func (a *alarms) set(name string, t time.Time) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.at[name]; ok && old.Equal(t) {
		return
	}
	a.at[name] = t
	heap.Push(&a.queue, alarm{at: t, name: name})
	if a.queue[0].name == name && a.queue[0].at.Equal(t) {
		a.signal()
	}
}

// clear drops the node's alarm.
func (a *alarms) clear(name string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.at, name)
}

// when returns when the node's alarm goes off, if one is set.
func (a *alarms) when(name string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[name]
	return t, ok
}

func (a *alarms) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Start sounds the alarms until ctx ends.
func (a *alarms) Start(ctx context.Context) error {
	for {
		var timer clock.Timer
		var fire <-chan time.Time
		if next, ok := a.next(); ok {
			timer = a.clock.NewTimer(next.Sub(a.clock.Now()))
			// The clock may have passed the alarm while the timer was
			// made, and a timer made then would wait too long.
			if now := a.clock.Now(); !next.After(now) {
				timer.Stop()
				a.sound(now)
				continue
			}
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case <-a.wake:
		case <-fire:
			a.sound(a.clock.Now())
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// next returns the earliest alarm set, dropping those replaced or cleared.
func (a *alarms) next() (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.queue) > 0 {
		e := a.queue[0]
		if t, ok := a.at[e.name]; ok && t.Equal(e.at) {
			return e.at, true
		}
		heap.Pop(&a.queue)
	}
	return time.Time{}, false
}

// sound handles every alarm due at now: a node whose deadline has passed is
// reconciled; one whose deadline moved gets an alarm for the new one.
func (a *alarms) sound(now time.Time) {
	var due []string
	a.mu.Lock()
	for len(a.queue) > 0 && !a.queue[0].at.After(now) {
		e := heap.Pop(&a.queue).(alarm)
		if t, ok := a.at[e.name]; ok && t.Equal(e.at) {
			delete(a.at, e.name)
			due = append(due, e.name)
		}
	}
	a.mu.Unlock()
	var expired []string
	for _, name := range due {
		if d, ok := a.deadline(name); ok && d.After(now) {
			a.set(name, d)
			continue
		}
		expired = append(expired, name)
	}
	a.kick(expired...)
}

type alarm struct {
	at   time.Time
	name string
}

// alarmQueue is a min-heap of alarms by time.
type alarmQueue []alarm

func (q alarmQueue) Len() int           { return len(q) }
func (q alarmQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q alarmQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }

// Push adds an alarm; heap.Push calls it.
func (q *alarmQueue) Push(x any) { *q = append(*q, x.(alarm)) }

// Pop removes the last alarm; heap.Pop calls it.
func (q *alarmQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
