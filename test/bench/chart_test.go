package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
)

func TestDelayRange(t *testing.T) {
	tests := []struct {
		name           string
		delays         [][]float64
		wantLo, wantHi float64
	}{
		{name: "none", wantLo: 0, wantHi: 1},
		{name: "one controller", delays: [][]float64{{3.4, 2, 3}}, wantLo: 0, wantHi: 3.4 * 1.02},
		{name: "the slower controller ends the axis", delays: [][]float64{{3.4}, {0.5, 0.6}}, wantLo: 0, wantHi: 3.4 * 1.02},
		{name: "small delays keep a short axis", delays: [][]float64{{0.1, 0.2}}, wantLo: 0, wantHi: 0.2 * 1.02},
		{name: "a delay before the deadline", delays: [][]float64{{-1, 3}}, wantLo: -1, wantHi: 3 + 4*0.02},
		{name: "every delay zero", delays: [][]float64{{0, 0}}, wantLo: 0, wantHi: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := delayRange(tt.delays...)
			if math.Abs(lo-tt.wantLo) > 1e-9 || math.Abs(hi-tt.wantHi) > 1e-9 {
				t.Errorf("delayRange(%v) = [%v, %v], want [%v, %v]", tt.delays, lo, hi, tt.wantLo, tt.wantHi)
			}
		})
	}
}

func TestLayoutAnnotations(t *testing.T) {
	// An axis of 0 to 4s drawn 400pt long, 100 points a second, and labels
	// 80pt wide, as "upstream p50 3.40s" is.
	axis := axisScale{min: 0, max: 4, length: 400}
	const w = vg.Length(80)
	tests := []struct {
		name   string
		xs     []float64
		widths []vg.Length
		want   []placement
	}{
		{name: "none", want: []placement{}},
		{name: "far", xs: []float64{0.5, 2}, widths: []vg.Length{w, w},
			want: []placement{{row: 0, left: 52}, {row: 0, left: 202}}},
		{name: "close", xs: []float64{0.5, 0.7}, widths: []vg.Length{w, w},
			want: []placement{{row: 0, left: 52}, {row: 1, left: 72}}},
		{name: "just clear, gap included", xs: []float64{0.5, 0.5 + float64(w+annotationGap)/100}, widths: []vg.Length{w, w},
			want: []placement{{row: 0, left: 52}, {row: 0, left: 52 + w + annotationGap}}},
		{name: "three in a row, all close", xs: []float64{0.5, 0.6, 0.7}, widths: []vg.Length{w, w, w},
			want: []placement{{row: 0, left: 52}, {row: 1, left: 62}, {row: 2, left: 72}}},
		{name: "three in a row, first and last clear of each other", xs: []float64{0.5, 1, 1.5}, widths: []vg.Length{w, w, w},
			want: []placement{{row: 0, left: 52}, {row: 1, left: 102}, {row: 0, left: 152}}},
		{name: "three in a row, all clear", xs: []float64{0.5, 1.5, 2.5}, widths: []vg.Length{w, w, w},
			want: []placement{{row: 0, left: 52}, {row: 0, left: 152}, {row: 0, left: 252}}},
		{name: "at the axis's end it ends at its x", xs: []float64{3.9}, widths: []vg.Length{w},
			want: []placement{{row: 0, left: 390 - 2 - w}}},
		{name: "ending at its x, it clears a label to its right", xs: []float64{3.9, 2.1}, widths: []vg.Length{w, w},
			want: []placement{{row: 0, left: 308}, {row: 0, left: 212}}},
		{name: "ending at its x, it meets a label to its left", xs: []float64{3.9, 3}, widths: []vg.Length{w, w},
			want: []placement{{row: 1, left: 308}, {row: 0, left: 302}}},
		{name: "wider than the axis", xs: []float64{0.1}, widths: []vg.Length{500},
			want: []placement{{row: 0, left: 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := layoutAnnotations(tt.xs, tt.widths, axis)
			if len(got) != len(tt.want) {
				t.Fatalf("layoutAnnotations(%v, %v) = %+v, want %+v", tt.xs, tt.widths, got, tt.want)
			}
			for i := range got {
				if got[i].row != tt.want[i].row || math.Abs(float64(got[i].left-tt.want[i].left)) > 1e-9 {
					t.Errorf("layoutAnnotations(%v, %v) = %+v, want %+v", tt.xs, tt.widths, got, tt.want)
					break
				}
			}
			// Whatever the rows, no two labels in one row come closer than
			// annotationGap, and each stays on the axis where it fits.
			for i := range got {
				if got[i].left < 0 || (tt.widths[i] <= axis.length && got[i].left+tt.widths[i] > axis.length) {
					t.Errorf("label %d at %v, %v wide, leaves the axis", i, got[i].left, tt.widths[i])
				}
				for j := range got {
					if i == j || got[i].row != got[j].row || got[i].left > got[j].left {
						continue
					}
					if got[j].left < got[i].left+tt.widths[i]+annotationGap {
						t.Errorf("labels %d and %d share row %d and overlap: %+v", i, j, got[i].row, got)
					}
				}
			}
		})
	}
}

// TestChart draws the chart of made-up results into the test's artifact
// directory; `go test -artifacts ./test/bench/` keeps it for a look. With
// BENCH_RESULTS naming a results.json, it draws those results instead, to
// see a change to the chart without running the bench again.
func TestChart(t *testing.T) {
	res := madeUpResults()
	if path := os.Getenv("BENCH_RESULTS"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		res = &results{}
		if err := json.Unmarshal(b, res); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	dir := t.ArtifactDir()
	for _, name := range []string{"chart.svg", "chart.png"} {
		path := filepath.Join(dir, name)
		if err := res.chart(path); err != nil {
			t.Fatalf("chart: %v", err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("%s: not written (%v)", path, err)
		}
	}
}

// madeUpResults are results shaped like a bench run's: two rounds of the
// three contenders, ten stopped nodes in each controller's run, upstream up
// to a monitor period late, ours within a fraction of a second, with
// medians close enough in the taint delay for their labels to meet.
func madeUpResults() *results {
	res := &results{Config: describeConfig(config{nodes: 1000, zones: 3, podsPerNode: 30, podStatusEvery: 5 * time.Minute})}
	for round := 1; round <= 2; round++ {
		jitter := 0.05 * float64(round)
		upstream := &turn{Name: "upstream", Round: round, Judges: true, CPUSecondsPerMinute: 0.32 + jitter, RequestsPerMinute: 41, PeakRSSBytes: 111 << 20}
		ours := &turn{Name: "ours", Round: round, Judges: true, CPUSecondsPerMinute: 0.21 + jitter, RequestsPerMinute: 12, PeakRSSBytes: 55 << 20}
		floor := &turn{Name: "floor", Round: round, CPUSecondsPerMinute: 0.15 + jitter, PeakRSSBytes: 40 << 20}
		for _, r := range []*turn{upstream, ours, floor} {
			r.SteadyEnd = time.Unix(100, 0)
			r.Requests = map[string]requestCount{"steady": {}}
		}
		for i := range 10 {
			mark, taint := 0.4+0.45*float64(i), 0.5+0.45*float64(i)
			upstream.Stopped = append(upstream.Stopped, stoppedNode{MarkDelay: &mark, TaintDelay: &taint})
			ourMark, ourTaint := 0.05+0.02*float64(i), 1.6+0.3*float64(i)
			ours.Stopped = append(ours.Stopped, stoppedNode{MarkDelay: &ourMark, TaintDelay: &ourTaint})
		}
		res.Runs = append(res.Runs, upstream, ours, floor)
	}
	res.Summary, res.Ratios = summarizeRuns(res.Runs)
	return res
}

func TestFloorBars(t *testing.T) {
	bars := madeUpResults().floorBars()
	var labels []string
	for _, b := range bars {
		labels = append(labels, b.label)
	}
	if want := []string{"CPU, ours", "CPU, upstream", "RSS, ours", "RSS, upstream"}; !slices.Equal(labels, want) {
		t.Errorf("floor bars %v, want %v", labels, want)
	}
	// Round 1: ours 0.26 over the floor's 0.2; round 2: 0.31 over 0.25.
	if got, want := bars[0].spread, spreadOf([]float64{0.26 / 0.2, 0.31 / 0.25}); !near(got, want) {
		t.Errorf("CPU, ours over the floor: %+v, want %+v", got, want)
	}
	if got := bars[3].spread; got.N != 2 || math.Abs(got.Median-111.0/40) > 1e-9 {
		t.Errorf("RSS, upstream over the floor: %+v, want 2 rounds of %v", got, 111.0/40)
	}
}

func TestContenderBarsSkipWhatNoRunHas(t *testing.T) {
	res := madeUpResults()
	bars := res.contenderBars(func(s contenderSummary) spread {
		if s.Name == "floor" {
			return spread{}
		}
		return s.CPUSecondsPerMinute
	})
	if len(bars) != 2 || bars[0].label != "upstream" || bars[1].label != "ours" {
		t.Errorf("bars %+v, want upstream and ours only", bars)
	}
}

func TestSpreadPlotWithoutBars(t *testing.T) {
	// --only=ours runs no floor: the panel of ratios to it has no bar.
	p, err := spreadPlot("Over the floor", "ratio", "%.2f", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Title.Text != "Over the floor: not run" {
		t.Errorf("title %q", p.Title.Text)
	}
}
