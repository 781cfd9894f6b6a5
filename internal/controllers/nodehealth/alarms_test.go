package nodehealth

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestAlarmsReconcileOnlyPassedDeadlines: an alarm whose node heard a
// heartbeat meanwhile is set again for the new deadline without a
// reconcile; one whose deadline has passed queues the node.
func TestAlarmsReconcileOnlyPassedDeadlines(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	var mu sync.Mutex
	deadlines := map[string]time.Time{"renewed": t0.Add(10 * time.Second), "silent": t0.Add(10 * time.Second)}
	kicked := make(chan []string, 10)
	a := newAlarms(clk,
		func(name string) (time.Time, bool) {
			mu.Lock()
			defer mu.Unlock()
			d, ok := deadlines[name]
			return d, ok
		},
		func(names ...string) {
			if len(names) > 0 {
				kicked <- slices.Sorted(slices.Values(names))
			}
		})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	a.set("renewed", t0.Add(10*time.Second))
	a.set("silent", t0.Add(10*time.Second))
	a.set("cleared", t0.Add(5*time.Second))
	a.clear("cleared")
	// The renewed node hears a heartbeat at 8s: its deadline moves to 18s.
	mu.Lock()
	deadlines["renewed"] = t0.Add(18 * time.Second)
	mu.Unlock()

	step := func(to time.Duration) {
		// Wait for the alarms' timer before moving the clock past it.
		for !clk.HasWaiters() {
			runtime.Gosched()
		}
		clk.SetTime(t0.Add(to))
	}
	step(10 * time.Second)
	if got := <-kicked; !slices.Equal(got, []string{"silent"}) {
		t.Fatalf("at 10s kicked %v, want [silent]", got)
	}
	if at, ok := a.when("renewed"); !ok || !at.Equal(t0.Add(18*time.Second)) {
		t.Fatalf("renewed node's alarm = %v, %v; want 18s", at, ok)
	}
	step(18 * time.Second)
	if got := <-kicked; !slices.Equal(got, []string{"renewed"}) {
		t.Fatalf("at 18s kicked %v, want [renewed]", got)
	}
	select {
	case got := <-kicked:
		t.Fatalf("kicked %v after every alarm went off", got)
	default:
	}
}
