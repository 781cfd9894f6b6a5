package disruption

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestGuardCountsZonesWithinAPool(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55})
	g.SetPool("gpu", &Pool{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55}, t0)
	// Zone z holds three ready default nodes and one gpu node that is down.
	for i := range 3 {
		g.Update(fmt.Sprint("n", i), NodeStatus{Zone: "z", Ready: true}, t0)
	}
	g.Update("gpu0", NodeStatus{Pool: "gpu", Zone: "z"}, t0)
	if s := g.Snapshot().Zones[ZoneID{Pool: "gpu", Zone: "z"}].State; s != ZoneFullDisruption {
		t.Fatalf("the gpu pool's zone z is %s, want FullDisruption", s)
	}
	if s := g.Snapshot().Zones[ZoneID{Zone: "z"}].State; s != ZoneNormal {
		t.Fatalf("the default pool's zone z is %s, want Normal", s)
	}
	// Not every zone is down: the gpu node is tainted at the normal rate.
	if ok, _, why := g.TakeTaint("gpu0", t0); !ok {
		t.Fatalf("gpu0 held back: %s", why)
	}
}

func TestGuardPoolHolds(t *testing.T) {
	half := intstr.FromString("50%")
	tests := []struct {
		name string
		pool Pool
		down int // of 4 nodes in one zone, beside a healthy default pool
		want string
	}{
		{"breaker not tripped", Pool{MaxUnhealthy: &half}, 2, ""},
		{"breaker tripped", Pool{MaxUnhealthy: &half}, 3, HeldBreaker},
		{"absolute breaker", Pool{MaxUnhealthy: ptr.To(intstr.FromInt32(0))}, 1, HeldBreaker},
		{"paused", Pool{Paused: true}, 1, HeldPaused},
		{"full zone evicted", Pool{}, 4, ""},
		{"full zone halted", Pool{HaltFullZones: true}, 4, HeldFullZone},
		{"partial zone not halted", Pool{HaltFullZones: true}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGuard(Config{Rates: Rates{Normal: 100}, UnhealthyZoneThreshold: 0.55})
			tt.pool.Normal, tt.pool.UnhealthyZoneThreshold = 100, 1
			g.SetPool("p", &tt.pool, t0)
			g.Update("other", NodeStatus{Zone: "y", Ready: true}, t0)
			for i := range 4 {
				g.Update(fmt.Sprint("n", i), NodeStatus{Pool: "p", Zone: "z", Ready: i >= tt.down}, t0)
			}
			ok, wait, why := g.TakeTaint("n0", t0)
			allowed, evictWhy := g.DestructiveAllowedFor("n0")
			if tt.want == "" {
				if !ok || !allowed {
					t.Fatalf("held back: taint %q, eviction %q", why, evictWhy)
				}
				return
			}
			if ok || wait >= 0 || why != tt.want || allowed || evictWhy != tt.want {
				t.Fatalf("TakeTaint = %v, %v, %q; DestructiveAllowedFor = %v, %q; want held for %q",
					ok, wait, why, allowed, evictWhy, tt.want)
			}
			if ok, _ := g.DestructiveAllowedFor("other"); !ok {
				t.Fatal("a node of another pool was held back")
			}
		})
	}
}

func TestGuardReportsPoolHoldChanges(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55})
	zero := intstr.FromInt32(0)
	g.SetPool("p", &Pool{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55, MaxUnhealthy: &zero}, t0)
	g.Update("n0", NodeStatus{Pool: "p", Zone: "z", Ready: true}, t0)
	if c := g.Update("n0", NodeStatus{Pool: "p", Zone: "z"}, t0); !slices.Contains(c.Held, "p") || g.Snapshot().Held["p"] != HeldBreaker {
		t.Fatalf("breaker trip not reported: %+v, hold %q", c, g.Snapshot().Held["p"])
	}
	if c := g.Update("n0", NodeStatus{Pool: "p", Zone: "z", Ready: true}, t0); !slices.Contains(c.Held, "p") || g.Snapshot().Held["p"] != "" {
		t.Fatalf("breaker reset not reported: %+v", c)
	}
	// Pausing a pool, even one without nodes, is a change of hold.
	if c := g.SetPool("q", &Pool{Paused: true}, t0); !slices.Contains(c.Held, "q") {
		t.Fatalf("pause not reported: %+v", c)
	}
	if c := g.SetPool("q", nil, t0); !slices.Contains(c.Held, "q") || g.Snapshot().Held["q"] != "" {
		t.Fatalf("dropping a paused pool did not end its hold: %+v", c)
	}
}

func TestGuardBreakerCountsFadingNodes(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 100}, UnhealthyZoneThreshold: 0.55})
	one := intstr.FromInt32(1)
	g.SetPool("x", &Pool{Rates: Rates{Normal: 100}, UnhealthyZoneThreshold: 0.55, MaxUnhealthy: &one}, t0)
	for i := range 3 {
		g.Update(fmt.Sprint("x", i), NodeStatus{Pool: "x", Zone: "z", Ready: true}, t0)
	}
	g.Update("other", NodeStatus{Zone: "z", Ready: true}, t0)
	// Two of x's nodes went quiet together; the first expires and is
	// marked, the second has not yet: the breaker must already hold.
	c := g.Tick([]string{"x0", "x1", "other"}, 0, t0)
	if !slices.Contains(c.Held, "x") || g.Snapshot().Held["x"] != HeldBreaker {
		t.Fatalf("two fading nodes of three with maxUnhealthy 1: %+v, hold %q", c, g.Snapshot().Held["x"])
	}
	g.Update("x0", NodeStatus{Pool: "x", Zone: "z", SilentSince: t0}, t0)
	if ok, _, why := g.TakeTaint("x0", t0); ok || why != HeldBreaker {
		t.Fatalf("the first expired node was tainted: %v %q", ok, why)
	}
	// The default pool has no breaker.
	if g.Snapshot().Held[""] != "" {
		t.Fatalf("default pool held: %q", g.Snapshot().Held[""])
	}
	// x1 comes back before it expires: one unhealthy node is within the
	// limit again.
	if c := g.Tick([]string{"x0"}, 0, t0.Add(time.Second)); g.Snapshot().Held["x"] != "" || !slices.Contains(c.Held, "x") {
		t.Fatalf("breaker stayed: %+v, hold %q", c, g.Snapshot().Held["x"])
	}
}

// TestGuardHoldsAnInvalidPool: a pool whose policy is not in force holds
// its nodes, as a paused one does.
func TestGuardHoldsAnInvalidPool(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55})
	g.SetPool("p", &Pool{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55, Invalid: true}, t0)
	g.Update("n", NodeStatus{Pool: "p", Zone: "z"}, t0)
	g.Update("other", NodeStatus{Zone: "z", Ready: true}, t0)
	if why := g.Hold("n"); why != HeldInvalid {
		t.Fatalf("Hold = %q, want %q", why, HeldInvalid)
	}
	if ok, why := g.PodMarkingAllowedFor("n"); ok || why != HeldInvalid {
		t.Fatalf("PodMarkingAllowedFor = %v, %q", ok, why)
	}
}
