package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

func TestInRound(t *testing.T) {
	all := []contender{{Name: "upstream"}, {Name: "ours"}, {Name: "floor"}}
	names := func(cs []contender) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	tests := []struct {
		round int
		want  []string
	}{
		{0, []string{"upstream", "ours", "floor"}},
		{1, []string{"ours", "floor", "upstream"}},
		{2, []string{"floor", "upstream", "ours"}},
		{3, []string{"upstream", "ours", "floor"}},
	}
	for _, tt := range tests {
		if got := names(inRound(all, tt.round)); !slices.Equal(got, tt.want) {
			t.Errorf("inRound(round %d) = %v, want %v", tt.round, got, tt.want)
		}
	}
	// Over as many rounds as contenders, each takes each place once.
	for place := range all {
		var seen []string
		for round := range all {
			seen = append(seen, inRound(all, round)[place].Name)
		}
		slices.Sort(seen)
		if want := []string{"floor", "ours", "upstream"}; !slices.Equal(seen, want) {
			t.Errorf("place %d over %d rounds: %v, want each once", place, len(all), seen)
		}
	}
	if got := names(inRound(all[:1], 5)); !slices.Equal(got, []string{"upstream"}) {
		t.Errorf("inRound of one contender = %v", got)
	}
	if inRound(all, 1)[0].Name != "ours" || all[0].Name != "upstream" {
		t.Errorf("inRound changed its input: %v", names(all))
	}
}

// finished is a finished run of a contender in a round, with its steady CPU and
// peak RSS in MiB.
func finished(name string, round int, cpu, rssMiB float64) *turn {
	r := &turn{
		Name: name, Round: round, Judges: name != "floor",
		SteadyEnd: time.Unix(100, 0), CPUSecondsPerMinute: cpu, PeakRSSBytes: int64(rssMiB * (1 << 20)),
		Requests: map[string]requestCount{"steady": {}},
	}
	if r.Judges {
		r.Recovered = time.Unix(200, 0)
		mark, taint := 0.5, 1.5
		r.Stopped = []stoppedNode{{Node: "node-0001", MarkDelay: &mark, TaintDelay: &taint}}
	}
	return r
}

func TestSummarizeRuns(t *testing.T) {
	runs := []*turn{
		finished("upstream", 1, 2, 100), finished("ours", 1, 1, 50), finished("floor", 1, 0.5, 25),
		finished("ours", 2, 1.5, 60), finished("floor", 2, 0.5, 20), finished("upstream", 2, 3, 120),
		// In round 3 the floor did not finish its steady state: the
		// round's ratios to it are left out, not taken as zero.
		finished("floor", 3, 0, 0), finished("upstream", 3, 2.5, 110), finished("ours", 3, 1.2, 55),
	}
	runs[6].SteadyEnd = time.Time{}
	sums, ratios := summarizeRuns(runs)

	want := map[string]contenderSummary{
		"upstream": {Name: "upstream", CPUSecondsPerMinute: spread{N: 3, Min: 2, Median: 2.5, Max: 3}, PeakRSSMiB: spread{N: 3, Min: 100, Median: 110, Max: 120}},
		"ours":     {Name: "ours", CPUSecondsPerMinute: spread{N: 3, Min: 1, Median: 1.2, Max: 1.5}, PeakRSSMiB: spread{N: 3, Min: 50, Median: 55, Max: 60}},
		"floor":    {Name: "floor", CPUSecondsPerMinute: spread{N: 2, Min: 0.5, Median: 0.5, Max: 0.5}, PeakRSSMiB: spread{N: 2, Min: 20, Median: 22.5, Max: 25}},
	}
	if len(sums) != 3 {
		t.Fatalf("summaries: %+v, want one per contender", sums)
	}
	for i, name := range []string{"upstream", "ours", "floor"} {
		got := sums[i]
		got.RequestsPerMinute = spread{}
		if got != want[name] {
			t.Errorf("summary %d = %+v, want %+v", i, got, want[name])
		}
	}

	wantRatios := map[string]struct{ cpu, rss []float64 }{
		"ours/upstream":  {cpu: []float64{0.5, 0.5, 1.2 / 2.5}, rss: []float64{0.5, 0.5, 0.5}},
		"ours/floor":     {cpu: []float64{2, 3}, rss: []float64{2, 3}},
		"upstream/floor": {cpu: []float64{4, 6}, rss: []float64{4, 6}},
	}
	if len(ratios) != len(wantRatios) {
		t.Fatalf("ratios: %+v, want %d", ratios, len(wantRatios))
	}
	for _, r := range ratios {
		w, ok := wantRatios[r.Name]
		if !ok {
			t.Errorf("unexpected ratio %q", r.Name)
			continue
		}
		if !near(r.CPUSecondsPerMinute, spreadOf(w.cpu)) || !near(r.PeakRSS, spreadOf(w.rss)) {
			t.Errorf("%s: CPU %+v, RSS %+v; want CPU %+v, RSS %+v", r.Name, r.CPUSecondsPerMinute, r.PeakRSS, spreadOf(w.cpu), spreadOf(w.rss))
		}
	}
}

func TestSummarizeRunsOfOneContender(t *testing.T) {
	sums, ratios := summarizeRuns([]*turn{finished("ours", 1, 1, 50), finished("ours", 2, 2, 60)})
	if len(sums) != 1 || sums[0].Name != "ours" || sums[0].CPUSecondsPerMinute.Median != 1.5 {
		t.Errorf("summaries = %+v, want ours alone, median CPU 1.5", sums)
	}
	if len(ratios) != 0 {
		t.Errorf("ratios = %+v, want none without a second contender", ratios)
	}
}

func near(a, b spread) bool {
	const eps = 1e-9
	return a.N == b.N && math.Abs(a.Min-b.Min) < eps && math.Abs(a.Median-b.Median) < eps && math.Abs(a.Max-b.Max) < eps
}

func TestMainTable(t *testing.T) {
	res := &results{Runs: []*turn{
		finished("upstream", 1, 2, 100), finished("ours", 1, 1, 50), finished("floor", 1, 0.5, 25),
		finished("ours", 2, 2, 70), finished("floor", 2, 0.5, 25), finished("upstream", 2, 4, 100),
	}}
	res.Summary, res.Ratios = summarizeRuns(res.Runs)
	for _, r := range res.Runs {
		r.PodStatusWritesPerSecond = 1.5
	}
	res.Runs[0].PodStatusWritesPerSecond = 0.5
	table := res.mainTable(describeConfig(config{nodes: 30, podsPerNode: 3, podStatusEvery: time.Minute}))
	for _, want := range []string{
		"| nodes | 30 | 30 | 30 | — | — | — |",
		"| pods | 90 | 90 | 90 | — | — | — |",
		"| pod status interval, per pod (s) | 60 | 60 | 60 | — | — | — |",
		"| pod status writes/s, steady state, median | 1.0 | 1.5 | 1.5 | — | — | — |",
		"| runs | 2 | 2 | 2 | — | — | — |",
		// Medians, and the ratios of the medians.
		"| CPU, steady state (s/min), median | 3.00 | 1.50 | 0.50 | 0.5 | 3 | 6 |",
		"| peak RSS (MiB), median | 100 | 60 | 25 | 0.6 | 2.4 | 4 |",
		// The floor stops no node and marks none: a dash, not a zero.
		"| nodes stopped, per run | 1 | 1 | — | — | — | — |",
		"| mark delay p50 (s) | 0.50 | 0.50 | — | 1 | — | — |",
		"| false positives, all runs | 0 | 0 | — | — | — | — |",
	} {
		if !strings.Contains(table, want+"\n") {
			t.Errorf("the table lacks the line\n%s\n in\n%s", want, table)
		}
	}

	spreads := res.spreadTables()
	for _, want := range []string{
		"| CPU, steady state (s/min) | 2.00 / 3.00 / 4.00 | 1.00 / 1.50 / 2.00 | 0.50 / 0.50 / 0.50 |",
		"| ours/floor | 2 / 3 / 4 | 2 / 2.4 / 2.8 |",
	} {
		if !strings.Contains(spreads, want+"\n") {
			t.Errorf("the spreads lack the line\n%s\n in\n%s", want, spreads)
		}
	}
}

func TestMainTableOfOneContender(t *testing.T) {
	res := &results{Runs: []*turn{finished("floor", 1, 0.5, 25)}}
	res.Summary, res.Ratios = summarizeRuns(res.Runs)
	table := res.mainTable(describeConfig(config{nodes: 30}))
	if want := "| CPU, steady state (s/min), median | — | — | 0.50 | — | — | — |\n"; !strings.Contains(table, want) {
		t.Errorf("the table lacks the line\n%s in\n%s", want, table)
	}
}

func TestMainTableWithoutPodStatusWrites(t *testing.T) {
	res := &results{Runs: []*turn{finished("ours", 1, 1, 50)}}
	for _, c := range []config{{nodes: 30}, {nodes: 30, podStatusEvery: time.Minute}, {nodes: 30, podsPerNode: 3}} {
		table := res.mainTable(describeConfig(c))
		if want := "| pod status interval, per pod (s) | — | — | — | — | — | — |\n"; !strings.Contains(table, want) {
			t.Errorf("%+v: the table lacks the line\n%s in\n%s", c, want, table)
		}
	}
}

func TestFleetLoad(t *testing.T) {
	tests := []struct {
		c    config
		want string
	}{
		{config{nodes: 1000, zones: 3}, "1000 nodes in 3 zones, no pods"},
		{config{nodes: 1000, zones: 3, podStatusEvery: time.Minute}, "1000 nodes in 3 zones, no pods"},
		{config{nodes: 1000, zones: 3, imagesPerNode: 50}, "1000 nodes in 3 zones, each listing 50 images, no pods"},
		{config{nodes: 1000, zones: 3, podsPerNode: 30}, "1000 nodes in 3 zones, 30 pods each (30000 pods), no pod status written after start"},
		{config{nodes: 1000, zones: 3, podsPerNode: 30, podStatusEvery: 5 * time.Minute},
			"1000 nodes in 3 zones, 30 pods each (30000 pods), each pod's status written every 5m0s (100.0 writes/s)"},
		{config{kubelets: kubeletsHollow, nodes: 100, zones: 3, podsPerNode: 10}, "100 hollow kubelets in 3 zones, 10 pods each (1000 pods), their statuses the kubelets' own"},
		{config{kubelets: kubeletsHollow, nodes: 100, zones: 3}, "100 hollow kubelets in 3 zones, no pods"},
	}
	for _, tt := range tests {
		if got := describeConfig(tt.c).fleetLoad(); got != tt.want {
			t.Errorf("fleetLoad(%+v) = %q, want %q", tt.c, got, tt.want)
		}
	}
}

func TestCountPodWrites(t *testing.T) {
	r := &turn{SteadyStart: time.Unix(100, 0), SteadyEnd: time.Unix(160, 0)}
	r.countPodWrites(fleet.PodStatusWrites{Written: 1000, Failed: 2}, fleet.PodStatusWrites{Written: 7000, Failed: 5})
	if r.PodStatusWritesPerSecond != 100 || r.PodStatusWriteFailures != 3 {
		t.Errorf("pod status writes %v/s, %d failed; want 100/s, 3 failed", r.PodStatusWritesPerSecond, r.PodStatusWriteFailures)
	}
	if want := "pod status writes 100.0/s in the steady state (3 failed)"; !strings.Contains(r.phases(), want) {
		t.Errorf("phases %q lack %q", r.phases(), want)
	}
}
