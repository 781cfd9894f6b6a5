package disruption

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestGuardMaintenanceCountsNowhere: a node in maintenance counts in no
// zone, so a zone whose every counted node is in maintenance and silent does
// not become disrupted, nor does every zone going quiet for maintenance halt
// the cluster.
func TestGuardMaintenanceCountsNowhere(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55})
	for i := range 4 {
		g.Update(fmt.Sprint("a", i), NodeStatus{Zone: "z1", Ready: true}, t0)
	}
	g.Update("b", NodeStatus{Zone: "z2", Ready: true}, t0)
	for i := range 3 {
		g.Update(fmt.Sprint("a", i), NodeStatus{Zone: "z1", Maintenance: true, SilentSince: t0}, t0)
	}
	if z := g.Snapshot().Zones[ZoneID{Zone: "z1"}]; z.State != ZoneNormal || z.Size() != 1 {
		t.Fatalf("three of four in maintenance turned the zone: %+v", z)
	}
	if c := g.Update("b", NodeStatus{Zone: "z2", Maintenance: true, SilentSince: t0}, t0); c.Halt {
		t.Fatalf("z2's only node going into maintenance halted the cluster: %+v", c)
	}
	// Its maintenance over, the node counts again, as not ready.
	g.Update("a0", NodeStatus{Zone: "z1", SilentSince: t0}, t0.Add(time.Hour))
	if z := g.Snapshot().Zones[ZoneID{Zone: "z1"}]; z.NotReady != 1 || z.Size() != 2 {
		t.Fatalf("a node out of maintenance is not counted: %+v", z)
	}
}

// TestGuardMaintenanceHoldsTaintsNotPodMarking: a node in maintenance gets
// no NoExecute taint and its pods are not evicted, but they are marked
// NotReady, as any silent node's; once its maintenance is over it joins its
// zone's queue.
func TestGuardMaintenanceHoldsTaintsNotPodMarking(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55})
	g.Update("m", NodeStatus{Zone: "z", Ready: true}, t0)
	g.Update("ok", NodeStatus{Zone: "z", Ready: true}, t0)
	g.Update("m", NodeStatus{Zone: "z", Maintenance: true, SilentSince: t0}, t0)
	if why := g.Hold("m"); why != HeldMaintenance {
		t.Fatalf("Hold = %q, want %q", why, HeldMaintenance)
	}
	if ok, wait, why := g.TakeTaint("m", t0); ok || wait >= 0 || why != HeldMaintenance {
		t.Fatalf("TakeTaint = %v, %v, %q", ok, wait, why)
	}
	if ok, why := g.DestructiveAllowedFor("m"); ok || why != HeldMaintenance {
		t.Fatalf("DestructiveAllowedFor = %v, %q", ok, why)
	}
	if ok, why := g.PodMarkingAllowedFor("m"); !ok {
		t.Fatalf("pods of a node in maintenance not marked: %q", why)
	}
	if why := g.Hold("ok"); why != "" {
		t.Fatalf("a node not in maintenance is held: %q", why)
	}
	g.Update("m", NodeStatus{Zone: "z", SilentSince: t0}, t0.Add(time.Hour))
	if ok, _, why := g.TakeTaint("m", t0.Add(time.Hour)); !ok {
		t.Fatalf("a node out of maintenance is not tainted: %q", why)
	}
}

// TestGuardMaintenanceIsNoPartition: most of the cluster going quiet for
// maintenance at once sets off no freeze, whether the nodes are fading or
// already silent, and the freeze judges the rest by their own number.
func TestGuardMaintenanceIsNoPartition(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55,
		FreezeThreshold: 0.6, FreezeWindow: time.Minute, FreezeCooldown: time.Minute})
	for i := range 10 {
		g.Update(fmt.Sprint("n", i), NodeStatus{Zone: "z", Ready: true, Maintenance: i < 7}, t0)
	}
	quiet := []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6"}
	if c := g.Tick(quiet, 0, t0); c.Freeze {
		t.Fatalf("seven of ten fading for maintenance froze: %+v", c)
	}
	for _, name := range quiet {
		if c := g.Update(name, NodeStatus{Zone: "z", Maintenance: true, SilentSince: t0}, t0); c.Freeze {
			t.Fatalf("%s silent for maintenance froze: %+v", name, c)
		}
	}
	if lost, total := g.LostCount(t0); lost != 0 || total != 3 {
		t.Fatalf("LostCount() = %d, %d; want 0, 3", lost, total)
	}
	// The three others are lost together: all of what the freeze judges.
	c := g.Tick([]string{"n7", "n8", "n9"}, 0, t0.Add(time.Second))
	if !c.Freeze || !c.Frozen {
		t.Fatalf("three of three judged nodes fading did not freeze: %+v", c)
	}
}

// TestGuardMaintenanceIsNoBreakerCount: a pool's breaker counts neither the
// nodes in maintenance nor those fading into it.
func TestGuardMaintenanceIsNoBreakerCount(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 100}, UnhealthyZoneThreshold: 0.55})
	one := intstr.FromInt32(1)
	g.SetPool("p", &Pool{Rates: Rates{Normal: 100}, UnhealthyZoneThreshold: 0.55, MaxUnhealthy: &one}, t0)
	for i := range 4 {
		g.Update(fmt.Sprint("p", i), NodeStatus{Pool: "p", Zone: "z", Ready: true, Maintenance: i < 3}, t0)
	}
	// A ready node elsewhere: p's zone, its one counted node dead, is
	// fully disrupted, and every zone being so would halt the cluster.
	g.Update("other", NodeStatus{Zone: "z", Ready: true}, t0)
	if c := g.Tick([]string{"p0", "p1", "p2"}, 0, t0); g.Snapshot().Held["p"] != "" {
		t.Fatalf("nodes fading into maintenance tripped the breaker: %+v", c)
	}
	for i := range 3 {
		g.Update(fmt.Sprint("p", i), NodeStatus{Pool: "p", Zone: "z", Maintenance: true, SilentSince: t0}, t0)
	}
	if why := g.Snapshot().Held["p"]; why != "" {
		t.Fatalf("nodes in maintenance tripped the breaker: %q", why)
	}
	// The one node out of maintenance dies: within the limit of one.
	g.Update("p3", NodeStatus{Pool: "p", Zone: "z", SilentSince: t0}, t0)
	if ok, _, why := g.TakeTaint("p3", t0); !ok {
		t.Fatalf("a failed node beside nodes in maintenance is not tainted: %q", why)
	}
}
