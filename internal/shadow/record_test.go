package shadow

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const held = "partition freeze"

// episodes returns the record's episodes, without resetting it.
func episodes(r *Record) []Episode {
	out, _ := r.Episodes(false)
	return out
}

// onlyEpisode returns the record's one episode, failing when it has
// another number of them.
func onlyEpisode(t *testing.T, r *Record) Episode {
	t.Helper()
	es := episodes(r)
	if len(es) != 1 {
		t.Fatalf("record holds %d episodes, want 1: %+v", len(es), es)
	}
	return es[0]
}

// equalTime reports whether got is set to want.
func equalTime(got *time.Time, want time.Time) bool { return got != nil && got.Equal(want) }

// A side's first mark opens the node's episode; one seen again is not
// moved, and the other side's goes in the same episode.
func TestRecordMarked(t *testing.T) {
	r := NewRecord()
	r.Marked("n1", true, t0)
	r.Marked("n1", true, t0.Add(time.Minute))
	r.Marked("n1", false, t0.Add(2*time.Second))
	r.Marked("n1", false, t0.Add(time.Minute))

	e := onlyEpisode(t, r)
	if e.Node != "n1" || !equalTime(e.Ours.Marked, t0) || !equalTime(e.Upstream.Marked, t0.Add(2*time.Second)) {
		t.Errorf("episode = node %s ours %v upstream %v, want n1 marked at %v and %v", e.Node, e.Ours.Marked,
			e.Upstream.Marked, t0, t0.Add(2*time.Second))
	}
	if e.Ended != nil {
		t.Errorf("Ended = %v, want open", e.Ended)
	}
	if !r.hasMark("n1", true) || !r.hasMark("n1", false) || r.hasMark("n2", true) {
		t.Error("hasMark does not match the marks recorded")
	}
}

// A side's NoExecute taint is its first; the other controller's taint is
// held here only when this one has none.
func TestRecordTainted(t *testing.T) {
	type taint struct {
		ours bool
		key  string
		held string
	}
	tests := []struct {
		name       string
		taints     []taint
		wantOurs   string
		wantUp     string
		wantHeld   string
		wantUpWhen time.Time
	}{
		{
			name:     "upstream alone, held here",
			taints:   []taint{{key: corev1.TaintNodeUnreachable, held: held}},
			wantUp:   corev1.TaintNodeUnreachable,
			wantHeld: held,
		},
		{
			name:   "upstream alone, not held",
			taints: []taint{{key: corev1.TaintNodeUnreachable}},
			wantUp: corev1.TaintNodeUnreachable,
		},
		{
			name:     "ours first, then upstream with a reason",
			taints:   []taint{{ours: true, key: corev1.TaintNodeUnreachable}, {key: corev1.TaintNodeUnreachable, held: held}},
			wantOurs: corev1.TaintNodeUnreachable,
			wantUp:   corev1.TaintNodeUnreachable,
		},
		{
			name:     "upstream held, then ours: the reason stays",
			taints:   []taint{{key: corev1.TaintNodeNotReady, held: held}, {ours: true, key: corev1.TaintNodeUnreachable}},
			wantOurs: corev1.TaintNodeUnreachable,
			wantUp:   corev1.TaintNodeNotReady,
			wantHeld: held,
		},
		{
			name:     "the first reason stays",
			taints:   []taint{{key: corev1.TaintNodeNotReady, held: held}, {key: corev1.TaintNodeUnreachable, held: "other"}},
			wantUp:   corev1.TaintNodeNotReady,
			wantHeld: held,
		},
		{
			name:     "a reason given with ours is not a hold",
			taints:   []taint{{ours: true, key: corev1.TaintNodeNotReady, held: held}},
			wantOurs: corev1.TaintNodeNotReady,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecord()
			for i, tn := range tt.taints {
				r.Tainted("n1", tn.ours, tn.key, t0.Add(time.Duration(i)*time.Minute), tn.held)
			}
			e := onlyEpisode(t, r)
			if e.Ours.NoExecute != tt.wantOurs || e.Upstream.NoExecute != tt.wantUp {
				t.Errorf("NoExecute ours %q upstream %q, want %q and %q", e.Ours.NoExecute, e.Upstream.NoExecute, tt.wantOurs, tt.wantUp)
			}
			if e.NoExecuteHeld != tt.wantHeld {
				t.Errorf("NoExecuteHeld = %q, want %q", e.NoExecuteHeld, tt.wantHeld)
			}
			for _, s := range []Side{e.Ours, e.Upstream} {
				if (s.NoExecute != "") != (s.NoExecuteAdded != nil) {
					t.Errorf("side %+v: NoExecute and NoExecuteAdded disagree", s)
				}
			}
			if r.hasTaint("n1", false) != (tt.wantUp != "") || r.hasTaint("n1", true) != (tt.wantOurs != "") {
				t.Error("hasTaint does not match the taints recorded")
			}
		})
	}
}

// A side's second taint does not move its first.
func TestRecordTaintedKeepsFirst(t *testing.T) {
	r := NewRecord()
	r.Tainted("n1", true, corev1.TaintNodeNotReady, t0, "")
	r.Tainted("n1", true, corev1.TaintNodeUnreachable, t0.Add(time.Minute), "")
	e := onlyEpisode(t, r)
	if e.Ours.NoExecute != corev1.TaintNodeNotReady || !equalTime(e.Ours.NoExecuteAdded, t0) {
		t.Errorf("ours = %s at %v, want %s at %v", e.Ours.NoExecute, e.Ours.NoExecuteAdded, corev1.TaintNodeNotReady, t0)
	}
}

// The other controller's eviction of a pod counts once, however often it
// is seen; the pods listed are bounded, the count is not.
func TestRecordEvicted(t *testing.T) {
	r := NewRecord()
	const pods = maxPodsListed + 5
	for i := range pods {
		// Each pod is seen twice, the second time earlier than any.
		r.Evicted(Eviction{Node: "n1", Pod: fmt.Sprintf("ns/p%d", i), At: t0.Add(time.Duration(i+1) * time.Second), Held: held})
	}
	for i := range pods {
		r.Evicted(Eviction{Node: "n1", Pod: fmt.Sprintf("ns/p%d", i), At: t0, Held: "other"})
	}

	e := onlyEpisode(t, r)
	if e.Upstream.Evicted != pods {
		t.Errorf("Upstream.Evicted = %d, want %d", e.Upstream.Evicted, pods)
	}
	want := make([]string, maxPodsListed)
	for i := range want {
		want[i] = fmt.Sprintf("ns/p%d", i)
	}
	if !slices.Equal(e.Upstream.Pods, want) {
		t.Errorf("Upstream.Pods = %v, want the first %d: %v", e.Upstream.Pods, maxPodsListed, want)
	}
	if !equalTime(e.Upstream.FirstEviction, t0.Add(time.Second)) {
		t.Errorf("Upstream.FirstEviction = %v, want %v: a pod seen again is not evicted again", e.Upstream.FirstEviction, t0.Add(time.Second))
	}
	if e.EvictionsHeld != held {
		t.Errorf("EvictionsHeld = %q, want the first reason %q", e.EvictionsHeld, held)
	}
	if e.Ours.Evicted != 0 || e.Ours.Pods != nil {
		t.Errorf("Ours = %+v, want no evictions", e.Ours)
	}
	if !r.hasPod("n1", "ns/p14", time.Time{}) || r.hasPod("n1", "ns/p99", time.Time{}) || r.hasPod("n2", "ns/p0", time.Time{}) {
		t.Error("hasPod does not match the pods recorded")
	}
}

// The first eviction is the earliest, in whatever order they are recorded;
// this controller's evictions hold nothing back.
func TestRecordEvictedOurs(t *testing.T) {
	r := NewRecord()
	r.Evicted(Eviction{Node: "n1", Pod: "ns/a", Ours: true, At: t0.Add(time.Minute), Held: held})
	r.Evicted(Eviction{Node: "n1", Pod: "ns/b", Ours: true, At: t0})
	e := onlyEpisode(t, r)
	if e.Ours.Evicted != 2 || !slices.Equal(e.Ours.Pods, []string{"ns/a", "ns/b"}) {
		t.Errorf("Ours = %d %v, want 2 [ns/a ns/b]", e.Ours.Evicted, e.Ours.Pods)
	}
	if !equalTime(e.Ours.FirstEviction, t0) {
		t.Errorf("Ours.FirstEviction = %v, want %v", e.Ours.FirstEviction, t0)
	}
	if e.EvictionsHeld != "" {
		t.Errorf("EvictionsHeld = %q, want none for our own evictions", e.EvictionsHeld)
	}
}

// An eviction decided before the node's episode ended but seen after is
// counted in that episode, at its stamp, once however often it is seen,
// and opens no other; one decided after the end, or not stamped, opens a
// new episode, in which a pod of the same name is not taken as counted.
func TestRecordEvictedAfterItsEpisodeEnded(t *testing.T) {
	end := t0.Add(10 * time.Second)
	r := NewRecord()
	r.Marked("n1", false, t0)
	r.Recovered("n1", end)
	late := Eviction{Node: "n1", Pod: "ns/a", At: end.Add(time.Second), Decided: end.Add(-time.Second)}
	r.Evicted(late)
	r.Evicted(late)
	// Stamped in the second the episode ended: it may have been decided
	// before the end, and is taken as so.
	r.Evicted(Eviction{Node: "n1", Pod: "ns/b", At: end.Add(time.Second), Decided: end})
	e := onlyEpisode(t, r)
	if e.Upstream.Evicted != 2 || !equalTime(e.Upstream.FirstEviction, late.Decided) || !equalTime(e.Ended, end) {
		t.Fatalf("episode = %+v, want it still ended at %v, with 2 evictions, the first at its stamp %v", e, end, late.Decided)
	}
	if !r.hasPod("n1", "ns/a", late.Decided) {
		t.Error("hasPod does not find the pod counted in the ended episode")
	}

	r.Evicted(Eviction{Node: "n1", Pod: "ns/c", At: end.Add(2 * time.Second), Decided: end.Add(time.Second)})
	if es := episodes(r); len(es) != 2 || es[1].Ended != nil || es[1].Upstream.Evicted != 1 {
		t.Fatalf("episodes = %+v, want a new open one for the eviction decided after the end", es)
	}
	if r.hasPod("n1", "ns/a", end.Add(time.Second)) {
		t.Error("a pod counted in the ended episode is taken as counted in the new one")
	}

	unstamped := NewRecord()
	unstamped.Marked("n1", false, t0)
	unstamped.Recovered("n1", end)
	unstamped.Evicted(Eviction{Node: "n1", Pod: "ns/a", At: end.Add(time.Second)})
	if es := episodes(unstamped); len(es) != 2 {
		t.Fatalf("episodes = %+v, want a new one for an eviction without a stamp", es)
	}
}

// An episode ends when this controller recovers the node only if the other
// controller's node is healthy too; a deleted node ends it regardless.
func TestRecordRecovered(t *testing.T) {
	tests := []struct {
		name string
		// health are the UpstreamHealth calls made, in order.
		health    []bool
		gone      bool
		wantEnded bool
	}{
		{name: "upstream never reported", wantEnded: true},
		{name: "upstream unhealthy", health: []bool{false}},
		{name: "upstream healthy again", health: []bool{false, true}, wantEnded: true},
		{name: "upstream unhealthy again", health: []bool{true, false}},
		{name: "gone while upstream unhealthy", health: []bool{false}, gone: true, wantEnded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecord()
			r.Marked("n1", true, t0)
			for _, h := range tt.health {
				r.UpstreamHealth("n1", h)
			}
			end := t0.Add(5 * time.Minute)
			if tt.gone {
				r.Gone("n1", end)
			} else {
				r.Recovered("n1", end)
			}
			e := onlyEpisode(t, r)
			switch {
			case tt.wantEnded && !equalTime(e.Ended, end):
				t.Errorf("Ended = %v, want %v", e.Ended, end)
			case !tt.wantEnded && e.Ended != nil:
				t.Errorf("Ended = %v, want the episode open", e.Ended)
			}

			// A mark after it ends opens a new episode; one before adds to it.
			r.Marked("n1", false, t0.Add(10*time.Minute))
			want := 1
			if tt.wantEnded {
				want = 2
			}
			if n := len(episodes(r)); n != want {
				t.Errorf("after a new mark, %d episodes, want %d", n, want)
			}
		})
	}
}

// Recovered, Gone and UpstreamHealth of a node without an open episode
// open none and change nothing.
func TestRecordNoEpisode(t *testing.T) {
	r := NewRecord()
	r.UpstreamHealth("n1", false)
	r.Recovered("n1", t0)
	r.Gone("n1", t0)
	if es, changed := r.Episodes(true); len(es) != 0 || changed {
		t.Errorf("Episodes = %+v, changed %v; want none, unchanged", es, changed)
	}
	// UpstreamHealth before an episode opens is not carried into it.
	r.Marked("n1", true, t0)
	r.Recovered("n1", t0.Add(time.Minute))
	if e := onlyEpisode(t, r); !equalTime(e.Ended, t0.Add(time.Minute)) {
		t.Errorf("Ended = %v, want %v", e.Ended, t0.Add(time.Minute))
	}
}

// Episodes reports a change once for each change when it resets, and
// returns copies, oldest first.
func TestRecordEpisodesChanged(t *testing.T) {
	r := NewRecord()
	if _, changed := r.Episodes(true); changed {
		t.Error("a new record reports a change")
	}
	r.Evicted(Eviction{Node: "n2", Pod: "ns/p", At: t0.Add(time.Minute)})
	r.Marked("n1", true, t0)

	steps := []struct {
		reset, want bool
	}{
		{reset: false, want: true},
		{reset: true, want: true},
		{reset: true, want: false},
		{reset: false, want: false},
	}
	for i, s := range steps {
		es, changed := r.Episodes(s.reset)
		if changed != s.want {
			t.Errorf("call %d, reset %v: changed %v, want %v", i, s.reset, changed, s.want)
		}
		if len(es) != 2 || es[0].Node != "n1" || es[1].Node != "n2" {
			t.Fatalf("call %d: episodes %+v, want n1 (started %v) before n2 (started %v)", i, es, t0, t0.Add(time.Minute))
		}
	}

	r.Recovered("n1", t0.Add(2*time.Minute))
	if _, changed := r.Episodes(true); !changed {
		t.Error("ending an episode is not a change")
	}
	r.Gone("n2", t0.Add(2*time.Minute))
	if _, changed := r.Episodes(true); !changed {
		t.Error("a node gone is not a change")
	}
	r.touch()
	if _, changed := r.Episodes(true); !changed {
		t.Error("touch is not a change")
	}

	es, _ := r.Episodes(false)
	es[1].Upstream.Pods[0] = "ns/changed"
	es[1].Upstream.Evicted = 7
	if again, _ := r.Episodes(false); again[1].Upstream.Pods[0] != "ns/p" || again[1].Upstream.Evicted != 1 {
		t.Errorf("changing what Episodes returned changed the record: %+v", again[1].Upstream)
	}
}

// Episodes restored from an earlier run come before this run's; an open
// one stays open, and takes in what this run recorded of its node before
// the load.
func TestRecordRestore(t *testing.T) {
	ended := t0.Add(-time.Hour)
	loaded := []Episode{
		{Node: "old", Ours: Side{Marked: ptr(t0.Add(-2 * time.Hour))}, Ended: &ended},
		{Node: "a", Upstream: Side{Marked: ptr(t0.Add(-time.Minute))}},
		{Node: "b", Upstream: Side{Marked: ptr(t0.Add(-time.Minute)), NoExecute: corev1.TaintNodeUnreachable,
			NoExecuteAdded: ptr(t0.Add(-time.Minute))}},
	}
	r := NewRecord()
	r.Marked("b", true, t0)
	r.Evicted(Eviction{Node: "b", Pod: "ns/p", At: t0})
	loaded[2].Upstream.Evicted, loaded[2].Upstream.FirstEviction, loaded[2].Upstream.Pods = 1, ptr(t0.Add(-time.Minute)), []string{"ns/p"}
	r.Restore(loaded)

	es := episodes(r)
	if len(es) != 3 {
		t.Fatalf("after Restore, %d episodes, want 3 (this run's b merged into the loaded one): %+v", len(es), es)
	}
	var b Episode
	for _, e := range es {
		if e.Node == "b" {
			b = e
		}
	}
	if !equalTime(b.Ours.Marked, t0) || !equalTime(b.Upstream.Marked, t0.Add(-time.Minute)) ||
		b.Upstream.NoExecute != corev1.TaintNodeUnreachable || b.Upstream.Evicted != 1 {
		t.Errorf("episode of b = %+v, want the loaded one with this run's mark, the pod evicted counted once", b)
	}
	r.Evicted(Eviction{Node: "b", Pod: "ns/p", At: t0.Add(time.Minute)})
	for _, e := range episodes(r) {
		if e.Node == "b" && e.Upstream.Evicted != 1 {
			t.Errorf("a pod the loaded episode lists counted again: %+v", e.Upstream)
		}
	}

	// The loaded open episode of a is added to, and ends.
	if !r.hasMark("a", false) {
		t.Error("the restored open episode of a is not open")
	}
	r.Marked("a", true, t0.Add(time.Minute))
	r.Marked("old", false, t0.Add(time.Minute))
	r.Recovered("a", t0.Add(2*time.Minute))
	es = episodes(r)
	if len(es) != 4 {
		t.Fatalf("%d episodes, want 4: the ended old one is not reopened: %+v", len(es), es)
	}
	for _, e := range es {
		if e.Node != "a" {
			continue
		}
		if !equalTime(e.Upstream.Marked, t0.Add(-time.Minute)) || !equalTime(e.Ours.Marked, t0.Add(time.Minute)) ||
			!equalTime(e.Ended, t0.Add(2*time.Minute)) {
			t.Errorf("episode of a = %+v, want the loaded mark, ours, and ended", e)
		}
	}
}

// The record keeps at most MaxEpisodes, dropping the oldest ended first,
// and never an open one.
func TestRecordTrim(t *testing.T) {
	t.Run("ended dropped first", func(t *testing.T) {
		r := NewRecord()
		r.Marked("open", true, t0)
		for i := range MaxEpisodes + 1 {
			node := fmt.Sprint("n", i)
			r.Marked(node, true, t0.Add(time.Duration(i+1)*time.Second))
			r.Gone(node, t0.Add(time.Hour))
		}
		es := episodes(r)
		if len(es) != MaxEpisodes {
			t.Fatalf("%d episodes, want %d", len(es), MaxEpisodes)
		}
		nodes := make([]string, len(es))
		for i, e := range es {
			nodes[i] = e.Node
		}
		if nodes[0] != "open" || slices.Contains(nodes, "n0") || slices.Contains(nodes, "n1") || nodes[1] != "n2" ||
			nodes[len(nodes)-1] != fmt.Sprint("n", MaxEpisodes) {
			t.Errorf("kept %v ... %v, want open, then n2 to n%d", nodes[:3], nodes[len(nodes)-1], MaxEpisodes)
		}
	})
	t.Run("open kept", func(t *testing.T) {
		r := NewRecord()
		for i := range MaxEpisodes + 2 {
			r.Marked(fmt.Sprint("n", i), true, t0)
		}
		if n := len(episodes(r)); n != MaxEpisodes+2 {
			t.Errorf("%d episodes, want all %d open ones", n, MaxEpisodes+2)
		}
	})
	t.Run("restored", func(t *testing.T) {
		loaded := make([]Episode, MaxEpisodes)
		for i := range loaded {
			end := t0.Add(time.Duration(i) * time.Second)
			loaded[i] = Episode{Node: fmt.Sprint("old", i), Ours: Side{Marked: ptr(end.Add(-time.Second))}, Ended: &end}
		}
		r := NewRecord()
		r.Marked("new", true, t0.Add(time.Hour))
		r.Restore(loaded)
		es := episodes(r)
		if len(es) != MaxEpisodes || es[0].Node != "old1" || es[len(es)-1].Node != "new" {
			t.Errorf("%d episodes from %s to %s, want %d from old1 to new", len(es), es[0].Node, es[len(es)-1].Node, MaxEpisodes)
		}
	})
}

func ptr[T any](v T) *T { return &v }
