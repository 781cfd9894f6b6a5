package act

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// freezePort is a LookPort that only keeps the freeze: it records each
// write, and refuses them while refuse is set.
type freezePort struct {
	now    time.Time
	refuse bool
	writes [][]disruption.Span
}

func (p *freezePort) Now() time.Time   { return p.now }
func (p *freezePort) Stamp() time.Time { return p.now }
func (p *freezePort) Live(context.Context, string) (*corev1.Node, *coordinationv1.Lease, error) {
	return nil, nil, errors.New("not read in these tests")
}
func (p *freezePort) Lease(context.Context, string) (*coordinationv1.Lease, error) {
	return nil, errors.New("not read in these tests")
}
func (p *freezePort) PatchStatus(context.Context, *corev1.Node, *corev1.Node) error { return nil }
func (p *freezePort) PatchNode(context.Context, *corev1.Node, *corev1.Node) error   { return nil }
func (p *freezePort) Wake(string, safety.Next)                                      {}
func (p *freezePort) KeepFreeze(_ context.Context, _ *disruption.Record, spans []disruption.Span) error {
	if p.refuse {
		return errors.New("refused")
	}
	p.writes = append(p.writes, spans)
	return nil
}

// outages is a Sight whose outages a test ends, blind while blind is set.
type outages struct {
	ended []disruption.Span
	blind bool
}

func (o *outages) Take() (bool, []disruption.Span) {
	ended := o.ended
	o.ended = nil
	return o.blind, ended
}

func newExecutor(sight Sight) *Executor {
	return New(safety.New(health.NewTracker(), disruption.NewGuard(disruption.Config{
		Rates:                  disruption.Rates{Normal: 1, Secondary: 0.1, LargeClusterSizeThreshold: 50},
		UnhealthyZoneThreshold: 0.55, FreezeThreshold: 0.6, FreezeWindow: 40 * time.Second, FreezeCooldown: 40 * time.Second,
	}), 40*time.Second), 1, sight)
}

// seed seeds x's model with no nodes and what the cluster kept, at t0.
func seed(x *Executor, kept safety.Kept) {
	x.model.Seed(nil, func(*corev1.Node) policy.Settings { return policy.Settings{} }, kept, t0, t0)
}

// TestNoFreezeIsKeptBeforeTheSeed: a process that saw an outage before it
// led keeps nothing until its model has read what the cluster kept; its
// empty freeze would erase the one the last leader kept. After the seed,
// the kept freeze and the outage go back together.
func TestNoFreezeIsKeptBeforeTheSeed(t *testing.T) {
	span := disruption.Span{From: t0.Add(-20 * time.Second), To: t0.Add(-10 * time.Second)}
	o := &outages{ended: []disruption.Span{span}}
	x := newExecutor(o)
	p := &freezePort{now: t0}
	ctx := context.Background()
	x.KeepFreeze(ctx, p)
	if len(p.writes) != 0 {
		t.Fatalf("kept %v before the seed", p.writes)
	}
	kept := disruption.Span{From: t0.Add(-30 * time.Second), To: t0.Add(-25 * time.Second)}
	seed(x, safety.Kept{Unwatched: []disruption.Span{kept}})
	x.KeepFreeze(ctx, p)
	if len(p.writes) != 1 || len(p.writes[0]) != 2 || p.writes[0][0] != kept || p.writes[0][1] != span {
		t.Fatalf("writes %v, want one of [%v %v]", p.writes, kept, span)
	}
}

// TestSeeingAnOutageNeverWaitsForAKeepInFlight: every turn of the executor
// takes the outages that ended before it decides, a look among them; a
// look must not wait there for a write of the freeze in flight, which an
// apiserver that hangs holds for as long as it hangs.
func TestSeeingAnOutageNeverWaitsForAKeepInFlight(t *testing.T) {
	o := &outages{ended: []disruption.Span{{From: t0, To: t0.Add(10 * time.Second)}}}
	x := newExecutor(o)
	p := &freezePort{now: t0.Add(10 * time.Second)}
	x.freeze.mu.Lock() // a write in flight
	done := make(chan struct{})
	go func() {
		x.see(context.Background(), p)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("seeing an outage waited for the write in flight")
	}
	x.freeze.mu.Unlock()
	if !x.freeze.stale.Load() {
		t.Fatal("an excused outage did not ask for the freeze to be kept")
	}
}

// TestAnExcusedOutageIsKeptUntilAWriteLands: the span of an outage that
// ended reaches the cluster at the next keep, whatever else changed; a
// refused write is tried again at the next, and once one lands nothing is
// written again.
func TestAnExcusedOutageIsKeptUntilAWriteLands(t *testing.T) {
	o := &outages{}
	x := newExecutor(o)
	seed(x, safety.Kept{})
	p := &freezePort{now: t0.Add(10 * time.Second)}
	ctx := context.Background()
	x.KeepFreeze(ctx, p)
	if len(p.writes) != 0 {
		t.Fatalf("kept %v with nothing to keep", p.writes)
	}
	want := disruption.Span{From: t0, To: t0.Add(10 * time.Second)}
	o.ended = []disruption.Span{want}
	p.refuse = true
	x.KeepFreeze(ctx, p)
	p.refuse = false
	x.KeepFreeze(ctx, p)
	x.KeepFreeze(ctx, p)
	if len(p.writes) != 1 || len(p.writes[0]) != 1 || p.writes[0][0] != want {
		t.Fatalf("writes %v, want one of [%v]", p.writes, want)
	}
}

// leasePort is a freezePort whose nodes' Leases are read live: read runs
// as the read is answered, and patches counts the marks.
type leasePort struct {
	freezePort
	lease   *coordinationv1.Lease
	read    func()
	patches int
}

func (p *leasePort) Lease(context.Context, string) (*coordinationv1.Lease, error) {
	if p.read != nil {
		p.read()
	}
	return p.lease, nil
}

func (p *leasePort) PatchStatus(context.Context, *corev1.Node, *corev1.Node) error {
	p.patches++
	return nil
}

// TestAnOutageTheLiveReadEndsIsExcusedBeforeTheMark: the live read that
// confirms a silence may be sent while the apiserver is out of reach and
// answered after it is back; the outage it ended is excused before the
// answer is judged, and a node whose silence the outage covers is not
// marked.
func TestAnOutageTheLiveReadEndsIsExcusedBeforeTheMark(t *testing.T) {
	o := &outages{}
	x := newExecutor(o)
	s := policy.Settings{Grace: health.Grace{Monitor: 40 * time.Second, Startup: time.Minute}}
	ready := testobj.Condition(corev1.NodeReady, corev1.ConditionTrue, t0)
	ready.LastHeartbeatTime = metav1.NewTime(t0)
	node := testobj.Node("n", testobj.Conditions(ready))
	lease := testobj.Lease("n", "n", t0)
	p := &leasePort{freezePort: freezePort{now: t0}, lease: lease}
	ctx := context.Background()
	if _, err := x.Look(ctx, p, node, lease, s); err != nil {
		t.Fatal(err)
	}
	// The apiserver went away 10s after the last heartbeat; the read sent
	// 50s after it is answered at 60s, when the apiserver is back.
	p.now = t0.Add(50 * time.Second)
	p.read = func() {
		o.ended = append(o.ended, disruption.Span{From: t0.Add(10 * time.Second), To: t0.Add(60 * time.Second)})
		p.now = t0.Add(60 * time.Second)
	}
	out, err := x.Look(ctx, p, node, lease, s)
	if err != nil {
		t.Fatal(err)
	}
	if out.Mark != nil || p.patches != 0 {
		t.Fatalf("marked a node whose silence an outage covers (mark %+v, %d patches)", out.Mark, p.patches)
	}
}

// resyncPort is a leasePort that shows no node cached, and records the
// nodes whose pods it is told to expect.
type resyncPort struct {
	leasePort
	expected []string
}

func (p *resyncPort) Cached(context.Context, string) *corev1.Node { return nil }
func (p *resyncPort) Settings(context.Context, *corev1.Node) policy.Settings {
	return policy.Settings{}
}
func (p *resyncPort) Expect(name string) { p.expected = append(p.expected, name) }

// TestResyncExpectsThePodsOfNodesGoingQuiet: a node silent for half its
// grace has its pods asked for at each resync while the apiserver answers;
// not before, and not while it is out of reach, when every node is silent
// to the controller.
func TestResyncExpectsThePodsOfNodesGoingQuiet(t *testing.T) {
	o := &outages{}
	x := newExecutor(o)
	seed(x, safety.Kept{})
	s := policy.Settings{Grace: health.Grace{Monitor: 40 * time.Second, Startup: time.Minute}}
	ready := testobj.Condition(corev1.NodeReady, corev1.ConditionTrue, t0)
	ready.LastHeartbeatTime = metav1.NewTime(t0)
	node := testobj.Node("n", testobj.Conditions(ready))
	lease := testobj.Lease("n", "n", t0)
	p := &resyncPort{leasePort: leasePort{freezePort: freezePort{now: t0}, lease: lease}}
	ctx := context.Background()
	if _, err := x.Look(ctx, p, node, lease, s); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		after time.Duration
		blind bool
		want  int
	}{
		{after: 19 * time.Second},
		{after: 20 * time.Second, want: 1},
		{after: 25 * time.Second, blind: true, want: 1},
		{after: 30 * time.Second, want: 2},
	} {
		p.now, o.blind = t0.Add(step.after), step.blind
		x.Resync(ctx, p)
		if len(p.expected) != step.want {
			t.Fatalf("%v after the last heartbeat (blind %v): expected %v, want n %d times", step.after, step.blind, p.expected, step.want)
		}
	}
}

// wakePort is a resyncPort that records the nodes woken.
type wakePort struct {
	resyncPort
	woken []string
}

func (p *wakePort) Wake(name string, _ safety.Next) { p.woken = append(p.woken, name) }

// TestResyncLooksAtTheNodesNoLookHasObserved: the first look at each node
// is asked for at the start; one lost leaves its node unknown to the
// tracker, which then neither times its silence nor counts it fading. The
// resync looks at every node the seed listed until a look has observed it.
func TestResyncLooksAtTheNodesNoLookHasObserved(t *testing.T) {
	x := newExecutor(nil)
	s := policy.Settings{Grace: health.Grace{Monitor: 40 * time.Second, Startup: time.Minute}}
	ready := testobj.Condition(corev1.NodeReady, corev1.ConditionTrue, t0)
	ready.LastHeartbeatTime = metav1.NewTime(t0)
	a, b := testobj.Node("a", testobj.Conditions(ready)), testobj.Node("b", testobj.Conditions(ready))
	x.model.Seed([]*corev1.Node{a, b}, func(*corev1.Node) policy.Settings { return s }, safety.Kept{}, t0, t0)
	p := &wakePort{resyncPort: resyncPort{leasePort: leasePort{freezePort: freezePort{now: t0}}}}
	ctx := context.Background()
	resync := func(want ...string) {
		t.Helper()
		p.woken = nil
		x.Resync(ctx, p)
		slices.Sort(p.woken)
		if !slices.Equal(p.woken, want) {
			t.Fatalf("the resync woke %v, want %v", p.woken, want)
		}
	}
	resync("a", "b")
	if _, err := x.Look(ctx, p, a, testobj.Lease("a", "a", t0), s); err != nil {
		t.Fatal(err)
	}
	resync("b")
	if _, err := x.Look(ctx, p, b, testobj.Lease("b", "b", t0), s); err != nil {
		t.Fatal(err)
	}
	resync()
}
