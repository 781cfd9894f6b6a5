package act

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
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
func (p *freezePort) Blind() bool      { return false }
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

func newExecutor() *Executor {
	return New(safety.New(health.NewTracker(), disruption.NewGuard(disruption.Config{
		Rates:                  disruption.Rates{Normal: 1, Secondary: 0.1, LargeClusterSizeThreshold: 50},
		UnhealthyZoneThreshold: 0.55, FreezeThreshold: 0.6, FreezeWindow: 40 * time.Second, FreezeCooldown: 40 * time.Second,
	}), 40*time.Second), 1)
}

// TestExcuseNeverWaitsForAKeepInFlight: an outage is excused on the answer
// that ended it, which may be the answer to the freeze's own write, made
// while the keeper holds its lock: excusing must not wait for that lock,
// or the write never returns.
func TestExcuseNeverWaitsForAKeepInFlight(t *testing.T) {
	x := newExecutor()
	x.freeze.mu.Lock() // a write in flight
	done := make(chan struct{})
	go func() {
		x.Excuse(t0, t0.Add(10*time.Second), t0.Add(10*time.Second))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Excuse waited for the write in flight")
	}
	x.freeze.mu.Unlock()
}

// TestAnExcusedOutageIsKeptUntilAWriteLands: the span of an outage reaches
// the cluster at the next keep, whatever else changed; a refused write is
// tried again at the next, and once one lands nothing is written again.
func TestAnExcusedOutageIsKeptUntilAWriteLands(t *testing.T) {
	x := newExecutor()
	p := &freezePort{now: t0.Add(10 * time.Second)}
	ctx := context.Background()
	x.KeepFreeze(ctx, p)
	if len(p.writes) != 0 {
		t.Fatalf("kept %v with nothing to keep", p.writes)
	}
	x.Excuse(t0, t0.Add(10*time.Second), p.now)
	p.refuse = true
	x.KeepFreeze(ctx, p)
	p.refuse = false
	x.KeepFreeze(ctx, p)
	x.KeepFreeze(ctx, p)
	want := disruption.Span{From: t0, To: t0.Add(10 * time.Second)}
	if len(p.writes) != 1 || len(p.writes[0]) != 1 || p.writes[0][0] != want {
		t.Fatalf("writes %v, want one of [%v]", p.writes, want)
	}
}
