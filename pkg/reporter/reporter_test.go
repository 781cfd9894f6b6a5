package reporter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestPauseStopsHeartbeatsAndResumeRestartsThem(t *testing.T) {
	h := newHarness(t, Config{})
	h.start()
	h.settle(2)
	h.calls()

	h.r.Pause()
	if !h.r.Paused() {
		t.Fatal("Paused() = false after Pause")
	}
	// Paused loops wait for Resume, not for the clock.
	h.settle(0)
	for range 6 {
		h.step(10*time.Minute, 0)
	}
	if got := h.calls(); len(got) != 0 {
		t.Fatalf("calls while paused = %+v, want none", got)
	}

	resumed := h.clk.Now()
	h.r.Resume()
	h.settle(2)
	got := writes(h.calls())
	if count(got, "update", "leases") != 1 || count(got, "patch", "nodes") != 1 || len(got) != 2 {
		t.Fatalf("writes on resume = %+v, want a lease renewal and a status report at once", got)
	}
	if renewed := h.lease().Spec.RenewTime.Time; !renewed.Equal(resumed) {
		t.Errorf("lease renewed at %v, want %v", renewed, resumed)
	}
	if ready := condition(h.node(), corev1.NodeReady); !ready.LastHeartbeatTime.Time.Equal(resumed) {
		t.Errorf("Ready heartbeat at %v, want %v", ready.LastHeartbeatTime, resumed)
	}

	// Then the usual schedule.
	h.step(10*time.Second, 2)
	if got := writes(h.calls()); !slices.Equal(got, []call{{verb: "update", resource: "leases"}}) {
		t.Errorf("writes 10s after resume = %+v, want the lease renewal alone", got)
	}
}

func TestPauseCancelsLeaseBackoff(t *testing.T) {
	h := newHarness(t, leaseOnly)
	h.start()
	h.settle(2)
	h.failN("update", "leases", 5, errors.New("connection refused"))
	h.step(10*time.Second, 2)
	h.calls()
	hooks := h.failures.Load()

	h.r.Pause()
	// The status loop still sleeps on the clock until it notices.
	h.settle(0)
	h.step(time.Minute, 0)
	if got := h.calls(); len(got) != 0 {
		t.Fatalf("calls while paused = %+v, want none", got)
	}
	if n := h.failures.Load(); n != hooks {
		t.Errorf("OnRepeatedFailure called %d more times while paused", n-hooks)
	}

	h.r.Resume()
	h.settle(2)
	if got, want := writes(h.calls()), []call{{verb: "update", resource: "leases"}}; !slices.Equal(got, want) {
		t.Errorf("writes on resume = %+v, want %+v", got, want)
	}
}

func TestPausedBeforeRunRegistersOnResume(t *testing.T) {
	h := newHarness(t, Config{})
	h.r.Pause()
	h.start()
	h.step(time.Hour, 0)
	if got := h.calls(); len(got) != 0 {
		t.Fatalf("calls while paused = %+v, want none", got)
	}
	h.r.Resume()
	h.settle(2)
	got := h.calls()
	if count(got, "create", "nodes") != 1 || count(got, "create", "leases") != 1 {
		t.Errorf("calls on resume = %+v, want the node registered and its lease created", got)
	}
}

func TestRunTwiceFails(t *testing.T) {
	h := newHarness(t, Config{})
	h.start()
	h.settle(2)
	if err := h.r.Run(context.Background()); err == nil {
		t.Fatal("second Run returned nil, want an error")
	}
}

func TestStartOffsetDelaysHeartbeats(t *testing.T) {
	h := newHarness(t, Config{StartOffset: 3 * time.Second})
	// A status sync that reads its Node shows when it runs.
	h.blindWatch()
	h.start()
	h.settle(2)
	if got := h.calls(); !slices.Equal(got, []call{{verb: "create", resource: "nodes"}}) {
		t.Fatalf("calls at start = %+v, want the registration alone", got)
	}

	h.step(3*time.Second-time.Millisecond, 2)
	if got := h.calls(); len(got) != 0 {
		t.Fatalf("calls before the offset = %+v, want none", got)
	}
	h.step(time.Millisecond, 2)
	if n := count(h.calls(), "create", "leases"); n != 1 {
		t.Fatalf("%d lease creates at the offset, want 1", n)
	}

	// Both loops now run StartOffset after the round 10s marks.
	h.step(10*time.Second, 2)
	got := h.calls()
	if gets, _ := nodeGets(got); count(got, "update", "leases") != 1 || gets != 1 {
		t.Errorf("calls at 13s = %+v, want a lease renewal and a status sync", got)
	}
}

func TestJitterLengthensIntervalsByAtMostItsShare(t *testing.T) {
	r := &Reporter{random: seededRandom(1)}
	for range 1000 {
		d := r.jittered(10 * time.Second)
		if d < 10*time.Second || d > 10400*time.Millisecond {
			t.Fatalf("jittered(10s) = %v, want within [10s, 10.4s]", d)
		}
	}
}

// TestRetriesAfterFailureAreJittered fails every registration, or every
// lease renewal, of a fleet of reporters sharing one client and one clock,
// as an apiserver that restarts does: their first retries must not come all
// at once, and each must come within the backoff it jitters.
func TestRetriesAfterFailureAreJittered(t *testing.T) {
	const reporters = 50
	down := errors.New("connection refused")
	tests := []struct {
		name           string
		verb, resource string
		// renewFirst lets the Lease be created before the fault, which
		// then hits its first renewal.
		renewFirst bool
		min, max   time.Duration
	}{
		{name: "registration", verb: "create", resource: "nodes", min: 50 * time.Millisecond, max: 100 * time.Millisecond},
		{name: "lease renewal", verb: "update", resource: "leases", renewFirst: true, min: 100 * time.Millisecond, max: 200 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			cs := fake.NewClientset()
			fault := func() {
				prependReactor(cs, tc.verb, tc.resource, func(k8stesting.Action) (bool, k8sruntime.Object, error) {
					return true, nil, down
				})
			}
			clocks := make([]*timerClock, reporters)
			rs := make([]*Reporter, reporters)
			for i := range rs {
				clocks[i] = &timerClock{FakeClock: clk}
				r, err := New(cs, clocks[i], Config{NodeName: fmt.Sprintf("node-%02d", i), NodeStatusUpdateFrequency: time.Hour})
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				r.random = seededRandom(uint64(i))
				rs[i] = r
			}
			if !tc.renewFirst {
				fault()
			}
			runAll(t, rs)
			if tc.renewFirst {
				// Each reporter's loops wait for the next renewal and sync.
				settle(t, clk, 2*reporters)
				for _, c := range clocks {
					c.take()
				}
				fault()
				// Past the renewal interval, jittered.
				clk.Step(11 * time.Second)
				settle(t, clk, 2*reporters)
			} else {
				settle(t, clk, reporters)
			}

			var waits []time.Duration
			for i, c := range clocks {
				timers := c.take()
				if len(timers) != 1 {
					t.Fatalf("reporter %d set timers %v after the fault, want one for its retry", i, timers)
				}
				if w := timers[0]; w < tc.min || w > tc.max {
					t.Errorf("reporter %d retries after %v, want within [%v, %v]", i, w, tc.min, tc.max)
				}
				waits = append(waits, timers[0])
			}
			slices.Sort(waits)
			if spread := waits[len(waits)-1] - waits[0]; spread < (tc.max-tc.min)/2 {
				t.Errorf("retries of %d reporters spread over %v, want at least %v; waits = %v", reporters, spread, (tc.max-tc.min)/2, waits)
			}
		})
	}
}

// runAll runs every reporter of rs until the test ends.
func runAll(t *testing.T, rs []*Reporter) {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() {
			if err := r.Run(ctx); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// timerClock is a reporter's view of a shared fake clock that notes how
// long each timer the reporter sets runs.
type timerClock struct {
	*clocktesting.FakeClock
	mu     sync.Mutex
	timers []time.Duration
}

func (c *timerClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	c.timers = append(c.timers, d)
	c.mu.Unlock()
	return c.FakeClock.NewTimer(d)
}

// take returns the timers set since the last take.
func (c *timerClock) take() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.timers
	c.timers = nil
	return out
}

// seededRandom returns a source for Reporter.random that draws the same
// numbers at every run and is safe for the reporter's concurrent loops.
func seededRandom(seed uint64) func() float64 {
	var mu sync.Mutex
	rnd := rand.New(rand.NewPCG(seed, 0))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return rnd.Float64()
	}
}
