package apiclock

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// serverAhead is how far the apiserver's clock runs ahead of the local one
// in these tests.
const serverAhead = 7*time.Minute + 300*time.Millisecond

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// answer has the clock observe one answer sent now, taking rtt, stamped by
// an apiserver whose clock runs serverAhead.
func answer(c *Clock, local *clocktesting.FakeClock, rtt time.Duration) {
	sent := local.Now()
	local.Step(rtt / 2)
	date := local.Now().Add(serverAhead).Truncate(time.Second)
	local.Step(rtt - rtt/2)
	c.Observe(sent, local.Now(), date)
}

func TestClockReadsTheLocalClockUntilAnAnswer(t *testing.T) {
	local := clocktesting.NewFakeClock(t0)
	c := New(local)
	if got := c.Now(); !got.Equal(t0) {
		t.Errorf("Now() = %v, want the local %v", got, t0)
	}
	if got := c.Stamp(); !got.Equal(t0) {
		t.Errorf("Stamp() = %v, want the local %v", got, t0)
	}
}

func TestClockBoundsTheApiserversTime(t *testing.T) {
	local := clocktesting.NewFakeClock(t0)
	c := New(local)
	for range 20 {
		answer(c, local, 40*time.Millisecond)
		local.Step(130 * time.Millisecond)
	}
	local.Step(10 * time.Minute)
	server := local.Now().Add(serverAhead)
	now, stamp := c.Now(), c.Stamp()
	if now.After(server) {
		t.Errorf("Now() = %v is past the apiserver's %v", now, server)
	}
	if server.Sub(now) > 100*time.Millisecond {
		t.Errorf("Now() = %v trails the apiserver's %v by %v; answers every 130ms should narrow it to one round trip",
			now, server, server.Sub(now))
	}
	if stamp.Before(server) {
		t.Errorf("Stamp() = %v is before the apiserver's %v", stamp, server)
	}
	if stamp.Sub(server) > time.Second+100*time.Millisecond || !stamp.Equal(stamp.Truncate(time.Second)) {
		t.Errorf("Stamp() = %v, want the apiserver's %v rounded up to a second", stamp, server)
	}
}

func TestClockFollowsAnApiserverStep(t *testing.T) {
	local := clocktesting.NewFakeClock(t0)
	c := New(local)
	answer(c, local, 10*time.Millisecond)
	local.Step(time.Second)
	// The apiserver's clock is set back a minute.
	sent := local.Now()
	local.Step(10 * time.Millisecond)
	date := local.Now().Add(serverAhead - time.Minute).Truncate(time.Second)
	c.Observe(sent, local.Now(), date)
	server := local.Now().Add(serverAhead - time.Minute)
	if now := c.Now(); now.After(server) || server.Sub(now) > time.Second {
		t.Errorf("Now() = %v, want within a second before the apiserver's %v", now, server)
	}
}

// realClock is clock.RealClock, whose readings carry a monotonic reading.
type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) Since(t time.Time) time.Duration { return time.Since(t) }

func TestWrapObservesTheDateHeader(t *testing.T) {
	date := time.Now().Add(serverAhead).UTC().Truncate(time.Second)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Date", date.Format(http.TimeFormat))
	}))
	defer srv.Close()
	c := New(realClock{})
	resp, err := (&http.Client{Transport: c.Wrap(http.DefaultTransport)}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if now := c.Now(); now.Before(date) || now.Sub(date) > 2*time.Second {
		t.Errorf("Now() = %v, want about the Date header's %v", now, date)
	}
}
