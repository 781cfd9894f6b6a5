package disruption

import (
	"fmt"
	"testing"
	"time"
)

// TestFreezeIgnoresAttrition: nodes dying one a minute in a small cluster
// are node failures; the long-dead ones never count towards a freeze, the
// third death no more than the first.
func TestFreezeIgnoresAttrition(t *testing.T) {
	f := Freeze{Threshold: 0.6, Window: 50 * time.Second, Cooldown: 50 * time.Second}
	silent := map[string]time.Time{}
	for i := range 4 {
		at := t0.Add(time.Duration(i) * time.Minute)
		silent[fmt.Sprint("n", i)] = at
		// Only the node that just died is fading.
		if f.Update(5, silent, map[string]struct{}{fmt.Sprint("n", i): {}}, false, at) {
			t.Fatalf("death %d of 5, a minute apart, set off a freeze", i+1)
		}
	}
}

// TestFreezeEndsWhateverLongDeadNodesRemain: the freeze holds while the
// nodes that went silent together stay silent, and ends once enough of them
// are back, however many nodes died before it.
func TestFreezeEndsWhateverLongDeadNodesRemain(t *testing.T) {
	f := Freeze{Threshold: 0.5, Window: 50 * time.Second, Cooldown: 50 * time.Second}
	silent := map[string]time.Time{}
	for i := range 4 { // dead for a day
		silent[fmt.Sprint("old", i)] = t0.Add(-24 * time.Hour)
	}
	for i := range 6 { // a partition, now
		silent[fmt.Sprint("p", i)] = t0
	}
	if !f.Update(10, silent, nodeSet("p", 6), false, t0) {
		t.Fatal("6 of 10 silent at once did not freeze")
	}
	for i := range 6 {
		delete(silent, fmt.Sprint("p", i))
	}
	// 4 of 10 silent, all of them long dead: 40% < 50%.
	if f.Update(10, silent, nil, false, t0.Add(10*time.Second)) {
		t.Fatal("the freeze ended before its cooldown")
	}
	if !f.Update(10, silent, nil, false, t0.Add(time.Minute)) {
		t.Fatal("the freeze did not end after its cooldown, with only long-dead nodes silent")
	}
	// Nor do they set it off again.
	if f.Update(10, silent, nil, false, t0.Add(2*time.Minute)) {
		t.Fatal("long-dead nodes set off a new freeze")
	}
}

// TestFreezeRebuiltFromMarks: a controller that has just started finds the
// nodes marked, and when; if enough of them went silent within one window,
// whenever that was, the freeze holds; nodes marked a minute apart do not.
func TestFreezeRebuiltFromMarks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		marks  []time.Duration // before now
		frozen bool
	}{
		{"a partition marked 10s ago", []time.Duration{12 * time.Second, 11 * time.Second, 10 * time.Second, 10 * time.Second}, true},
		{"a partition marked an hour ago, still silent", []time.Duration{time.Hour, time.Hour - 20*time.Second, time.Hour - 40*time.Second, time.Hour}, true},
		{"one a minute", []time.Duration{4 * time.Minute, 3 * time.Minute, 2 * time.Minute, time.Minute}, false},
		{"two together, two apart", []time.Duration{time.Hour, time.Hour, 10 * time.Second, 5 * time.Minute}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Freeze{Threshold: 0.6, Window: 50 * time.Second, Cooldown: 50 * time.Second}
			now := t0.Add(2 * time.Hour)
			silent := map[string]time.Time{}
			for i, d := range tc.marks {
				silent[fmt.Sprint("n", i)] = now.Add(-d)
			}
			if got := f.Rebuild(func(time.Time) int { return 6 }, silent, now); got != tc.frozen {
				t.Fatalf("Rebuild = %v, want %v", got, tc.frozen)
			}
			// What Rebuild decided, Update keeps.
			if f.Update(6, silent, nil, false, now.Add(time.Second)) {
				t.Fatal("the next Update changed what Rebuild decided")
			}
		})
	}
}

// TestGuardWaitsAfterSeedUntilEveryNodeIsDecided: a new leader taints
// nothing and lets nothing be evicted until it knows of every node whether
// it lives, or a window has passed; the wait takes no taint off.
func TestGuardWaitsAfterSeedUntilEveryNodeIsDecided(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55,
		FreezeThreshold: 0.6, FreezeWindow: time.Minute, FreezeCooldown: time.Minute})
	nodes := map[string]NodeStatus{"dead": {Zone: "z", SilentSince: t0.Add(-time.Hour)}}
	for i := range 4 {
		nodes[fmt.Sprint("n", i)] = NodeStatus{Zone: "z", Ready: true}
	}
	g.Seed(nodes, nil, t0)
	if ok, _, why := g.TakeTaint("dead", t0); ok || why != HeldDeciding {
		t.Fatalf("TakeTaint right after Seed: %v, %q", ok, why)
	}
	if ok, why := g.DestructiveAllowedFor("dead"); ok || why != HeldDeciding {
		t.Fatalf("DestructiveAllowedFor right after Seed: %v, %q", ok, why)
	}
	if why := g.Hold("dead"); why != "" {
		t.Fatalf("the wait after Seed is a hold (%q): it would take taints off", why)
	}
	if c := g.Tick(nil, 4, t0.Add(time.Second)); c.Decided {
		t.Fatal("decided with one node of five unknown")
	}
	if c := g.Tick(nil, 5, t0.Add(2*time.Second)); !c.Decided {
		t.Fatal("not decided with every node known")
	}
	if ok, _, _ := g.TakeTaint("dead", t0.Add(2*time.Second)); !ok {
		t.Fatal("a node dead for an hour was not tainted once decided")
	}

	// Without word of every node, the wait ends after one window.
	g = NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 0.55,
		FreezeThreshold: 0.6, FreezeWindow: time.Minute, FreezeCooldown: time.Minute})
	g.Seed(nodes, nil, t0)
	if c := g.Tick(nil, 0, t0.Add(time.Minute)); !c.Decided {
		t.Fatal("the wait after Seed outlived its window")
	}
}

// TestGuardSeededFromAPartitionHoldsAtOnce: the nodes the old leader marked
// together are enough for the new one to freeze at Seed, before any node is
// judged, and the freeze is a hold.
func TestGuardSeededFromAPartitionHoldsAtOnce(t *testing.T) {
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 1,
		FreezeThreshold: 0.6, FreezeWindow: time.Minute, FreezeCooldown: time.Minute})
	nodes := map[string]NodeStatus{}
	for i := range 10 {
		st := NodeStatus{Zone: fmt.Sprint("z", i%2), Ready: true}
		if i < 8 {
			st = NodeStatus{Zone: st.Zone, SilentSince: t0.Add(-5 * time.Minute).Add(time.Duration(i) * time.Second)}
		}
		nodes[fmt.Sprint("n", i)] = st
	}
	if c := g.Seed(nodes, nil, t0); !c.Freeze || !c.Frozen {
		t.Fatalf("Seed = %+v; want a freeze", c)
	}
	if why := g.Hold("n0"); why != HeldFrozen {
		t.Fatalf("Hold = %q, want %q", why, HeldFrozen)
	}
	if ok, _ := g.PodMarkingAllowedFor("n0"); ok {
		t.Fatal("pods may be marked NotReady in a freeze")
	}
}

// TestGuardSeededThenBlindCountsWhatItFoundWithWhatFades: a new leader
// finds half the nodes marked just before it started and, after an outage
// that kept it from seeing the others fade, sees them fade: the outage
// does not count against the window that joins the two, and they freeze.
func TestGuardSeededThenBlindCountsWhatItFoundWithWhatFades(t *testing.T) {
	window := 20 * time.Second
	g := NewGuard(Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 1,
		FreezeThreshold: 0.6, FreezeWindow: window, FreezeCooldown: time.Minute})
	nodes := map[string]NodeStatus{}
	var others []string
	for i := range 10 {
		name := fmt.Sprint("n", i)
		st := NodeStatus{Zone: "z", Ready: true}
		if i < 5 {
			st = NodeStatus{Zone: "z", SilentSince: t0.Add(-7 * time.Second)}
		} else {
			others = append(others, name)
		}
		nodes[name] = st
	}
	if c := g.Seed(nodes, nil, t0); c.Frozen {
		t.Fatal("five marked nodes of ten froze at Seed")
	}
	// The apiserver is out of reach from 8 s to 19 s after the start.
	g.SetBlind(true, t0.Add(8*time.Second))
	g.SetBlind(false, t0.Add(19*time.Second))
	g.Excuse(t0.Add(8*time.Second), t0.Add(19*time.Second), t0.Add(19*time.Second))
	// The other five fade 25 s after the start: more than one window,
	// though less than one window of time not excused.
	now := t0.Add(25 * time.Second)
	if c := g.Tick(others, 10, now); !c.Frozen {
		lost, total := g.LostCount(now)
		t.Fatalf("Tick = %+v with %d of %d lost; want a freeze", c, lost, total)
	}
}

// TestGuardSeededJudgesAnOldWaveByTheCountOfItsTime: three of six nodes
// died together long ago, under the threshold; a fourth that died later is
// now held by a maintenance begun after the three died. A new leader judges
// the old wave against the six nodes of its time, not the five it judges
// now, and does not freeze on it.
func TestGuardSeededJudgesAnOldWaveByTheCountOfItsTime(t *testing.T) {
	cfg := Config{Rates: Rates{Normal: 1}, UnhealthyZoneThreshold: 1,
		FreezeThreshold: 0.6, FreezeWindow: 20 * time.Second, FreezeCooldown: time.Minute}
	nodes := map[string]NodeStatus{
		"a": {Zone: "z0", SilentSince: t0.Add(-2 * time.Minute)},
		"b": {Zone: "z0", SilentSince: t0.Add(-2 * time.Minute)},
		"c": {Zone: "z0", SilentSince: t0.Add(-2 * time.Minute)},
		"d": {Zone: "z1", Ready: true},
		"e": {Zone: "z1", Ready: true},
		"f": {Zone: "z1", Maintenance: true, MaintenanceSince: t0.Add(-time.Minute), SilentSince: t0.Add(-50 * time.Second)},
	}
	if c := NewGuard(cfg).Seed(nodes, nil, t0); c.Frozen {
		t.Fatal("froze on three of six nodes, judged against the five of today")
	}
	// A maintenance begun before the wave left the node out of its count.
	f := nodes["f"]
	f.MaintenanceSince = t0.Add(-3 * time.Minute)
	nodes["f"] = f
	if c := NewGuard(cfg).Seed(nodes, nil, t0); !c.Frozen {
		t.Fatal("did not freeze on three of the five nodes judged when they died")
	}
}

// TestFreezeSeededAfterAnOutageReachesOverIt: a new leader finds three
// nodes marked just before an outage it did not live through, and sees
// three more fade once it starts: they could not be marked during the
// outage, and may have gone silent with the first three. Told of the
// outage (as the cluster keeps it), its window reaches back over it;
// without, the marks fall outside.
func TestFreezeSeededAfterAnOutageReachesOverIt(t *testing.T) {
	marked := map[string]time.Time{"m0": t0, "m1": t0, "m2": t0}
	from, to := t0.Add(time.Second), t0.Add(41*time.Second)
	seed := t0.Add(47 * time.Second)
	for _, told := range []bool{false, true} {
		f := Freeze{Threshold: 0.6, Window: 20 * time.Second, Cooldown: 20 * time.Second}
		if told {
			f.Excuse(from, to, seed)
		}
		f.started = seed
		froze := f.Update(10, marked, nodeSet("f", 3), true, seed.Add(10*time.Second))
		if froze != told {
			t.Errorf("told of the outage: %v; froze: %v", told, froze)
		}
	}
}

// TestExcusedSpansMergeAndAge: spans learnt from the cluster and seen by
// the process itself may overlap and come in any order; they are kept in
// order, merged, and dropped once two windows of time not excused have
// passed since they ended.
func TestExcusedSpansMergeAndAge(t *testing.T) {
	f := Freeze{Threshold: 0.6, Window: 10 * time.Second}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	f.Excuse(at(30), at(40), at(40))
	f.Excuse(at(10), at(20), at(40))
	f.Excuse(at(15), at(32), at(40))
	f.Excuse(at(50), at(50), at(50)) // empty: ignored
	if got := f.Excused(at(45)); len(got) != 1 || !got[0].From.Equal(at(10)) || !got[0].To.Equal(at(40)) {
		t.Fatalf("Excused = %v, want one span from 10s to 40s", got)
	}
	if got := f.Excused(at(61)); len(got) != 0 {
		t.Fatalf("Excused two windows after the span's end = %v", got)
	}
}

// TestExcusedSpansCloseTogetherAgeByTimeNotExcused: two outages five
// seconds apart; the first ended more than two windows ago by the clock,
// but a window reaching back over the second reaches the first too, and
// both are kept until two windows of time not excused have passed.
func TestExcusedSpansCloseTogetherAgeByTimeNotExcused(t *testing.T) {
	f := Freeze{Threshold: 0.6, Window: 20 * time.Second}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	f.Excuse(at(108), at(137), at(137))
	f.Excuse(at(142), at(180), at(180))
	if got := f.Excused(at(190)); len(got) != 2 {
		t.Fatalf("Excused = %v, want both outages", got)
	}
	// 10 s after the second outage, 5 s between them, and 5 s before the
	// first.
	if from := f.windowStart(at(190)); !from.Equal(at(103)) {
		t.Fatalf("the window at 190s starts at %v, want 1m43s", from.Sub(t0))
	}
	// 5 s between the outages and 30 s after the second: two windows.
	if got := f.Excused(at(216)); len(got) != 1 || !got[0].From.Equal(at(142)) {
		t.Fatalf("Excused = %v, want the second outage alone", got)
	}
}
