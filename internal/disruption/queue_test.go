package disruption

import (
	"slices"
	"testing"
	"time"
)

// Queued nodes whose status changes while they wait, as when their grace
// periods run out under a new leader, keep their places: otherwise each goes
// to the back, none is at the head, and a token nobody takes costs an
// interval.
func TestQueuedNodesKeepTheirPlacesWhenTheirStatusChanges(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := NewGuard(Config{Rates: Rates{Normal: 0.5}, UnhealthyZoneThreshold: 0.55})
	g.Update("h", NodeStatus{Zone: "y", Ready: true}, t0)
	for _, n := range []string{"n1", "n2", "n3"} {
		g.Update(n, NodeStatus{Zone: "z"}, t0)
	}
	if ok, _, _ := g.TakeTaint("n1", t0); !ok {
		t.Fatal("n1: the bucket starts full")
	}
	_, wait, _ := g.TakeTaint("n2", t0)
	g.TakeTaint("n3", t0)

	at := t0.Add(wait)
	g.Update("n2", NodeStatus{Zone: "z", SilentSince: t0}, at)
	ok2, _, _ := g.TakeTaint("n2", at)
	g.Update("n3", NodeStatus{Zone: "z", SilentSince: t0}, at)
	ok3, _, _ := g.TakeTaint("n3", at)
	if !ok2 || ok3 {
		t.Errorf("at the next token: n2 tainted %v, n3 tainted %v; want n2, the head, and not n3", ok2, ok3)
	}
}

// A node whose taint cannot be written gives its token back and goes to the
// back of the queue: the rest of its zone keeps the zone's rate.
func TestAFailedTaintSpendsNoToken(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := NewGuard(Config{Rates: Rates{Normal: 0.25}, UnhealthyZoneThreshold: 0.55})
	g.Update("h", NodeStatus{Zone: "y", Ready: true}, t0)
	for _, n := range []string{"refused", "n1", "n2"} {
		g.Update(n, NodeStatus{Zone: "z"}, t0)
	}
	if ok, _, _ := g.TakeTaint("refused", t0); !ok {
		t.Fatal("the bucket starts full")
	}
	g.TakeTaint("n1", t0)
	g.TakeTaint("n2", t0)
	at := t0.Add(time.Millisecond)
	if waiting := g.ReturnTaint("refused"); !slices.Equal(waiting, []string{"n1", "n2"}) {
		t.Errorf("ReturnTaint = %v, want the waiting n1 and n2 to ask again", waiting)
	}
	// It asks again, and waits behind them.
	if ok, _, _ := g.TakeTaint("refused", at); ok {
		t.Error("the refused node jumped the queue")
	}
	if ok, wait, _ := g.TakeTaint("n1", at); !ok {
		t.Errorf("n1 waits %v for the token the refused node did not use", wait)
	}
	if _, wait, _ := g.TakeTaint("n2", at); wait > 4*time.Second {
		t.Errorf("n2 waits %v, want one interval", wait)
	}
}
