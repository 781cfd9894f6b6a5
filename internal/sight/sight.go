// Package sight records when the controller could not reach the apiserver.
//
// A node whose heartbeats the controller cannot see is not necessarily
// silent: while the apiserver is down, or the controller is cut off from it,
// every node looks dead, and the kubelets cannot write their heartbeats
// either. A Monitor wraps the controller's HTTP transport, notices the first
// request that gets no answer, has a probe of the apiserver confirm it, and
// reports the span from that request to the first that is answered after it
// as an Outage, so that the time spent blind is not counted against any node.
//
// Only an apiserver that is not there counts. An apiserver that answers,
// whatever it answers (403, 429, 500, a failing readiness check), is there,
// and its kubelets can write. A request that gets no answer (it timed out,
// its connection was refused or broken, a proxy answered 502, 503 or 504)
// proves nothing alone: a slow list, a slow webhook or a proxy that gives up
// on one request after a while does the same while the apiserver serves
// everything else. It asks for a probe at once, and only if the probe gets
// no answer either does the outage count, from the first request that got
// none. Requests the apiserver answered bound the outage: it never starts
// before the latest of them was sent, as the apiserver was there after that.
// Outages never overlap either: a span already excused is not excused again.
package sight

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Outage is a span of time during which the controller could not reach the
// apiserver: From is when the first request that got no answer was sent (but
// never before a request that was answered, nor before the last outage
// ended), To when the first request sent after From was answered.
type Outage struct {
	From, To time.Time
}

// Duration is how long the outage lasted.
func (o Outage) Duration() time.Duration { return o.To.Sub(o.From) }

// Monitor watches the requests of one client configuration. It is safe for
// concurrent use.
type Monitor struct {
	clock clock.PassiveClock

	// probeNow asks the probe to look at once, after a request got no
	// answer.
	probeNow chan struct{}

	mu    sync.Mutex
	blind bool
	since time.Time
	// suspect is when the first request that got no answer was sent, with
	// no answer to a request sent after it yet; zero when there is none. It
	// waits for the probe to confirm it.
	suspect time.Time
	// lastAnsweredSent is when the latest request the apiserver answered
	// was sent. The apiserver was there at some moment after it, so no
	// outage starts before it, however long a request sent earlier was in
	// flight before it failed.
	lastAnsweredSent time.Time
	// excusedTo is when the last outage ended: no new outage starts before
	// it, so no span is excused twice.
	excusedTo time.Time
	// ended holds the outages that ended and were not taken yet, oldest
	// first; regained is signaled as each is added.
	ended    []Outage
	regained chan struct{}
}

// maxEnded bounds the outages kept for Take: a process that is not the
// leader takes none until it leads. The oldest go first: a node silent
// since before them has long been marked by the leader of the time.
const maxEnded = 256

// New returns a Monitor that times outages on clk.
func New(clk clock.PassiveClock) *Monitor {
	return &Monitor{clock: clk, probeNow: make(chan struct{}, 1), regained: make(chan struct{}, 1)}
}

// Take reports whether the apiserver is out of reach, as a probe that got
// no answer confirmed, with no answer since to a request sent after the
// outage began, and takes the outages that ended since the last Take, each
// once, oldest first. An outage is there to take before the answer that
// ended it is handed to its caller, and as soon as Take reports the
// apiserver reached: whoever decides from what it reads after an outage
// takes the outage first.
func (m *Monitor) Take() (blind bool, ended []Outage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ended, m.ended = m.ended, nil
	return m.blind, ended
}

// Regained receives a value after an outage ends, for Take to take at once;
// an outage that ends while one is unread adds none.
func (m *Monitor) Regained() <-chan struct{} { return m.regained }

// Probe asks the apiserver at url whether it is there, at once, then every
// period until ctx ends, and at once after a request got no answer outside
// an outage, with a client whose transport the Monitor wraps. Only a probe
// that gets no answer either starts an outage. An apiserver that hangs fails
// no request: each waits until it comes back, and then succeeds. The probe's
// own request, given up after a period, starts the outage at most a period
// late. Any answer but a 502, 503 or 504 shows the apiserver there, a
// failing readiness check included: its kubelets can reach it.
func (m *Monitor) Probe(ctx context.Context, c *http.Client, url string, ticker clock.WithTicker, period time.Duration) error {
	t := ticker.NewTicker(period)
	defer t.Stop()
	for {
		m.probe(ctx, c, url, period)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-m.probeNow:
		}
	}
}

func (m *Monitor) probe(ctx context.Context, c *http.Client, url string, timeout time.Duration) {
	sent := m.clock.Now()
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, probeKey{}, true), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	resp, err := c.Do(req)
	if err != nil {
		if !errors.Is(ctx.Err(), context.Canceled) {
			m.confirm(sent)
		}
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if cannotServe(resp.StatusCode) {
		m.confirm(sent)
		return
	}
	m.reached(sent)
}

// probeKey marks the probe's requests, which the probe itself judges.
type probeKey struct{}

// Wrap returns rt with the Monitor watching it; it fits
// rest.Config.Wrap.
func (m *Monitor) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &transport{next: rt, monitor: m}
}

type transport struct {
	next    http.RoundTripper
	monitor *Monitor
}

// RoundTrip implements http.RoundTripper: it sends req on, and records
// whether the apiserver answered.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Context().Value(probeKey{}) != nil {
		return t.next.RoundTrip(req)
	}
	sent := t.monitor.clock.Now()
	resp, err := t.next.RoundTrip(req)
	switch outcomeOf(req.Context(), resp, err) {
	case outcomeUnanswered:
		t.monitor.unanswered(sent)
	case outcomeAnswered:
		t.monitor.reached(sent)
	}
	return resp, err
}

// outcome is what a request's end tells of the apiserver.
type outcome uint8

const (
	// outcomeNothing: the caller canceled it.
	outcomeNothing outcome = iota
	// outcomeAnswered: the apiserver answered, whatever it said.
	outcomeAnswered
	// outcomeUnanswered: no answer in time, a connection that failed, or a
	// proxy or the apiserver itself answering that it cannot serve. The
	// apiserver may be gone, or only this request may have fared badly:
	// how long it was in flight, and what answered it, do not tell which.
	outcomeUnanswered
)

func outcomeOf(ctx context.Context, resp *http.Response, err error) outcome {
	switch {
	case err == nil && cannotServe(resp.StatusCode):
		return outcomeUnanswered
	case err == nil:
		return outcomeAnswered
	case errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled):
		return outcomeNothing
	default:
		return outcomeUnanswered
	}
}

// cannotServe reports whether a status code says that no apiserver could
// serve the request: a proxy's bad gateway or gateway timeout, or an
// apiserver that is unavailable. 500, 403 and 429 come from an apiserver
// that is there.
func cannotServe(code int) bool {
	switch code {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// unanswered records a request sent at sent that got no answer, and asks
// the probe to look at once. The request is only a suspect until the probe
// fails too: a request that fails late (a proxy's 504 after a long wait, a
// list with no deadline cut off) would otherwise date an outage from when it
// was sent, although the apiserver answered what was sent meanwhile.
func (m *Monitor) unanswered(sent time.Time) {
	m.mu.Lock()
	sent = latest(sent, m.lastAnsweredSent)
	if m.suspect.IsZero() || sent.Before(m.suspect) {
		m.suspect = sent
	}
	blind := m.blind
	m.mu.Unlock()
	if blind {
		// The outage is confirmed already and the next probe comes
		// within a period: the many requests that fail during an outage
		// do not each send one more.
		return
	}
	select {
	case m.probeNow <- struct{}{}:
	default:
	}
}

// confirm records a probe sent at sent that found no apiserver: the outage
// counts from then, or from the first request that got no answer before it.
// An answer to a request sent after the probe shows the apiserver there
// since: the probe was held up, not lost, and the next probe decides.
func (m *Monitor) confirm(sent time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastAnsweredSent.After(sent) {
		return
	}
	if !m.suspect.IsZero() && m.suspect.Before(sent) {
		sent = m.suspect
	}
	m.suspect = time.Time{}
	// A span already excused is not excused again, and no outage starts
	// before a request that was answered was sent.
	from := latest(sent, latest(m.excusedTo, m.lastAnsweredSent))
	if !m.blind || from.Before(m.since) {
		m.since = from
	}
	m.blind = true
}

// reached records a request sent at sent that the apiserver answered, and
// ends the outage if there was one. An answer to a request sent before the
// outage began proves nothing of the apiserver now.
func (m *Monitor) reached(sent time.Time) {
	m.mu.Lock()
	m.lastAnsweredSent = latest(m.lastAnsweredSent, sent)
	if !m.suspect.IsZero() && !sent.Before(m.suspect) {
		// An answer to a request sent after the one that got none: that
		// one was slow, or cut off, not lost.
		m.suspect = time.Time{}
	}
	if !m.blind || sent.Before(m.since) {
		m.mu.Unlock()
		return
	}
	outage := Outage{From: m.since, To: m.clock.Now()}
	m.blind, m.excusedTo = false, outage.To
	if len(m.ended) == maxEnded {
		m.ended = m.ended[1:]
	}
	m.ended = append(m.ended, outage)
	m.mu.Unlock()
	select {
	case m.regained <- struct{}{}:
	default:
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
