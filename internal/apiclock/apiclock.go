// Package apiclock tells the time by the apiserver's clock.
//
// A pod's eviction deadline counts from its node's NoExecute taint's
// timeAdded: a wall-clock time that one process wrote and another, or the
// same one later, compares with its own wall clock. Two hosts' wall clocks
// need not agree, and one host's may be stepped: a replica whose clock runs
// five minutes ahead finds every pod five minutes nearer its eviction than
// it is, and evicts at once what should wait. A Clock takes neither wall
// clock: it reads the apiserver's time from the Date header of its answers
// and advances it between answers by this process's monotonic clock, which
// no step moves. Every replica then measures on one clock, the apiserver's,
// which also stamps every object's creation and deletion.
//
// A Date header is whole seconds, so a Clock knows the apiserver's time
// only within bounds, narrowed by each answer: Now is the latest time the
// apiserver's clock has surely reached, the one to compare deadlines with,
// and Stamp the earliest it has surely not reached, the one to write as a
// deadline's start. A deadline so written and so read never passes early;
// it may pass up to a second or so late.
package apiclock

import (
	"net/http"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Clock is the apiserver's clock as its answers tell it. It implements
// clock.PassiveClock. Until it has seen an answer it reads the local clock.
type Clock struct {
	local clock.PassiveClock
	// epoch is the local reading that elapsed times count from; with a
	// real clock it carries a monotonic reading, which no step moves.
	epoch time.Time

	mu sync.Mutex
	// lo and hi bound the apiserver's time at epoch.
	lo, hi time.Time
	known  bool
}

// New returns a Clock that advances by local between answers. local must
// be monotonic (clock.RealClock is) for a step of the wall clock to leave
// it alone.
func New(local clock.PassiveClock) *Clock {
	return &Clock{local: local, epoch: local.Now()}
}

// Observe narrows the clock's bounds with one answer: a request sent at
// sent, answered at received (both local readings), whose Date header said
// date. An answer that the bounds cannot hold, after the apiserver's clock
// was stepped, or from another apiserver whose clock differs, replaces
// them.
func (c *Clock) Observe(sent, received, date time.Time) {
	lo := date.Add(-received.Sub(c.epoch))
	hi := date.Add(time.Second - sent.Sub(c.epoch))
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known || lo.After(c.hi) || hi.Before(c.lo) {
		c.lo, c.hi, c.known = lo, hi, true
		return
	}
	if lo.After(c.lo) {
		c.lo = lo
	}
	if hi.Before(c.hi) {
		c.hi = hi
	}
}

// Now returns the latest time the apiserver's clock has surely reached.
func (c *Clock) Now() time.Time {
	lo, _, ok := c.bounds()
	if !ok {
		return c.local.Now()
	}
	return lo
}

// Since returns how long the apiserver's clock has surely run since t.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Stamp returns a time the apiserver's clock has surely not reached yet,
// rounded up to the whole second that an API timestamp keeps.
func (c *Clock) Stamp() time.Time {
	_, hi, ok := c.bounds()
	if !ok {
		hi = c.local.Now()
	}
	if up := hi.Truncate(time.Second); up.Before(hi) {
		return up.Add(time.Second)
	}
	return hi
}

// bounds returns the apiserver's time now, as its lower and upper bound.
func (c *Clock) bounds() (lo, hi time.Time, ok bool) {
	elapsed := c.local.Since(c.epoch)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lo.Add(elapsed), c.hi.Add(elapsed), c.known
}

// Wrap returns rt with every answer's Date header observed; it suits
// rest.Config.Wrap.
func (c *Clock) Wrap(rt http.RoundTripper) http.RoundTripper {
	return transport{next: rt, clock: c}
}

type transport struct {
	next  http.RoundTripper
	clock *Clock
}

// RoundTrip implements http.RoundTripper.
func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := t.clock.local.Now()
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if date, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
		t.clock.Observe(sent, t.clock.local.Now(), date)
	}
	return resp, err
}
