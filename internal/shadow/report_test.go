package shadow

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// at returns t0 moved by d, as a stored episode holds times.
func at(d time.Duration) *time.Time { return ptr(t0.Add(d)) }

// marks returns an episode of node in which ours and upstream marked it
// at the given offsets from t0, nil for a side that did not.
func marks(node string, ours, upstream *time.Duration) Episode {
	e := Episode{Node: node}
	if ours != nil {
		e.Ours.Marked = at(*ours)
	}
	if upstream != nil {
		e.Upstream.Marked = at(*upstream)
	}
	return e
}

func secs(n int) *time.Duration { return ptr(time.Duration(n) * time.Second) }

// The summary counts the marks of both sides and how far ahead ours was.
func TestCompareMarks(t *testing.T) {
	tests := []struct {
		name     string
		episodes []Episode
		want     Summary
	}{
		{name: "none", want: Summary{}},
		{
			name:     "ours 2s earlier",
			episodes: []Episode{marks("n1", secs(0), secs(2))},
			want:     Summary{Episodes: 1, MarkedBoth: 1, MarkedEarlier: 1, MarkLeadMedian: 2, MarkLeadMin: 2, MarkLeadMax: 2},
		},
		{
			name:     "ours 3s later",
			episodes: []Episode{marks("n1", secs(3), secs(0))},
			want:     Summary{Episodes: 1, MarkedBoth: 1, MarkedLater: 1, MarkLeadMedian: -3, MarkLeadMin: -3, MarkLeadMax: -3},
		},
		{
			name:     "same time",
			episodes: []Episode{marks("n1", secs(1), secs(1))},
			want:     Summary{Episodes: 1, MarkedBoth: 1},
		},
		{
			name:     "one side only",
			episodes: []Episode{marks("n1", secs(0), nil), marks("n2", nil, secs(0)), marks("n3", nil, secs(0)), marks("n4", nil, nil)},
			want:     Summary{Episodes: 4, MarkedOursOnly: 1, MarkedUpstream: 2},
		},
		{
			name:     "odd count: the middle lead",
			episodes: []Episode{marks("n1", secs(0), secs(10)), marks("n2", secs(1), secs(0)), marks("n3", secs(0), secs(2))},
			want:     Summary{Episodes: 3, MarkedBoth: 3, MarkedEarlier: 2, MarkedLater: 1, MarkLeadMedian: 2, MarkLeadMin: -1, MarkLeadMax: 10},
		},
		{
			name:     "even count: the mean of the middle two",
			episodes: []Episode{marks("n1", secs(0), secs(10)), marks("n2", secs(0), secs(2)), marks("n3", secs(0), secs(4)), marks("n4", secs(5), secs(0))},
			want:     Summary{Episodes: 4, MarkedBoth: 4, MarkedEarlier: 3, MarkedLater: 1, MarkLeadMedian: 3, MarkLeadMin: -5, MarkLeadMax: 10},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare("kube-system/rec", Stored{Episodes: tt.episodes})
			if !reflect.DeepEqual(r.Summary, tt.want) {
				t.Errorf("Summary =\n %+v\nwant\n %+v", r.Summary, tt.want)
			}
			if len(r.Episodes) != len(tt.episodes) || r.Episodes == nil {
				t.Errorf("report holds %d episodes (nil %v), want %d", len(r.Episodes), r.Episodes == nil, len(tt.episodes))
			}
		})
	}
}

// The summary counts NoExecute taints by who made them, and the other
// controller's that ours held back by why.
func TestCompareTaints(t *testing.T) {
	both := Episode{Node: "both",
		Ours:     Side{NoExecute: corev1.TaintNodeUnreachable, NoExecuteAdded: at(0)},
		Upstream: Side{NoExecute: corev1.TaintNodeUnreachable, NoExecuteAdded: at(time.Second)}}
	heldEp := Episode{Node: "held", Upstream: Side{NoExecute: corev1.TaintNodeUnreachable, NoExecuteAdded: at(0)}, NoExecuteHeld: held}
	heldToo := heldEp
	heldToo.Node = "held-too"
	heldOther := heldEp
	heldOther.Node, heldOther.NoExecuteHeld = "held-other", "no capacity"
	upOnly := Episode{Node: "up", Upstream: Side{NoExecute: corev1.TaintNodeNotReady, NoExecuteAdded: at(0)}}
	oursOnly := Episode{Node: "ours", Ours: Side{NoExecute: corev1.TaintNodeNotReady, NoExecuteAdded: at(0)}}
	// Ours tainted later after all: both, the hold is history.
	bothAfterHold := both
	bothAfterHold.Node, bothAfterHold.NoExecuteHeld = "both-after-hold", held

	r := Compare("rec", Stored{Episodes: []Episode{both, heldEp, heldToo, heldOther, upOnly, oursOnly, bothAfterHold}})
	s := r.Summary
	if s.TaintedBoth != 2 || s.TaintedUpstreamOnly != 1 || s.TaintedOursOnly != 1 {
		t.Errorf("tainted both %d, upstream only %d, ours only %d; want 2, 1, 1", s.TaintedBoth, s.TaintedUpstreamOnly, s.TaintedOursOnly)
	}
	if want := map[string]int{held: 2, "no capacity": 1}; !maps.Equal(s.TaintedUpstreamHeld, want) {
		t.Errorf("TaintedUpstreamHeld = %v, want %v", s.TaintedUpstreamHeld, want)
	}
}

// The summary counts the pods each side evicted, and those the other
// controller evicted beyond ours while ours held evictions back.
func TestCompareEvictions(t *testing.T) {
	eps := []Episode{
		{Node: "held", Upstream: Side{Evicted: 5, FirstEviction: at(0)}, Ours: Side{Evicted: 2, FirstEviction: at(time.Minute)},
			EvictionsHeld: held},
		{Node: "held-all", Upstream: Side{Evicted: 3, FirstEviction: at(0)}, EvictionsHeld: held},
		// Ours caught up: nothing held in the end.
		{Node: "caught-up", Upstream: Side{Evicted: 1, FirstEviction: at(0)}, Ours: Side{Evicted: 1, FirstEviction: at(time.Second)},
			EvictionsHeld: held},
		{Node: "free", Upstream: Side{Evicted: 4, FirstEviction: at(0)}},
	}
	s := Compare("rec", Stored{Episodes: eps}).Summary
	if s.EvictedUpstream != 13 || s.EvictedOurs != 3 {
		t.Errorf("evicted upstream %d ours %d, want 13 and 3", s.EvictedUpstream, s.EvictedOurs)
	}
	if want := map[string]int{held: 6}; !maps.Equal(s.EvictionsHeld, want) {
		t.Errorf("EvictionsHeld = %v, want %v", s.EvictionsHeld, want)
	}
}

// Differences says how the two differed, side by side.
func TestDifferences(t *testing.T) {
	tests := []struct {
		name string
		e    Episode
		want []string
	}{
		{name: "nothing", e: Episode{Node: "n1"}},
		{
			name: "marked earlier",
			e:    marks("n1", secs(0), secs(2)),
			want: []string{"marked 2s earlier than upstream (ours 09:26:53.000Z, upstream 09:26:55.000Z)"},
		},
		{
			name: "marked later",
			e:    marks("n1", ptr(1500*time.Millisecond), secs(0)),
			want: []string{"marked 1.5s later than upstream (ours 09:26:54.500Z, upstream 09:26:53.000Z)"},
		},
		{
			name: "marked together",
			e:    marks("n1", secs(0), secs(0)),
			want: []string{"marked at the same time as upstream (09:26:53.000Z)"},
		},
		{name: "ours only", e: marks("n1", secs(0), nil), want: []string{"ours marked at 09:26:53.000Z; upstream did not"}},
		{name: "upstream only", e: marks("n1", nil, secs(0)), want: []string{"upstream marked at 09:26:53.000Z; ours did not"}},
		{
			name: "tainted both",
			e: Episode{Ours: Side{NoExecute: corev1.TaintNodeUnreachable, NoExecuteAdded: at(0)},
				Upstream: Side{NoExecute: corev1.TaintNodeUnreachable, NoExecuteAdded: at(time.Minute)}},
			want: []string{"tainted NoExecute 1m0s earlier than upstream (ours 09:26:53.000Z, upstream 09:27:53.000Z)"},
		},
		{
			name: "taint held",
			e:    Episode{Upstream: Side{NoExecute: corev1.TaintNodeUnreachable, NoExecuteAdded: at(0)}, NoExecuteHeld: held},
			want: []string{"upstream tainted NoExecute (unreachable) at 09:26:53.000Z; ours held it: partition freeze"},
		},
		{
			name: "taint upstream only",
			e:    Episode{Upstream: Side{NoExecute: corev1.TaintNodeNotReady, NoExecuteAdded: at(0)}},
			want: []string{"upstream tainted NoExecute (not-ready) at 09:26:53.000Z; ours did not"},
		},
		{
			name: "taint ours only",
			e:    Episode{Ours: Side{NoExecute: corev1.TaintNodeNotReady, NoExecuteAdded: at(0)}},
			want: []string{"ours tainted NoExecute (not-ready) at 09:26:53.000Z; upstream did not"},
		},
		{
			name: "evicted both",
			e: Episode{Ours: Side{Evicted: 2, FirstEviction: at(0)}, Upstream: Side{Evicted: 3, FirstEviction: at(time.Second)},
				EvictionsHeld: held},
			want: []string{"evicted 2 pods, upstream 3; first eviction 1s earlier than upstream (ours 09:26:53.000Z, upstream 09:26:54.000Z)"},
		},
		{
			name: "evictions held",
			e:    Episode{Upstream: Side{Evicted: 3, FirstEviction: at(0)}, EvictionsHeld: held},
			want: []string{"upstream evicted 3 pods from 09:26:53.000Z; ours held them: partition freeze"},
		},
		{
			name: "evicted upstream only",
			e:    Episode{Upstream: Side{Evicted: 1, FirstEviction: at(0)}},
			want: []string{"upstream evicted 1 pods from 09:26:53.000Z; ours had not"},
		},
		{
			name: "evicted upstream first",
			e:    Episode{Upstream: Side{Evicted: 1, FirstEviction: at(0)}, EvictionsDue: at(1500 * time.Millisecond)},
			want: []string{"upstream evicted 1 pods from 09:26:53.000Z; ours would have from 09:26:54.500Z, 1.5s after upstream"},
		},
		{
			name: "evicted ours only",
			e:    Episode{Ours: Side{Evicted: 4, FirstEviction: at(0)}},
			want: []string{"ours evicted 4 pods from 09:26:53.000Z; upstream had not"},
		},
		{
			name: "all three, in order",
			e: Episode{Ours: Side{Marked: at(0)}, Upstream: Side{Marked: at(time.Second), NoExecute: corev1.TaintNodeUnreachable,
				NoExecuteAdded: at(time.Minute), Evicted: 1, FirstEviction: at(2 * time.Minute)}, NoExecuteHeld: held, EvictionsHeld: held},
			want: []string{
				"marked 1s earlier than upstream (ours 09:26:53.000Z, upstream 09:26:54.000Z)",
				"upstream tainted NoExecute (unreachable) at 09:27:53.000Z; ours held it: partition freeze",
				"upstream evicted 1 pods from 09:28:53.000Z; ours held them: partition freeze",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Differences(tt.e); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Differences =\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

// sampleStored is a record of three episodes: a node both marked, ours
// first and tainted by upstream while ours held it; a node whose pods
// upstream evicted while ours held them; and one ours marked alone.
func sampleStored() Stored {
	return Stored{
		Updated: t0.Add(time.Hour),
		Episodes: []Episode{
			{Node: "node-a", Ours: Side{Marked: at(0)},
				Upstream:      Side{Marked: at(2 * time.Second), NoExecute: corev1.TaintNodeUnreachable, NoExecuteAdded: at(time.Minute)},
				NoExecuteHeld: held, Ended: at(10 * time.Minute)},
			{Node: "node-b", Upstream: Side{Evicted: 3, FirstEviction: at(5 * time.Minute), Pods: []string{"ns/a", "ns/b", "ns/c"}},
				EvictionsHeld: held},
			{Node: "node-c", Ours: Side{Marked: at(20 * time.Minute)}},
		},
	}
}

// WriteText writes the summary, then a line for each episode.
func TestWriteText(t *testing.T) {
	r := Compare("kube-system/node-lifecycle-dry-run", sampleStored())
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	out := b.String()
	for _, want := range []string{
		"Dry run record kube-system/node-lifecycle-dry-run (written 2025-03-14T10:26:53Z): 3 episodes\n",
		"Marks:      1 by both (ours earlier on 1, later on 0; ours ahead by 2.000s median, 2.000s to 2.000s); 1 by ours only; 0 by upstream only\n",
		"NoExecute:  0 by both; 0 by ours only; 0 by upstream only; held by ours where upstream tainted: partition freeze: 1\n",
		"Evictions:  ours 0, upstream 3; held by ours where upstream evicted: partition freeze: 3\n",
		"NODE",
		"DIFFERENCES",
		"ours held it: partition freeze",
		"ours held them: partition freeze",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, ep := range []struct{ node, started, ended string }{
		{"node-a", "09:26:53.000Z", "09:36:53.000Z"},
		{"node-b", "09:31:53.000Z", "-"},
		{"node-c", "09:46:53.000Z", "-"},
	} {
		found := false
		for _, l := range lines {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == ep.node {
				found = true
				if f[1] != ep.started || f[2] != ep.ended {
					t.Errorf("line of %s = %q, want started %s, ended %s", ep.node, l, ep.started, ep.ended)
				}
			}
		}
		if !found {
			t.Errorf("no line for %s:\n%s", ep.node, out)
		}
	}
}

// A record never written, with no episodes, says so.
func TestWriteTextEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, Compare("ns/rec", Stored{})); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "Dry run record ns/rec (never written): 0 episodes\n") {
		t.Errorf("output does not start with the record line:\n%s", out)
	}
	if strings.Contains(out, "NODE") || strings.Contains(out, "held by ours") || strings.Contains(out, "median") {
		t.Errorf("output of an empty record has episodes, holds or leads:\n%s", out)
	}
}

// errWriter fails every write.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errFailed }

var errFailed = errors.New("write failed")

// A failed write is an error of each writer.
func TestWriteErrors(t *testing.T) {
	r := Compare("rec", sampleStored())
	if err := WriteText(errWriter{}, r); err == nil {
		t.Error("WriteText to a failing writer: no error")
	}
	if err := WriteJSON(errWriter{}, r); err == nil {
		t.Error("WriteJSON to a failing writer: no error")
	}
}

// WriteJSON writes valid JSON that reads back as the report.
func TestWriteJSON(t *testing.T) {
	r := Compare("kube-system/node-lifecycle-dry-run", sampleStored())
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	if !json.Valid(b.Bytes()) {
		t.Fatalf("WriteJSON wrote invalid JSON:\n%s", b.String())
	}

	var raw map[string]any
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	summary, ok := raw["summary"].(map[string]any)
	if !ok {
		t.Fatalf("no summary object in %s", b.String())
	}
	for field, want := range map[string]float64{"episodes": 3, "markedBoth": 1, "markedEarlier": 1, "markLeadMedianSeconds": 2,
		"markedOursOnly": 1, "evictedUpstream": 3} {
		if got, ok := summary[field].(float64); !ok || got != want {
			t.Errorf("summary.%s = %v, want %v", field, summary[field], want)
		}
	}
	if heldCounts, ok := summary["taintedUpstreamHeld"].(map[string]any); !ok || heldCounts[held] != float64(1) {
		t.Errorf("summary.taintedUpstreamHeld = %v, want partition freeze: 1", summary["taintedUpstreamHeld"])
	}
	eps, ok := raw["episodes"].([]any)
	if !ok || len(eps) != 3 {
		t.Fatalf("episodes = %v, want a list of 3", raw["episodes"])
	}
	first, _ := eps[0].(map[string]any)
	if first["node"] != "node-a" || first["noExecuteHeld"] != held {
		t.Errorf("episodes[0] = %v, want node-a held by %s", first, held)
	}
	if _, ok := first["differences"].([]any); !ok {
		t.Errorf("episodes[0].differences = %v, want a list", first["differences"])
	}
	if raw["record"] != "kube-system/node-lifecycle-dry-run" || raw["updated"] != "2025-03-14T10:26:53Z" {
		t.Errorf("record %v updated %v", raw["record"], raw["updated"])
	}

	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("unmarshal into Report: %v", err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("report read back differs:\n got %+v\nwant %+v", back, r)
	}
}

// An empty report has an empty list of episodes, not null, and no
// updated time.
func TestWriteJSONEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, Compare("rec", Stored{})); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if eps, ok := raw["episodes"].([]any); !ok || len(eps) != 0 {
		t.Errorf("episodes = %#v, want []", raw["episodes"])
	}
	if _, ok := raw["updated"]; ok {
		t.Errorf("updated = %v, want it left out", raw["updated"])
	}
}
