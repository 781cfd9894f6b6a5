package leadergate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
)

// ErrNotLeader is the error of every request a Gate refuses.
var ErrNotLeader = errors.New("this process's leader election Lease is not valid by its own clock")

// Gate tells whether this process holds its leader election Lease. It is
// safe for concurrent use.
//
// The Lease is ours until validFor after the last renewal was sent. Another
// replica takes it only once it has seen the same record for a whole lease
// duration, counted on its own clock from when it first saw that record:
// no earlier than the apiserver stored it, itself no earlier than the
// renewal was sent. Had both clocks the same rate, the Lease would be ours
// until the send plus the lease duration. validFor, the renew deadline, is
// shorter: the difference is the margin left for a clock here that runs
// slow, or one there that runs fast. The send counts, not the answer, which
// may come back late. The clock must be monotonic (clock.RealClock is): a
// step of the wall clock must not lengthen the Lease. A pause that the
// monotonic clock does not count either, such as a suspend of the whole
// host, goes unseen.
type Gate struct {
	clock    clock.PassiveClock
	validFor time.Duration

	mu sync.Mutex
	// until is when the Lease stops being ours; zero while it is not.
	until time.Time
	// ended is when the Lease last stopped being ours, once closed; zero
	// while it is ours, or never was.
	ended time.Time
	// record is the last record this process wrote to the Lease, as the
	// other replicas compare records: JSON, with times to the second.
	record []byte
	// othersRenewal is the renew time of the last record read that named
	// another holder, or none: when the leader before this process last
	// renewed, or gave the Lease up.
	othersRenewal time.Time
	// unled is the span from othersRenewal to when this process took the
	// Lease: the time no leader watched the cluster, as far as the Lease
	// shows.
	unled struct{ from, to time.Time }
}

// New returns a Gate that holds the Lease valid for validFor after each
// renewal was sent, timed on clk. It stays closed until the lock first takes
// the Lease. validFor must be shorter than the lease duration of every
// replica; the renew deadline is.
func New(clk clock.PassiveClock, validFor time.Duration) *Gate {
	return &Gate{clock: clk, validFor: validFor}
}

// Valid reports whether the Lease is this process's at now, a reading of
// the Gate's clock.
func (g *Gate) Valid(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return now.Before(g.until)
}

// Lapsed returns how long, at now, the Lease has not been this process's
// since it last was: zero while it is, and for a process that never held
// it. A leader whose Lease has lapsed for long and that still runs is stuck:
// client-go's elector ends the process's leadership once a renewal has
// failed for a renew deadline.
func (g *Gate) Lapsed(now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case !g.until.IsZero():
		return max(0, now.Sub(g.until))
	case !g.ended.IsZero():
		return max(0, now.Sub(g.ended))
	}
	return 0
}

// renewed records a write of rec to the Lease, sent at sent, that
// succeeded. The other replicas tell a renewal from the one before it only
// by a change in the record, and client-go compares records as JSON, whose
// times are whole seconds: a renewal in the same second as the one before
// it goes unseen, and leaves their countdown, and so the Lease's end,
// where it was.
func (g *Gate) renewed(sent time.Time, rec resourcelock.LeaderElectionRecord) {
	raw, err := json.Marshal(rec)
	if err != nil {
		// Unreachable for this plain struct; a record that cannot be
		// compared is taken for a new one.
		raw = nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if raw != nil && bytes.Equal(raw, g.record) {
		return
	}
	g.record = raw
	g.until, g.ended = sent.Add(g.validFor), time.Time{}
}

// Unled returns the span from the last renewal (or release) of the leader
// before this process to when this process took the Lease, and whether it
// took the Lease from another. No leader watched the cluster in that span:
// a leader lost to an apiserver outage stops renewing as the outage
// begins, and its successor takes over once the apiserver answers, without
// having seen the outage itself. The span's start is on the old leader's
// clock, its end on this process's.
func (g *Gate) Unled() (from, to time.Time, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.unled.from, g.unled.to, !g.unled.from.IsZero()
}

// neverHeld reports whether this process has not held the Lease yet.
func (g *Gate) neverHeld() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.record == nil
}

// saw records a record read from the Lease.
func (g *Gate) saw(rec *resourcelock.LeaderElectionRecord, self string) {
	if rec.HolderIdentity == self {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.othersRenewal = rec.RenewTime.Time
}

// took records that this process took the Lease at sent, from the leader
// it last saw hold it, if any.
func (g *Gate) took(sent time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.othersRenewal.IsZero() && g.othersRenewal.Before(sent) {
		g.unled.from, g.unled.to = g.othersRenewal, sent
	}
}

// close ends the Lease now, or when it ended if that was earlier.
func (g *Gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.until.IsZero() {
		return
	}
	g.ended = g.until
	if now := g.clock.Now(); now.Before(g.until) {
		g.ended = now
	}
	g.until = time.Time{}
}

// Lock returns l with every write it makes to the Lease told to the Gate.
// The client l writes with must not go through the Gate's transport.
func (g *Gate) Lock(l resourcelock.Interface) resourcelock.Interface {
	return &lock{Interface: l, gate: g}
}

// lock is a resourcelock.Interface whose writes open and close a Gate.
type lock struct {
	resourcelock.Interface
	gate *Gate
}

// Get closes the Gate when the Lease names another holder: whatever this
// process's clock says, the Lease is no longer its own.
func (l *lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil && rec != nil {
		l.gate.saw(rec, l.Identity())
		if rec.HolderIdentity != l.Identity() {
			l.gate.close()
		}
	}
	return rec, raw, err
}

// Create opens the Gate when it takes the Lease.
func (l *lock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, rec, l.Interface.Create)
}

// Update opens the Gate, or keeps it open, when it takes or renews the
// Lease, and closes it when it gives the Lease up.
func (l *lock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, rec, l.Interface.Update)
}

func (l *lock) write(ctx context.Context, rec resourcelock.LeaderElectionRecord,
	write func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	if rec.HolderIdentity != l.Identity() {
		// The elector releases the Lease by writing a record with no
		// holder: nothing sent from here on is covered, whether or not
		// the release gets through.
		l.gate.close()
		return write(ctx, rec)
	}
	sent := l.gate.clock.Now()
	taking := l.gate.neverHeld()
	if err := write(ctx, rec); err != nil {
		return err
	}
	if taking {
		l.gate.took(sent)
	}
	l.gate.renewed(sent, rec)
	return nil
}

// Wrap returns rt refusing, with ErrNotLeader, every request that may
// change something while the Lease is not this process's; it suits
// rest.Config.Wrap. Reads and watches always go through.
func (g *Gate) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &transport{next: rt, gate: g}
}

type transport struct {
	next http.RoundTripper
	gate *Gate
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if writes(req) && !t.gate.Valid(t.gate.clock.Now()) {
		// A RoundTripper closes the body even when it sends nothing.
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("refused %s %s: %w", req.Method, req.URL.Path, ErrNotLeader)
	}
	return t.next.RoundTrip(req)
}

// writes reports whether req may change something on the apiserver. The
// review APIs of authentication.k8s.io and authorization.k8s.io are sent
// with POST, but answer a question and store nothing: the metrics endpoint
// asks them about every scrape, and a standby's metrics must still be
// served.
func writes(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return !strings.Contains(req.URL.Path, "/apis/authentication.k8s.io/") &&
		!strings.Contains(req.URL.Path, "/apis/authorization.k8s.io/")
}
