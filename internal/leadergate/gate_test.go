package leadergate

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	me       = "replica-a"
	validFor = 2 * time.Second
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// fakeLock is a Lease that answers from memory. Each write takes took on
// the clock, and fails with fail when it is set.
type fakeLock struct {
	clock  *clocktesting.FakeClock
	took   time.Duration
	fail   error
	holder string
	// renewed is the renew time the record read shows.
	renewed time.Time
	writes  int
}

func (f *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{HolderIdentity: f.holder, RenewTime: metav1.NewTime(f.renewed)}, nil, nil
}

func (f *fakeLock) Create(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	return f.write(rec)
}

func (f *fakeLock) Update(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	return f.write(rec)
}

func (f *fakeLock) write(rec resourcelock.LeaderElectionRecord) error {
	f.clock.Step(f.took)
	f.writes++
	if f.fail != nil {
		return f.fail
	}
	f.holder = rec.HolderIdentity
	return nil
}

func (f *fakeLock) RecordEvent(string) {}
func (f *fakeLock) Identity() string   { return me }
func (f *fakeLock) Describe() string   { return "default/test" }

// step is one thing that happens to the lock: a write, a read, or time
// passing.
type step func(t *testing.T, l resourcelock.Interface, f *fakeLock)

// renew writes a record naming this process, renewed at the clock's second.
func renew(t *testing.T, l resourcelock.Interface, f *fakeLock) {
	t.Helper()
	now := metav1.NewTime(f.clock.Now())
	_ = l.Update(context.Background(), resourcelock.LeaderElectionRecord{
		HolderIdentity: me, LeaseDurationSeconds: 3, AcquireTime: metav1.NewTime(t0), RenewTime: now,
	})
}

func create(t *testing.T, l resourcelock.Interface, f *fakeLock) {
	t.Helper()
	now := metav1.NewTime(f.clock.Now())
	if err := l.Create(context.Background(), resourcelock.LeaderElectionRecord{
		HolderIdentity: me, LeaseDurationSeconds: 3, AcquireTime: now, RenewTime: now,
	}); err != nil {
		t.Fatalf("create: %v", err)
	}
}

func release(t *testing.T, l resourcelock.Interface, f *fakeLock) {
	t.Helper()
	now := metav1.NewTime(f.clock.Now())
	if err := l.Update(context.Background(), resourcelock.LeaderElectionRecord{
		LeaseDurationSeconds: 1, AcquireTime: now, RenewTime: now,
	}); err != nil {
		t.Fatalf("release: %v", err)
	}
}

func get(t *testing.T, l resourcelock.Interface, _ *fakeLock) {
	t.Helper()
	if _, _, err := l.Get(context.Background()); err != nil {
		t.Fatalf("get: %v", err)
	}
}

func wait(d time.Duration) step {
	return func(_ *testing.T, _ resourcelock.Interface, f *fakeLock) { f.clock.Step(d) }
}

func failing(err error) step {
	return func(_ *testing.T, _ resourcelock.Interface, f *fakeLock) { f.fail = err }
}

func taking(d time.Duration) step {
	return func(_ *testing.T, _ resourcelock.Interface, f *fakeLock) { f.took = d }
}

func takenBy(holder string) step {
	return func(_ *testing.T, _ resourcelock.Interface, f *fakeLock) { f.holder = holder }
}

func TestGateHoldsTheLeaseFromEachRenewalsSend(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
		valid bool
	}{
		{name: "closed before the Lease is first taken", valid: false},
		{name: "closed while another replica holds the Lease", steps: []step{takenBy("replica-b"), get}, valid: false},
		{name: "open right after the Lease is created", steps: []step{create}, valid: true},
		{name: "open right after a renewal", steps: []step{create, wait(1500 * time.Millisecond), renew}, valid: true},
		{name: "open just before validFor passes", steps: []step{create, wait(validFor - time.Millisecond)}, valid: true},
		{name: "closed once validFor passed with no renewal", steps: []step{create, wait(validFor)}, valid: false},
		{name: "closed long after, as for a process stopped past the lease duration", steps: []step{create, wait(10 * time.Second)}, valid: false},
		{name: "a renewal extends it", steps: []step{create, wait(1500 * time.Millisecond), renew, wait(1500 * time.Millisecond)}, valid: true},
		{
			name:  "a failed renewal does not extend it",
			steps: []step{create, wait(1500 * time.Millisecond), failing(errors.New("conflict")), renew, wait(time.Second)},
			valid: false,
		},
		{
			name:  "a renewal counts from its send, not its answer",
			steps: []step{create, wait(time.Second), taking(1500 * time.Millisecond), renew, wait(600 * time.Millisecond)},
			valid: false,
		},
		{
			// The other replicas see records to the second: to them, a
			// renewal in the same second as the last is no renewal.
			name:  "a renewal the other replicas cannot tell from the last does not extend it",
			steps: []step{create, wait(900 * time.Millisecond), renew, wait(1100 * time.Millisecond)},
			valid: false,
		},
		{name: "closed at once by a release", steps: []step{create, wait(100 * time.Millisecond), release}, valid: false},
		{
			name:  "closed at once when the Lease is read back naming another holder",
			steps: []step{create, wait(100 * time.Millisecond), takenBy("replica-b"), get},
			valid: false,
		},
		{name: "reading the Lease back as ours keeps it open", steps: []step{create, wait(100 * time.Millisecond), get}, valid: true},
		{name: "taken again after a release", steps: []step{create, release, wait(time.Second), renew}, valid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			g := New(clk, validFor)
			f := &fakeLock{clock: clk}
			l := g.Lock(f)
			for _, s := range tc.steps {
				s(t, l, f)
			}
			if got := g.Valid(clk.Now()); got != tc.valid {
				t.Errorf("Valid = %v, want %v", got, tc.valid)
			}
		})
	}
}

func TestGateTellsHowLongTheLeaseHasLapsed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  []step
		lapsed time.Duration
	}{
		{name: "never held", steps: []step{wait(time.Minute)}, lapsed: 0},
		{name: "held", steps: []step{create, wait(time.Second)}, lapsed: 0},
		{name: "since validFor ran out with no renewal", steps: []step{create, wait(validFor + 5*time.Second)}, lapsed: 5 * time.Second},
		{name: "since a release", steps: []step{create, wait(time.Second), release, wait(3 * time.Second)}, lapsed: 3 * time.Second},
		{
			name:   "since it ran out, when another holder is read back later",
			steps:  []step{create, wait(validFor + time.Second), takenBy("replica-b"), get, wait(time.Second)},
			lapsed: 2 * time.Second,
		},
		{name: "not once taken again", steps: []step{create, release, wait(time.Minute), renew}, lapsed: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			g := New(clk, validFor)
			f := &fakeLock{clock: clk}
			l := g.Lock(f)
			for _, s := range tc.steps {
				s(t, l, f)
			}
			if got := g.Lapsed(clk.Now()); got != tc.lapsed {
				t.Errorf("Lapsed = %v, want %v", got, tc.lapsed)
			}
		})
	}
}

func TestGateLockPassesEveryCallOn(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	f := &fakeLock{clock: clk}
	l := New(clk, validFor).Lock(f)
	create(t, l, f)
	f.fail = errors.New("apiserver says no")
	if err := l.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: me}); err == nil || f.writes != 2 {
		t.Errorf("Update = %v after %d writes, want the lock's error from the second write", err, f.writes)
	}
	if l.Identity() != me || l.Describe() != "default/test" {
		t.Errorf("Identity, Describe = %q, %q: not the lock's", l.Identity(), l.Describe())
	}
}

func TestGateTransportRefusesWritesOnlyWhileClosed(t *testing.T) {
	for _, tc := range []struct {
		name, method, path string
		open, sent         bool
	}{
		{name: "a read while closed", method: http.MethodGet, path: "/api/v1/nodes/n1", sent: true},
		{name: "a list while closed", method: http.MethodGet, path: "/api/v1/pods", sent: true},
		{name: "a watch while closed", method: http.MethodGet, path: "/api/v1/nodes?watch=true", sent: true},
		{name: "a HEAD while closed", method: http.MethodHead, path: "/readyz", sent: true},
		{name: "a patch while closed", method: http.MethodPatch, path: "/api/v1/nodes/n1"},
		{name: "a status update while closed", method: http.MethodPut, path: "/api/v1/nodes/n1/status"},
		{name: "an event while closed", method: http.MethodPost, path: "/apis/events.k8s.io/v1/namespaces/default/events"},
		{name: "an eviction while closed", method: http.MethodPost, path: "/api/v1/namespaces/default/pods/p/eviction"},
		{name: "a delete while closed", method: http.MethodDelete, path: "/api/v1/namespaces/default/pods/p"},
		{name: "a Lease update while closed", method: http.MethodPut, path: "/apis/coordination.k8s.io/v1/namespaces/default/leases/nlc"},
		{name: "a metrics scrape's token review while closed", method: http.MethodPost, path: "/apis/authentication.k8s.io/v1/tokenreviews", sent: true},
		{name: "a metrics scrape's access review while closed", method: http.MethodPost, path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", sent: true},
		{name: "a patch while open", method: http.MethodPatch, path: "/api/v1/nodes/n1", open: true, sent: true},
		{name: "a delete while open", method: http.MethodDelete, path: "/api/v1/namespaces/default/pods/p", open: true, sent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			server := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				got = append(got, r.Method+" "+r.URL.Path)
			}))
			defer server.Close()
			clk := clocktesting.NewFakeClock(t0)
			g := New(clk, validFor)
			if tc.open {
				f := &fakeLock{clock: clk}
				create(t, g.Lock(f), f)
			}
			client := &http.Client{Transport: g.Wrap(http.DefaultTransport)}
			body := &closeTracker{Reader: strings.NewReader(`{}`)}
			req, err := http.NewRequest(tc.method, server.URL+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if resp != nil {
				_ = resp.Body.Close()
			}
			if tc.sent {
				if err != nil || len(got) != 1 {
					t.Fatalf("Do = %v, server saw %v: want the request sent", err, got)
				}
				return
			}
			if !errors.Is(err, ErrNotLeader) {
				t.Errorf("Do = %v, want ErrNotLeader", err)
			}
			if len(got) != 0 {
				t.Errorf("server saw %v, want nothing", got)
			}
			if !body.closed {
				t.Error("the refused request's body was left open")
			}
		})
	}
}

func TestGateTransportClosesOnTheClock(t *testing.T) {
	sent := 0
	server := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { sent++ }))
	defer server.Close()
	clk := clocktesting.NewFakeClock(t0)
	g := New(clk, validFor)
	f := &fakeLock{clock: clk}
	create(t, g.Lock(f), f)
	client := &http.Client{Transport: g.Wrap(http.DefaultTransport)}
	patch := func() error {
		req, err := http.NewRequest(http.MethodPatch, server.URL+"/api/v1/nodes/n1", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if resp != nil {
			_ = resp.Body.Close()
		}
		return err
	}
	if err := patch(); err != nil {
		t.Fatalf("patch right after the Lease was taken: %v", err)
	}
	clk.Step(validFor)
	if err := patch(); !errors.Is(err, ErrNotLeader) {
		t.Errorf("patch once the Lease lapsed = %v, want ErrNotLeader", err)
	}
	if sent != 1 {
		t.Errorf("server saw %d patches, want 1", sent)
	}
}

// closeTracker is a request body that tells whether it was closed.
type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error {
	c.closed = true
	return nil
}

// TestGateTellsTheSpanNoLeaderWatched: a process that takes the Lease from
// another knows when that one last renewed it, and so how long no leader
// watched the cluster; one that creates the Lease, or renews its own, took
// it from no one.
func TestGateTellsTheSpanNoLeaderWatched(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	f := &fakeLock{clock: clk, holder: "replica-b", renewed: t0}
	g := New(clk, validFor)
	l := g.Lock(f)
	clk.Step(5 * time.Second)
	get(t, l, f) // replica-b renewed at t0, and has not since
	clk.Step(15 * time.Second)
	get(t, l, f)
	renew(t, l, f) // taken
	from, to, ok := g.Unled()
	if !ok || !from.Equal(t0) || !to.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("Unled = %v, %v, %v; want from replica-b's last renewal to the take", from, to, ok)
	}
	clk.Step(time.Second)
	get(t, l, f)
	renew(t, l, f)
	if from2, to2, _ := g.Unled(); !from2.Equal(from) || !to2.Equal(to) {
		t.Fatalf("a renewal moved the span to %v..%v", from2, to2)
	}

	fresh := New(clk, validFor)
	l = fresh.Lock(&fakeLock{clock: clk})
	get(t, l, &fakeLock{clock: clk})
	create(t, l, &fakeLock{clock: clk})
	if _, _, ok := fresh.Unled(); ok {
		t.Fatal("a process that created the Lease took it from a leader")
	}
}
