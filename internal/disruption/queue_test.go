package disruption

import (
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
