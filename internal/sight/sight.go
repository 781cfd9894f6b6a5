// Package sight records when the controller could not reach the apiserver.
//
// A node whose heartbeats the controller cannot see is not necessarily
// silent: while the apiserver is down, or the controller is cut off from it,
// every node looks dead, and the kubelets cannot write their heartbeats
// either. A Monitor wraps the controller's HTTP transport, notices the first
// request that fails for want of an apiserver and the first that succeeds
// after it, and reports that span as an Outage, so that the time spent blind
// is not counted against any node.
//
// Only an apiserver that is not there counts: a connection refused or
// broken, a 502, 503 or 504, or a /readyz probe that gets no answer. An
// apiserver that answers, whatever it answers (403, 429, 500, a failing
// readiness check), is there, and its kubelets can write. One request that
// times out proves nothing alone, as a slow list or a slow webhook would
// do the same: it asks for a probe at once, and only if the probe gets no
// answer either does the outage count, from the first request that timed
// out. Outages never overlap: a span already excused is not excused again.
package sight

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Outage is a span of time during which the controller could not reach the
// apiserver: From is when the first failed request was sent, To when the
// first request after it succeeded.
type Outage struct {
	From, To time.Time
}

// Duration is how long the outage lasted.
func (o Outage) Duration() time.Duration { return o.To.Sub(o.From) }

// Monitor watches the requests of one client configuration. It is safe for
// concurrent use.
type Monitor struct {
	clock clock.PassiveClock

	// probeNow asks the probe to look at once, after a request timed out.
	probeNow chan struct{}

	mu    sync.Mutex
	blind bool
	since time.Time
	// suspect is when the first request that timed out was sent, with no
	// answer to a request sent after it yet; zero when there is none.
	suspect time.Time
	// excusedTo is when the last outage ended: no new outage starts before
	// it, so no span is excused twice.
	excusedTo time.Time
	listeners []func(Outage)
}

// New returns a Monitor that times outages on clk.
func New(clk clock.PassiveClock) *Monitor {
	return &Monitor{clock: clk, probeNow: make(chan struct{}, 1)}
}

// OnRegained registers f to be called at the end of each outage, with the
// outage, before the response that ended it is handed to its caller: by the
// time any code reads from the apiserver again, f has run.
func (m *Monitor) OnRegained(f func(Outage)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.listeners = append(m.listeners, f)
}

// Blind reports whether the last request the Monitor saw end had failed for
// want of an apiserver, and since when.
func (m *Monitor) Blind() (bool, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.blind, m.since
}

// Probe asks the apiserver at url whether it is there, at once, then every
// period until ctx ends, and at once after a request timed out, with a client whose
// transport the Monitor wraps. An apiserver that hangs fails no request:
// each waits until it comes back, and then succeeds. The probe's own
// request, given up after a period, starts the outage at most a period
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
	case outcomeGone:
		t.monitor.lost(sent)
	case outcomeTimedOut:
		t.monitor.timedOut(sent)
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
	// outcomeTimedOut: no answer in time; the apiserver may be slow, or gone.
	outcomeTimedOut
	// outcomeGone: the connection failed, or a proxy or the apiserver
	// itself answered that it cannot serve.
	outcomeGone
)

func outcomeOf(ctx context.Context, resp *http.Response, err error) outcome {
	switch {
	case err == nil && cannotServe(resp.StatusCode):
		return outcomeGone
	case err == nil:
		return outcomeAnswered
	case errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled):
		return outcomeNothing
	case timeout(err):
		return outcomeTimedOut
	default:
		return outcomeGone
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

// timeout reports whether err is a request that ran out of time.
func timeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// lost records a request sent at sent that found no apiserver.
func (m *Monitor) lost(sent time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lostLocked(sent)
}

func (m *Monitor) lostLocked(sent time.Time) {
	// A span already excused is not excused again.
	if sent.Before(m.excusedTo) {
		sent = m.excusedTo
	}
	if !m.blind || sent.Before(m.since) {
		m.since = sent
	}
	m.blind = true
}

// timedOut records a request sent at sent that got no answer in time, and
// asks the probe to look at once.
func (m *Monitor) timedOut(sent time.Time) {
	m.mu.Lock()
	if m.suspect.IsZero() || sent.Before(m.suspect) {
		m.suspect = sent
	}
	m.mu.Unlock()
	select {
	case m.probeNow <- struct{}{}:
	default:
	}
}

// confirm records a probe sent at sent that found no apiserver: the outage
// counts from then, or from the first request that timed out before it.
func (m *Monitor) confirm(sent time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.suspect.IsZero() && m.suspect.Before(sent) {
		sent = m.suspect
	}
	m.suspect = time.Time{}
	m.lostLocked(sent)
}

// reached records a request sent at sent that the apiserver answered, and
// ends the outage if there was one. An answer to a request sent before the
// outage began proves nothing of the apiserver now.
func (m *Monitor) reached(sent time.Time) {
	m.mu.Lock()
	if !m.suspect.IsZero() && !sent.Before(m.suspect) {
		// An answer to a request sent after the one that timed out: that
		// one was slow, not lost.
		m.suspect = time.Time{}
	}
	if !m.blind || sent.Before(m.since) {
		m.mu.Unlock()
		return
	}
	outage := Outage{From: m.since, To: m.clock.Now()}
	m.blind, m.excusedTo = false, outage.To
	listeners := m.listeners
	m.mu.Unlock()
	for _, f := range listeners {
		f(outage)
	}
}
