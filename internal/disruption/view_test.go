package disruption

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// The snapshot agrees with what the guard reports piece by piece, and is a
// copy: changing it changes nothing in the guard.
func TestSnapshotIsACopyOfOneMoment(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55,
		FreezeThreshold: 0.6, FreezeWindow: time.Minute, FreezeCooldown: time.Minute})
	zero := intstr.FromInt32(0)
	g.SetPool("p", &Pool{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55, MaxUnhealthy: &zero}, t0)
	g.Update("p0", NodeStatus{Pool: "p", Zone: "z"}, t0)
	for i := range 4 {
		g.Update(fmt.Sprint("n", i), NodeStatus{Zone: "z", Ready: true}, t0)
	}

	s := g.Snapshot()
	pz, dz := ZoneID{Pool: "p", Zone: "z"}, ZoneID{Zone: "z"}
	if len(s.Zones) != 2 || s.Zones[pz] != g.Snapshot().Zones[pz] || s.Zones[dz] != g.Snapshot().Zones[dz] {
		t.Fatalf("Zones = %v, want the pool's zone and the default one as Zone reports them", s.Zones)
	}
	if s.Zones[pz].State != ZoneFullDisruption || s.Zones[dz].Ready != 4 {
		t.Fatalf("Zones = %v", s.Zones)
	}
	if len(s.Held) != 1 || s.Held["p"] != HeldBreaker {
		t.Fatalf("Held = %v, want p held by its breaker", s.Held)
	}
	if s.Nodes != 5 || s.Halted || s.Frozen || s.Deciding {
		t.Fatalf("Snapshot = %+v", s)
	}

	delete(s.Held, "p")
	s.Zones[dz] = ZoneSnapshot{}
	if g.Snapshot().Held["p"] != HeldBreaker || g.Snapshot().Zones[dz].Ready != 4 {
		t.Fatal("changing the snapshot changed the guard")
	}
}

// ZoneStates finds the zones a guard seeded with the same nodes holds,
// whatever the mix of pools, zones, exclusions and maintenance.
func TestZoneStatesAgreeWithTheGuard(t *testing.T) {
	nodes := map[string]NodeStatus{}
	var list []NodeStatus
	for i := range 40 {
		st := NodeStatus{Pool: []string{"", "p"}[i%2], Zone: fmt.Sprint("z", i%3), Ready: i%5 < 2,
			Excluded: i%7 == 0, Maintenance: i%11 == 0 && i%5 >= 2}
		nodes[fmt.Sprint("n", i)] = st
		list = append(list, st)
	}
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55})
	g.SetPool("p", &Pool{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.9}, t0)
	g.Seed(nodes, nil, t0)
	got := ZoneStates(list, func(pool string) float64 {
		if pool == "p" {
			return 0.9
		}
		return 0.55
	})
	want := g.Snapshot().Zones
	if len(got) != len(want) || len(got) != 6 {
		t.Fatalf("ZoneStates = %v, want the guard's %v", got, want)
	}
	for id, z := range want {
		if got[id] != z {
			t.Errorf("zone %v: ZoneStates %+v, guard %+v", id, got[id], z)
		}
	}
}
