// Package sight records when the controller could not reach the apiserver.
//
// A node whose heartbeats the controller cannot see is not necessarily
// silent: while the apiserver is down, or the controller is cut off from it,
// every node looks dead, and the kubelets cannot write their heartbeats
// either. A Monitor wraps the controller's HTTP transport, notices the first
// request that fails for want of an apiserver and the first that succeeds
// after it, and reports that span as an Outage, so that the time spent blind
// is not counted against any node.
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

	mu        sync.Mutex
	blind     bool
	since     time.Time
	listeners []func(Outage)
}

// New returns a Monitor that times outages on clk.
func New(clk clock.PassiveClock) *Monitor {
	return &Monitor{clock: clk}
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

// Probe asks the apiserver at url whether it is ready, every period until ctx
// ends, with a client whose transport the Monitor wraps. An apiserver that
// hangs fails no request: each waits until it comes back, and then succeeds.
// The probe's own request, given up after a period, starts the outage at
// most a period late; an answer other than 200 counts as no answer.
func (m *Monitor) Probe(ctx context.Context, c *http.Client, url string, ticker clock.WithTicker, period time.Duration) error {
	t := ticker.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			m.probe(ctx, c, url, period)
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
			m.lost(sent)
		}
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		m.lost(sent)
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
	switch {
	case unreachable(req.Context(), resp, err):
		t.monitor.lost(sent)
	case err == nil:
		t.monitor.reached(sent)
	}
	return resp, err
}

// unreachable tells whether a request's outcome shows the apiserver out of
// reach: the connection failed, or a proxy or the apiserver itself answered
// that it cannot serve. A request that timed out counts; one its caller
// canceled tells nothing.
func unreachable(ctx context.Context, resp *http.Response, err error) bool {
	if err != nil {
		return !errors.Is(ctx.Err(), context.Canceled) && !errors.Is(err, context.Canceled)
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// lost records a request sent at sent that found no apiserver.
func (m *Monitor) lost(sent time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.blind || sent.Before(m.since) {
		m.since = sent
	}
	m.blind = true
}

// reached records a request sent at sent that the apiserver answered, and
// ends the outage if there was one. An answer to a request sent before the
// outage began proves nothing of the apiserver now.
func (m *Monitor) reached(sent time.Time) {
	m.mu.Lock()
	if !m.blind || sent.Before(m.since) {
		m.mu.Unlock()
		return
	}
	outage := Outage{From: m.since, To: m.clock.Now()}
	m.blind = false
	listeners := m.listeners
	m.mu.Unlock()
	for _, f := range listeners {
		f(outage)
	}
}
