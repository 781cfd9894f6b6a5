package nodehealth

import (
	"testing"
	"time"
)

// TestMarkStaleNeverWaitsForAWrite: the answer that ends an outage may be
// the answer to the keeper's own patch, told of in that patch's request
// path while the keeper holds its lock; marking the records stale then
// must not wait for the lock, or the patch never returns.
func TestMarkStaleNeverWaitsForAWrite(t *testing.T) {
	var k freezeKeeper
	k.mu.Lock() // a write in flight
	done := make(chan struct{})
	go func() {
		k.markStale()
		k.markStale() // a second kick, while the first is unread, does not block either
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("markStale waited for the write in flight")
	}
	k.mu.Unlock()
	select {
	case <-k.kicked():
	default:
		t.Fatal("markStale did not kick the resync")
	}
	if !k.stale.Load() {
		t.Fatal("markStale did not ask for a write")
	}
}
