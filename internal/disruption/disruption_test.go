package disruption

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 9, 10, 11, 12, 13, 0, time.UTC)

func TestZoneKey(t *testing.T) {
	n := func(labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	tests := []struct {
		labels map[string]string
		want   string
	}{
		{nil, ""},
		{map[string]string{corev1.LabelTopologyRegion: "eu", corev1.LabelTopologyZone: "a"}, "eu/a"},
		{map[string]string{corev1.LabelFailureDomainBetaRegion: "eu", corev1.LabelFailureDomainBetaZone: "b"}, "eu/b"},
		{map[string]string{corev1.LabelTopologyZone: "a", corev1.LabelFailureDomainBetaZone: "old"}, "/a"},
	}
	for _, tt := range tests {
		if got := ZoneKey(n(tt.labels)); got != tt.want {
			t.Errorf("ZoneKey(%v) = %q, want %q", tt.labels, got, tt.want)
		}
	}
	if !Excluded(n(map[string]string{LabelExcludeDisruption: ""})) || Excluded(n(nil)) {
		t.Error("Excluded goes by the label's presence")
	}
}

func TestZoneStateAtTheEdges(t *testing.T) {
	tests := []struct {
		ready, notReady int
		want            ZoneState
	}{
		{0, 0, ZoneInitial},
		{1, 0, ZoneNormal},
		{0, 1, ZoneFullDisruption},
		{0, 5, ZoneFullDisruption},
		{1, 2, ZoneNormal},             // two not ready is never partial
		{2, 3, ZonePartialDisruption},  // 3/5 = 0.6 >= 0.55
		{3, 3, ZoneNormal},             // 3/6 = 0.5 < 0.55
		{9, 11, ZonePartialDisruption}, // 11/20 = 0.55 exactly
		{10, 11, ZoneNormal},           // 11/21 < 0.55
	}
	for _, tt := range tests {
		if got := ZoneStateOf(Counts{Ready: tt.ready, NotReady: tt.notReady}, 0.55); got != tt.want {
			t.Errorf("ready %d, not ready %d: got %s, want %s", tt.ready, tt.notReady, got, tt.want)
		}
	}
}

func TestZoneRate(t *testing.T) {
	r := Rates{Normal: 0.1, Secondary: 0.01, LargeClusterSizeThreshold: 50}
	tests := []struct {
		s    ZoneState
		size int
		want float64
	}{
		{ZoneNormal, 10, 0.1},
		{ZoneFullDisruption, 10, 0.1},
		{ZonePartialDisruption, 50, 0},
		{ZonePartialDisruption, 51, 0.01},
	}
	for _, tt := range tests {
		if got := ZoneRate(tt.s, tt.size, r); got != tt.want {
			t.Errorf("%s size %d: got %v, want %v", tt.s, tt.size, got, tt.want)
		}
	}
}

func TestBucket(t *testing.T) {
	b := NewBucket(0.1, t0)
	if ok, _ := b.Take(t0); !ok {
		t.Fatal("a new bucket holds one token")
	}
	if ok, wait := b.Take(t0); ok || wait != 10*time.Second {
		t.Fatalf("empty bucket: ok=%v wait=%v, want 10s", ok, wait)
	}
	if ok, _ := b.Take(t0.Add(10 * time.Second)); !ok {
		t.Fatal("refilled after 10s")
	}
	// A long pause earns one token, not a burst.
	if ok, _ := b.Take(t0.Add(time.Hour)); !ok {
		t.Fatal("token after a pause")
	}
	if ok, _ := b.Take(t0.Add(time.Hour)); ok {
		t.Fatal("burst after a pause")
	}
	b.SetRate(0, t0.Add(time.Hour))
	if ok, wait := b.Take(t0.Add(2 * time.Hour)); ok || wait >= 0 {
		t.Fatalf("rate 0: ok=%v wait=%v", ok, wait)
	}
	if w := b.Wait(3, t0.Add(2*time.Hour)); w >= 0 {
		t.Fatalf("rate 0 wait %v", w)
	}
}

func TestFreeze(t *testing.T) {
	f := Freeze{Threshold: 0.6, Window: time.Minute, Cooldown: time.Minute}
	silent := map[string]time.Time{}
	lost := 0
	lose := func(n int, at time.Time) {
		for range n {
			silent[fmt.Sprint("n", lost)] = at
			lost++
		}
	}

	lose(2, t0)
	if f.Update(3, silent, nil, false, t0) {
		t.Fatal("two lost nodes never freeze")
	}
	lose(3, t0)
	if !f.Update(8, silent, nil, false, t0) {
		t.Fatal("5 of 8 (0.625) lost within a window should freeze")
	}
	// Recovering below the threshold starts the cooldown; it ends after it.
	for k := range silent {
		delete(silent, k)
		if len(silent) == 2 {
			break
		}
	}
	if f.Update(8, silent, nil, false, t0.Add(time.Minute)) {
		t.Fatal("the freeze ended before its cooldown")
	}
	if !f.Update(8, silent, nil, false, t0.Add(2*time.Minute)) {
		t.Fatal("the freeze did not end after its cooldown")
	}
	if frozen, _ := f.Frozen(); frozen {
		t.Fatal("still frozen")
	}
}

func TestFreezeIgnoresSlowAttrition(t *testing.T) {
	f := Freeze{Threshold: 0.6, Window: time.Minute, Cooldown: time.Minute}
	silent := map[string]time.Time{}
	// Six of ten nodes die, one every two minutes: node failures, no partition.
	for i := range 6 {
		at := t0.Add(time.Duration(i) * 2 * time.Minute)
		silent[fmt.Sprint("n", i)] = at
		if f.Update(10, silent, nil, false, at) {
			t.Fatalf("froze on slow attrition at node %d", i)
		}
	}
}

func TestGuardQueuesTaintsPerZoneInOrder(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 0.1, Secondary: 0.01, LargeClusterSizeThreshold: 50}, UnhealthyZoneThreshold: 0.55})
	for i := range 10 {
		g.Update(fmt.Sprint("a", i), NodeStatus{Zone: "a", Ready: i >= 2}, t0)
	}
	g.Update("b0", NodeStatus{Zone: "b", Ready: true}, t0)

	if ok, _, _ := g.TakeTaint("a0", t0); !ok {
		t.Fatal("first taint in a healthy zone goes at once")
	}
	ok, wait, why := g.TakeTaint("a1", t0)
	if ok || wait != 10*time.Second || why != HeldRate {
		t.Fatalf("second taint: ok=%v wait=%v why=%q", ok, wait, why)
	}
	if ok, wait, _ := g.TakeTaint("a2", t0); ok || wait != 20*time.Second {
		t.Fatalf("third in line waits two intervals, got ok=%v wait=%v", ok, wait)
	}
	// The head of the line gets the next token, not whoever asks first.
	if ok, _, _ := g.TakeTaint("a2", t0.Add(10*time.Second)); ok {
		t.Fatal("a2 jumped the queue")
	}
	if ok, _, _ := g.TakeTaint("a1", t0.Add(10*time.Second)); !ok {
		t.Fatal("a1 should have the token")
	}
	// A node that recovers leaves the queue.
	g.CancelTaint("a2")
	if ok, _, _ := g.TakeTaint("b0", t0); !ok {
		t.Fatal("zones have their own buckets")
	}
}

func TestGuardHaltsWhenEveryZoneIsDown(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55})
	g.Update("a", NodeStatus{Zone: "z1", Ready: true}, t0)
	g.Update("b", NodeStatus{Zone: "z2", Ready: true}, t0)
	if c := g.Update("a", NodeStatus{Zone: "z1"}, t0); c.Halt {
		t.Fatal("one full zone beside a healthy one is no halt")
	}
	if g.Snapshot().Zones[ZoneID{Zone: "z1"}].State != ZoneFullDisruption {
		t.Fatalf("z1 is %s", g.Snapshot().Zones[ZoneID{Zone: "z1"}].State)
	}
	c := g.Update("b", NodeStatus{Zone: "z2"}, t0)
	if !c.Halt || !c.Halted || !g.Snapshot().Halted {
		t.Fatalf("every zone down should halt: %+v", c)
	}
	if ok, wait, why := g.TakeTaint("a", t0); ok || wait >= 0 || why != HeldHalted {
		t.Fatalf("tainting while halted: %v %v %q", ok, wait, why)
	}
	if ok, _ := g.DestructiveAllowedFor("b"); ok {
		t.Fatal("evictions allowed while halted")
	}
	if c := g.Update("b", NodeStatus{Zone: "z2", Ready: true}, t0); !c.Halt || c.Halted {
		t.Fatalf("a zone back should end the halt: %+v", c)
	}
	// An excluded node counts for nothing.
	g.Update("m", NodeStatus{Zone: "z1", Excluded: true, Ready: true}, t0)
	if g.Snapshot().Zones[ZoneID{Zone: "z1"}].State != ZoneFullDisruption {
		t.Fatal("an excluded ready node lifted a full disruption")
	}
}

func TestGuardPartialDisruptionSlowsOrStopsTainting(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1, Secondary: 0.5, LargeClusterSizeThreshold: 4}, UnhealthyZoneThreshold: 0.55})
	for i := range 6 {
		g.Update(fmt.Sprint("n", i), NodeStatus{Zone: "z", Ready: i >= 4}, t0) // 4 of 6 down
	}
	if g.Snapshot().Zones[ZoneID{Zone: "z"}].State != ZonePartialDisruption {
		t.Fatalf("state %s", g.Snapshot().Zones[ZoneID{Zone: "z"}].State)
	}
	g.TakeTaint("n0", t0)
	if _, wait, _ := g.TakeTaint("n1", t0); wait != 2*time.Second {
		t.Fatalf("secondary rate 0.5/s should space taints 2s apart, wait %v", wait)
	}
	// Shrink the zone to the threshold: no tainting at all.
	g.Remove("n5", t0)
	g.Remove("n3", t0)
	if _, wait, _ := g.TakeTaint("n1", t0.Add(time.Hour)); wait >= 0 {
		t.Fatalf("small partially disrupted zone should not taint, wait %v", wait)
	}
}

func TestGuardFreezeBlocksDestructiveWork(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55,
		FreezeThreshold: 0.6, FreezeWindow: time.Minute, FreezeCooldown: time.Minute})
	for i := range 5 {
		g.Update(fmt.Sprint("n", i), NodeStatus{Zone: fmt.Sprint("z", i%2), Ready: true}, t0)
	}
	var c Change
	for i := range 3 {
		c = g.Update(fmt.Sprint("n", i), NodeStatus{Zone: fmt.Sprint("z", i%2), SilentSince: t0}, t0)
	}
	if !c.Freeze || !c.Frozen || !g.Snapshot().Frozen {
		t.Fatalf("3 of 5 silent at once should freeze: %+v", c)
	}
	if ok, _, why := g.TakeTaint("n0", t0); ok || why != HeldFrozen {
		t.Fatal("tainting while frozen")
	}
	for i := range 3 {
		g.Update(fmt.Sprint("n", i), NodeStatus{Zone: fmt.Sprint("z", i%2), Ready: true}, t0.Add(time.Second))
	}
	if c := g.Tick(nil, 0, t0.Add(30*time.Second)); c.Freeze {
		t.Fatal("freeze ended before its cooldown")
	}
	if c := g.Tick(nil, 0, t0.Add(time.Minute+time.Second)); !c.Freeze || c.Frozen {
		t.Fatalf("freeze should end after its cooldown: %+v", c)
	}
}

func TestFreezeStartsOnFadingNodesBeforeTheyExpire(t *testing.T) {
	f := Freeze{Threshold: 0.6, Window: time.Minute, Cooldown: time.Minute}
	// The first of four nodes that died together expires; three more have
	// been quiet for half a grace period and will follow within moments.
	silent := map[string]time.Time{"n0": t0}
	if !f.Update(5, silent, nodeSet("n", 4), false, t0) {
		t.Fatal("four of five fading nodes should freeze at the first expiry")
	}
	// While they stay quiet, the freeze holds even before they expire.
	if f.Update(5, map[string]time.Time{}, nodeSet("n", 4), false, t0.Add(2*time.Minute)) {
		t.Fatal("the freeze ended while most nodes were still quiet")
	}
}

func TestGuardLostCountIncludesFadingNodes(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55,
		FreezeThreshold: 0.6, FreezeWindow: time.Minute, FreezeCooldown: time.Minute})
	for i := range 5 {
		g.Update(fmt.Sprint("n", i), NodeStatus{Zone: "z", Ready: true}, t0)
	}
	// Four nodes went quiet together; none has expired yet.
	if c := g.Tick([]string{"n0", "n1", "n2", "n3"}, 0, t0); !c.Freeze || !c.Frozen {
		t.Fatalf("four of five fading nodes should freeze: %+v", c)
	}
	if lost, total := g.LostCount(t0); lost != 4 || total != 5 {
		t.Fatalf("LostCount() = %d, %d; want 4, 5", lost, total)
	}
	g.Update("n0", NodeStatus{Zone: "z", SilentSince: t0}, t0)
	if lost, _ := g.LostCount(t0); lost != 4 {
		t.Fatalf("one expired of four fading: LostCount() = %d, want 4", lost)
	}
}

// nodeSet returns the names prefix0 to prefix(n-1), as a set.
func nodeSet(prefix string, n int) map[string]struct{} {
	out := make(map[string]struct{}, n)
	for i := range n {
		out[fmt.Sprint(prefix, i)] = struct{}{}
	}
	return out
}
