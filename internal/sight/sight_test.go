package sight

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// recorded is a Monitor on a fake clock at t0, with the outages taken from
// it.
type recorded struct {
	*Monitor
	clock *clocktesting.FakeClock
	taken []Outage
}

func newRecorded() *recorded {
	r := &recorded{clock: clocktesting.NewFakeClock(t0)}
	r.Monitor = New(r.clock)
	return r
}

// blindSince reports whether m is blind, and since when.
func blindSince(m *Monitor) (bool, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.blind, m.since
}

// outages returns every outage that ended so far, oldest first.
func (r *recorded) outages() []Outage {
	_, ended := r.Take()
	r.taken = append(r.taken, ended...)
	return r.taken
}

// send sends one request through the monitored transport rt.
func send(rt http.RoundTripper) {
	req, _ := http.NewRequest(http.MethodGet, "https://apiserver/api", nil)
	if resp, err := rt.RoundTrip(req); err == nil {
		_ = resp.Body.Close()
	}
}

// step is what the next request meets: an error, or a response code.
type step struct {
	err  error
	code int
	// advance moves the clock while the request is in flight.
	advance time.Duration
	// probe sends the probe's request in place of one of the controller's.
	probe bool
}

// reply is what a transport hands back for st.
func (st step) reply() (*http.Response, error) {
	if st.err != nil {
		return nil, st.err
	}
	return &http.Response{StatusCode: st.code, Body: http.NoBody}, nil
}

type scripted struct {
	clock *clocktesting.FakeClock
	steps []step
}

func (s *scripted) RoundTrip(*http.Request) (*http.Response, error) {
	st := s.steps[0]
	s.steps = s.steps[1:]
	s.clock.Step(st.advance)
	return st.reply()
}

// probeWith runs one probe of m through rt, which the Monitor wraps.
func probeWith(m *Monitor, rt http.RoundTripper) {
	m.probe(context.Background(), &http.Client{Transport: rt}, "https://apiserver/readyz", time.Minute)
}

// probeMeets runs one probe of m that meets st.
func probeMeets(m *recorded, st step) {
	probeWith(m.Monitor, m.Wrap(roundTripperFunc(func(*http.Request) (*http.Response, error) {
		m.clock.Step(st.advance)
		return st.reply()
	})))
}

func TestMonitorReportsOutages(t *testing.T) {
	refused := &netError{syscall.ECONNREFUSED}
	cases := []struct {
		name  string
		steps []step
		// gap is the clock step between requests.
		gap  time.Duration
		want []Outage
	}{{
		name:  "answers only, refusals and errors among them",
		steps: []step{{code: 200}, {code: 404}, {code: 409}, {code: 500}, {code: 403}, {code: 429}, {code: 401}},
		gap:   time.Second,
	}, {
		name:  "refused connections, the probe refused too, then an answer",
		steps: []step{{code: 200}, {err: refused}, {err: refused, probe: true}, {err: refused}, {code: 200}},
		gap:   time.Second,
		want:  []Outage{{From: t0.Add(time.Second), To: t0.Add(4 * time.Second)}},
	}, {
		name:  "a refused connection whose probe is answered: no outage",
		steps: []step{{code: 200}, {err: refused}, {code: 200, probe: true}, {code: 200}},
		gap:   time.Second,
	}, {
		name: "an apiserver that cannot serve",
		steps: []step{{code: http.StatusServiceUnavailable}, {code: http.StatusGatewayTimeout},
			{code: http.StatusServiceUnavailable, probe: true}, {code: 201}},
		gap:  time.Second,
		want: []Outage{{From: t0, To: t0.Add(3 * time.Second)}},
	}, {
		name:  "a gateway timeout after 40s in flight whose probe is answered: no outage",
		steps: []step{{code: http.StatusGatewayTimeout, advance: 40 * time.Second}, {code: 200, probe: true}, {code: 200}},
		gap:   time.Second,
	}, {
		name: "a gateway timeout after 40s in flight whose probe fails too: from the request, as nothing was answered",
		steps: []step{{code: http.StatusGatewayTimeout, advance: 40 * time.Second},
			{code: http.StatusGatewayTimeout, probe: true}, {code: 200}},
		gap:  time.Second,
		want: []Outage{{From: t0, To: t0.Add(42 * time.Second)}},
	}, {
		name:  "one slow request that timed out, then an answer: no outage",
		steps: []step{{err: context.DeadlineExceeded, advance: 30 * time.Second}, {code: 200}},
		gap:   time.Second,
	}, {
		name:  "a network timeout alone is no outage either",
		steps: []step{{err: &netTimeout{}, advance: 10 * time.Second}, {code: 200}, {code: 200}},
		gap:   time.Second,
	}, {
		name:  "a canceled request tells nothing",
		steps: []step{{err: context.Canceled}, {code: 200}},
		gap:   time.Second,
	}, {
		name: "two outages",
		steps: []step{{err: refused}, {err: refused, probe: true}, {code: 200},
			{err: refused}, {err: refused, probe: true}, {code: 200}},
		gap: time.Second,
		want: []Outage{
			{From: t0, To: t0.Add(2 * time.Second)},
			{From: t0.Add(3 * time.Second), To: t0.Add(5 * time.Second)},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newRecorded()
			rt := m.Wrap(&scripted{clock: m.clock, steps: tc.steps})
			for _, st := range tc.steps {
				if st.probe {
					probeWith(m.Monitor, rt)
				} else {
					send(rt)
				}
				m.clock.Step(tc.gap)
			}
			got := m.outages()
			if len(got) != len(tc.want) {
				t.Fatalf("outages = %v, want %v", got, tc.want)
			}
			for i := range got {
				if !got[i].From.Equal(tc.want[i].From) || !got[i].To.Equal(tc.want[i].To) {
					t.Errorf("outage %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestAnswerSentBeforeTheOutageDoesNotEndIt: a request in flight when the
// apiserver went away may still come back answered; that says nothing of
// the apiserver now.
func TestAnswerSentBeforeTheOutageDoesNotEndIt(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	m := New(clk)
	slow, started := make(chan struct{}), make(chan struct{})
	inner := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Path == "/slow" {
			close(started)
			<-slow
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		}
		return nil, &netError{syscall.ECONNREFUSED}
	})
	rt := m.Wrap(inner)
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest(http.MethodGet, "https://apiserver/slow", nil)
		if resp, err := rt.RoundTrip(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	// The slow request is sent at t0, the failing one a second later.
	<-started
	clk.Step(time.Second)
	req, _ := http.NewRequest(http.MethodGet, "https://apiserver/fast", nil)
	if resp, err := rt.RoundTrip(req); err == nil {
		_ = resp.Body.Close()
		t.Fatal("want the scripted error")
	}
	probeWith(m, rt)
	close(slow)
	<-done
	if blind, since := blindSince(m); !blind || !since.Equal(t0.Add(time.Second)) {
		t.Errorf("Blind() = %v, %v; want true since %v", blind, since, t0.Add(time.Second))
	}
	if _, ended := m.Take(); len(ended) != 0 {
		t.Errorf("outage ended by an answer to a request sent before it")
	}
}

// TestTimeoutConfirmedByTheProbe: a request that timed out asks for a probe
// at once; when the probe gets no answer either, the outage counts from the
// request that timed out, and the first answer after it ends it.
func TestTimeoutConfirmedByTheProbe(t *testing.T) {
	m := newRecorded()
	clk := m.clock
	rt := m.Wrap(&scripted{clock: clk, steps: []step{{err: context.DeadlineExceeded, advance: 5 * time.Second}, {code: 200}}})
	send(rt)
	if blind, _ := blindSince(m.Monitor); blind {
		t.Fatal("blind after one request timed out")
	}
	select {
	case <-m.probeNow:
	default:
		t.Fatal("a timed-out request did not ask for a probe")
	}
	clk.Step(time.Second)
	m.confirm(clk.Now())
	if blind, since := blindSince(m.Monitor); !blind || !since.Equal(t0) {
		t.Fatalf("Blind() = %v, %v; want true since %v", blind, since, t0)
	}
	clk.Step(time.Second)
	send(rt)
	if want := (Outage{From: t0, To: t0.Add(7 * time.Second)}); len(m.outages()) != 1 || m.outages()[0] != want {
		t.Fatalf("outages = %v, want [%v]", m.outages(), want)
	}
}

// TestSpanExcusedOnce: a request sent during an outage that fails after
// the outage ended starts a new outage, but not before the end of the old
// one: no span is excused twice.
func TestSpanExcusedOnce(t *testing.T) {
	m := newRecorded()
	clk := m.clock
	m.unanswered(t0)
	m.confirm(t0)
	// The request that ends the outage was sent at t0+5s, and answered at
	// t0+10s.
	clk.Step(10 * time.Second)
	m.reached(t0.Add(5 * time.Second))
	// A request sent at t0+2s, in the first outage, comes back refused
	// now, and the probe confirms it; the next answer comes 3s later.
	m.unanswered(t0.Add(2 * time.Second))
	m.confirm(clk.Now())
	clk.Step(3 * time.Second)
	m.reached(clk.Now())
	want := []Outage{{From: t0, To: t0.Add(10 * time.Second)}, {From: t0.Add(10 * time.Second), To: t0.Add(13 * time.Second)}}
	if got := m.outages(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("outages = %v, want %v", got, want)
	}
}

// netTimeout is a network error that ran out of time.
type netTimeout struct{}

func (netTimeout) Error() string   { return "i/o timeout" }
func (netTimeout) Timeout() bool   { return true }
func (netTimeout) Temporary() bool { return true }

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// netError is a connection error as the dialer returns it.
type netError struct{ errno syscall.Errno }

func (e *netError) Error() string { return "dial tcp 127.0.0.1:6443: " + e.errno.Error() }
func (e *netError) Unwrap() error { return e.errno }

// TestProbeNoticesAHungApiserver: a server that answers nothing fails no
// request until it comes back; the probe's own request, given up, starts
// the outage, and the first answer after it ends it.
func TestProbeNoticesAHungApiserver(t *testing.T) {
	var state atomic.Int32 // 0 ready, 1 unavailable, 2 hung, 3 a check failing
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch state.Load() {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 3:
			w.WriteHeader(http.StatusInternalServerError)
		case 2:
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	defer close(release)

	m := New(clock.RealClock{})
	c := &http.Client{Transport: m.Wrap(http.DefaultTransport)}
	const timeout = 50 * time.Millisecond

	m.probe(t.Context(), c, srv.URL, timeout)
	if blind, _ := blindSince(m); blind {
		t.Fatal("blind after a ready answer")
	}
	state.Store(2)
	m.probe(t.Context(), c, srv.URL, timeout)
	if blind, _ := blindSince(m); !blind {
		t.Fatal("not blind after a probe that got no answer")
	}
	state.Store(1)
	m.probe(t.Context(), c, srv.URL, timeout)
	if blind, outages := m.Take(); !blind || len(outages) != 0 {
		t.Fatalf("an apiserver that is unavailable ended the outage: %v", outages)
	}
	state.Store(0)
	m.probe(t.Context(), c, srv.URL, timeout)
	blind, outages := m.Take()
	if blind || len(outages) != 1 {
		t.Fatalf("a ready answer did not end the outage: blind %v, outages %v", blind, outages)
	}
	if d := outages[0].Duration(); d < timeout {
		t.Errorf("outage of %v, shorter than the probe that noticed it", d)
	}
	// A failing readiness check, as a proxy or the apiserver answers it,
	// comes from an apiserver that is there.
	state.Store(3)
	m.probe(t.Context(), c, srv.URL, timeout)
	if blind, _ := blindSince(m); blind {
		t.Fatal("blind after a readiness check answered 500")
	}
}

// gate holds each request sent through it until the test answers it, so
// that requests can overlap on the fake clock.
type gate chan chan step

func (g gate) RoundTrip(*http.Request) (*http.Response, error) {
	reply := make(chan step)
	g <- reply
	return (<-reply).reply()
}

// sendHeld sends a request through rt, whose inner transport is g, and
// returns once the Monitor has taken its send time, with a function that
// answers it with st and returns once the Monitor has seen the answer.
func sendHeld(rt http.RoundTripper, g gate) func(st step) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		send(rt)
	}()
	reply := <-g
	return func(st step) {
		reply <- st
		<-done
	}
}

// probeAsked reports whether the Monitor asked for a probe at once, and
// takes the ask.
func probeAsked(m *Monitor) bool {
	select {
	case <-m.probeNow:
		return true
	default:
		return false
	}
}

func excused(outages []Outage) time.Duration {
	var d time.Duration
	for _, o := range outages {
		d += o.Duration()
	}
	return d
}

// TestLateFailureWhileOthersAreAnswered: a list held by a proxy for 40s,
// then answered 504, while the apiserver answered everything else sent in
// that span, is no outage; were the probe to fail as it came back, the
// outage would still start no earlier than the last answered send.
func TestLateFailureWhileOthersAreAnswered(t *testing.T) {
	cases := []struct {
		name  string
		probe step
		// wantSince is when the Monitor is blind from after the probe;
		// zero for not blind.
		wantSince time.Time
		want      []Outage
	}{{
		name:  "the probe is answered: nothing excused",
		probe: step{code: 200},
	}, {
		name:      "the probe fails: excused from the last answered send",
		probe:     step{code: http.StatusServiceUnavailable},
		wantSince: t0.Add(35 * time.Second),
		want:      []Outage{{From: t0.Add(35 * time.Second), To: t0.Add(45 * time.Second)}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newRecorded()
			clk := m.clock
			g := make(gate)
			rt := m.Wrap(g)
			list := sendHeld(rt, g)
			for range 7 {
				clk.Step(5 * time.Second)
				sendHeld(rt, g)(step{code: 200})
			}
			clk.Step(5 * time.Second)
			list(step{code: http.StatusGatewayTimeout})
			if blind, since := blindSince(m.Monitor); blind {
				t.Fatalf("blind since %v on one late failure, before the probe looked", since)
			}
			if !probeAsked(m.Monitor) {
				t.Fatal("a request that got no answer did not ask for a probe")
			}
			probeMeets(m, tc.probe)
			blind, since := blindSince(m.Monitor)
			if blind != !tc.wantSince.IsZero() || blind && !since.Equal(tc.wantSince) {
				t.Fatalf("Blind() = %v, %v; want since %v", blind, since, tc.wantSince)
			}
			clk.Step(5 * time.Second)
			sendHeld(rt, g)(step{code: 200})
			if got := m.outages(); len(got) != len(tc.want) || len(got) == 1 && got[0] != tc.want[0] {
				t.Fatalf("outages = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRepeatedLateFailuresExcuseOnlyRealOutages: a list that a proxy cuts
// off with a 504 after 40s in flight, again and again after a reflector's
// backoff, while the probe every period is answered, excuses nothing; the
// one real outage among the cycles is excused, and no more than it.
func TestRepeatedLateFailuresExcuseOnlyRealOutages(t *testing.T) {
	const (
		period = 5 * time.Second
		// cutOff is how long the proxy holds the list before its 504.
		cutOff = 40 * time.Second
		cycles = 10
		// realCycle is the cycle in which the apiserver goes away for
		// real, from 12s into it to 27s.
		realCycle = 4
	)
	m := newRecorded()
	clk := m.clock
	g := make(gate)
	rt := m.Wrap(g)
	var down Outage
	up := func() bool { return clk.Now().Before(down.From) || !clk.Now().Before(down.To) }
	probe := func() {
		if up() {
			probeMeets(m, step{code: 200})
		} else {
			probeMeets(m, step{err: &netError{syscall.ECONNREFUSED}})
		}
	}
	backoff := 800 * time.Millisecond
	for c := range cycles {
		if c == realCycle {
			down = Outage{From: clk.Now().Add(12 * time.Second), To: clk.Now().Add(27 * time.Second)}
		}
		list := sendHeld(rt, g)
		for range cutOff / period {
			clk.Step(period)
			probe()
		}
		list(step{code: http.StatusGatewayTimeout})
		if probeAsked(m.Monitor) {
			probe()
		}
		clk.Step(backoff)
		backoff = min(2*backoff, 30*time.Second)
	}
	outage := down.Duration()
	if got := excused(m.outages()); got < outage-period || got > outage+period {
		t.Fatalf("excused %v over %d cycles (outages %v), want the real outage's %v within a probe period",
			got, cycles, m.outages(), outage)
	}
	if blind, since := blindSince(m.Monitor); blind {
		t.Fatalf("blind since %v at the end", since)
	}
}

// TestRealOutageExcusedFromItsStart: when every request fails and the
// probe fails too, the outage counts from the first request that got no
// answer, one still in flight when the apiserver went away included.
func TestRealOutageExcusedFromItsStart(t *testing.T) {
	refused := step{err: &netError{syscall.ECONNREFUSED}}
	m := newRecorded()
	clk := m.clock
	g := make(gate)
	rt := m.Wrap(g)
	sendHeld(rt, g)(step{code: 200})
	clk.Step(5 * time.Second)
	sendHeld(rt, g)(step{code: 200})
	clk.Step(3 * time.Second)
	list := sendHeld(rt, g) // sent at t0+8s
	clk.Step(2 * time.Second)
	sendHeld(rt, g)(refused) // sent at t0+10s
	if !probeAsked(m.Monitor) {
		t.Fatal("a refused request did not ask for a probe")
	}
	probeMeets(m, refused)
	if blind, since := blindSince(m.Monitor); !blind || !since.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("Blind() = %v, %v; want true since %v", blind, since, t0.Add(10*time.Second))
	}
	clk.Step(2 * time.Second)
	list(step{err: syscall.ECONNRESET})
	if probeAsked(m.Monitor) {
		t.Error("a request that failed during a confirmed outage asked for one more probe")
	}
	for range 5 {
		clk.Step(5 * time.Second)
		sendHeld(rt, g)(refused)
		probeMeets(m, refused)
	}
	if blind, since := blindSince(m.Monitor); !blind || !since.Equal(t0.Add(8*time.Second)) {
		t.Fatalf("Blind() = %v, %v; want true since %v, the list's send", blind, since, t0.Add(8*time.Second))
	}
	clk.Step(5 * time.Second)
	probeMeets(m, step{code: 200})
	want := Outage{From: t0.Add(8 * time.Second), To: t0.Add(42 * time.Second)}
	if len(m.outages()) != 1 || m.outages()[0] != want {
		t.Fatalf("outages = %v, want [%v]", m.outages(), want)
	}
}

// TestProbeHeldUpPastAnAnswerConfirmsNothing: a probe that gets no answer
// while a request sent after it was answered shows only that the probe was
// held up.
func TestProbeHeldUpPastAnAnswerConfirmsNothing(t *testing.T) {
	m := newRecorded()
	clk := m.clock
	clk.Step(5 * time.Second)
	m.reached(t0.Add(2 * time.Second))
	m.confirm(t0)
	if blind, since := blindSince(m.Monitor); blind {
		t.Fatalf("blind since %v on a probe sent before an answered request", since)
	}
}

// TestTakeHandsEachOutageOnce: an outage is there to take, and Regained
// says so, as soon as the answer that ended it is in; each is taken once,
// oldest first, and a process that takes none keeps only the latest
// maxEnded.
func TestTakeHandsEachOutageOnce(t *testing.T) {
	m := newRecorded()
	for i := range maxEnded + 2 {
		m.unanswered(m.clock.Now())
		m.confirm(m.clock.Now())
		m.clock.Step(time.Second)
		m.reached(m.clock.Now())
		if i == 0 {
			select {
			case <-m.Regained():
			default:
				t.Fatal("an outage ended and Regained did not say so")
			}
		}
		m.clock.Step(time.Second)
	}
	blind, ended := m.Take()
	if blind || len(ended) != maxEnded {
		t.Fatalf("Take() = %v, %d outages; want false, %d", blind, len(ended), maxEnded)
	}
	if want := (Outage{From: t0.Add(4 * time.Second), To: t0.Add(5 * time.Second)}); ended[0] != want {
		t.Fatalf("oldest outage kept = %v, want %v: the two oldest go", ended[0], want)
	}
	if _, again := m.Take(); len(again) != 0 {
		t.Fatalf("outages taken twice: %v", again)
	}
}
