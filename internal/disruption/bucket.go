package disruption

import (
	"math"
	"time"
)

// Bucket is a token bucket with a burst of one, driven by the times it is
// given rather than by a clock of its own.
//
// It is not golang.org/x/time/rate's Limiter, which takes explicit times too,
// for two things the Limiter does otherwise. Refund returns a token whenever
// a taint turns out not to have been written; the Limiter can only cancel a
// reservation whose time has not yet come, and then gives back less when
// tokens were taken after it. And the guard's callers read their clock before
// taking the model's lock, so times may arrive slightly out of order: the bucket
// ignores a time earlier than the last, where the Limiter moves its clock
// back to it and counts the time since twice.
type Bucket struct {
	rate   float64
	tokens float64
	last   time.Time
}

// NewBucket returns a full bucket that refills at rate tokens per second.
func NewBucket(rate float64, now time.Time) *Bucket {
	return &Bucket{rate: rate, tokens: 1, last: now}
}

// Rate returns the refill rate.
func (b *Bucket) Rate() float64 { return b.rate }

// SetRate changes the refill rate from now on; the tokens already earned are
// kept, so a faster rate does not grant a burst.
func (b *Bucket) SetRate(rate float64, now time.Time) {
	b.refill(now)
	b.rate = rate
}

// refill adds the tokens earned since the last time it was given, up to
// one; a time earlier than the last earns nothing.
func (b *Bucket) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = math.Min(1, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
}

// Take takes a token if one is there. Otherwise it returns how long until
// one will be, or false for ok and a negative wait when the rate is zero and
// none ever will.
func (b *Bucket) Take(now time.Time) (ok bool, wait time.Duration) {
	b.refill(now)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	if b.rate <= 0 {
		return false, -1
	}
	return false, b.until(1)
}

// Refund gives back a token taken for work that did not happen.
func (b *Bucket) Refund() { b.tokens = math.Min(1, b.tokens+1) }

// Wait returns how long until n tokens will have accumulated from what is
// there now, or a negative wait when the rate is zero.
func (b *Bucket) Wait(n float64, now time.Time) time.Duration {
	b.refill(now)
	if b.tokens >= n {
		return 0
	}
	if b.rate <= 0 {
		return -1
	}
	return b.until(n)
}

// until returns how long until n tokens will have accumulated, rounded up
// so that asking again after it finds them there.
func (b *Bucket) until(n float64) time.Duration {
	return time.Duration(math.Ceil((n - b.tokens) / b.rate * float64(time.Second)))
}
