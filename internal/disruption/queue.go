package disruption

import (
	"slices"
	"time"
)

// zoneQueue is a zone's line of nodes waiting for a NoExecute taint. The
// nodes are served in the order they first asked, one token of the zone's
// bucket each: the head takes the next token, and the others learn how long
// until their turn.
type zoneQueue struct {
	bucket  *Bucket
	waiting []string
}

// newZoneQueue returns an empty line whose bucket starts full and refills at
// rate tokens per second.
func newZoneQueue(rate float64, now time.Time) *zoneQueue {
	return &zoneQueue{bucket: NewBucket(rate, now)}
}

// take asks for the node's turn. A node not in the line joins its back; the
// head takes a token if there is one, and leaves the line. When the answer
// is no, wait says how long until the node's turn, or is negative when the
// rate is zero and the turn never comes.
func (q *zoneQueue) take(name string, now time.Time) (ok bool, wait time.Duration) {
	pos := slices.Index(q.waiting, name)
	if pos < 0 {
		q.waiting = append(q.waiting, name)
		pos = len(q.waiting) - 1
	}
	if pos == 0 {
		ok, wait := q.bucket.Take(now)
		if ok {
			q.waiting = q.waiting[1:]
			return true, 0
		}
		if wait < 0 {
			return false, wait
		}
	}
	return false, q.bucket.Wait(float64(pos+1), now)
}

// refund gives back a token taken for a taint that was not written, and
// returns the nodes waiting: their turns may have come earlier.
func (q *zoneQueue) refund() (waiting []string) {
	q.bucket.Refund()
	return slices.Clone(q.waiting)
}

// leave takes a node out of the line; its place is lost.
func (q *zoneQueue) leave(name string) {
	q.waiting = slices.DeleteFunc(q.waiting, func(n string) bool { return n == name })
}

// idle reports whether no node waits.
func (q *zoneQueue) idle() bool { return len(q.waiting) == 0 }

// queues holds the tainting line of each zone that has counted nodes or
// nodes waiting: after settle, every zone of the census has one.
type queues map[ZoneID]*zoneQueue

// leave takes a node out of a zone's line, if the zone has one.
func (qs queues) leave(id ZoneID, name string) {
	if q := qs[id]; q != nil {
		q.leave(name)
	}
}

// settle fits a zone's line to a change of the zone: it drops the line of
// a zone with neither counted nodes nor waiting ones, starts a full one for
// a zone that has none, and sets the rate of the others, keeping the tokens
// they earned.
func (qs queues) settle(id ZoneID, counted int, rate float64, now time.Time) {
	q := qs[id]
	switch {
	case counted == 0 && (q == nil || q.idle()):
		delete(qs, id)
	case q == nil:
		qs[id] = newZoneQueue(rate, now)
	case q.bucket.Rate() != rate:
		q.bucket.SetRate(rate, now)
	}
}
