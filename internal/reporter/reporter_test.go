package reporter

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	rvs, _ := nodeGets(got)
	if count(got, "update", "leases") != 1 || !slices.Equal(rvs, []string{"0"}) {
		t.Errorf("calls at 13s = %+v, want a lease renewal and a status sync", got)
	}
}

func TestJitterLengthensIntervalsByAtMostItsShare(t *testing.T) {
	r := &Reporter{jitter: loopJitter}
	for range 1000 {
		d := r.jittered(10 * time.Second)
		if d < 10*time.Second || d > 10400*time.Millisecond {
			t.Fatalf("jittered(10s) = %v, want within [10s, 10.4s]", d)
		}
	}
}
