package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
	corev1 "k8s.io/api/core/v1"
)

func TestAxisEnd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		last  float64
		marks []actMark
		want  float64
	}{
		{name: "last sample after every mark", last: 68, marks: []actMark{{t: 0.3}, {t: 60.5}}, want: 68 * 1.02},
		{name: "mark after the last sample", last: 40, marks: []actMark{{t: 0.3}, {t: 50}}, want: 50 * 1.02},
		{name: "no marks", last: 10, want: 10.2},
		{name: "nothing but time zero", last: 0, marks: []actMark{{t: 0}}, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := axisEnd(tc.last, tc.marks)
			if diff := got - tc.want; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("axisEnd(%v, %v) = %v, want %v", tc.last, tc.marks, got, tc.want)
			}
		})
	}
}

func TestLabelRows(t *testing.T) {
	// Labels 15pt wide on an axis of 13pt per second, as "(a)" is on the
	// demo's 60-node run: they collide when they start less than
	// (15+labelGap)/13 ≈ 1.5s apart.
	const scale, w = vg.Length(13), vg.Length(15)
	for _, tc := range []struct {
		name   string
		xs     []float64
		widths []vg.Length
		want   []int
	}{
		{name: "none"},
		{name: "one", xs: []float64{3}, widths: []vg.Length{w}, want: []int{0}},
		{name: "close", xs: []float64{0.3, 0.8}, widths: []vg.Length{w, w}, want: []int{0, 1}},
		{name: "far", xs: []float64{0.3, 14.3}, widths: []vg.Length{w, w}, want: []int{0, 0}},
		{name: "just clear, gap included", xs: []float64{0, float64(w+labelGap) / 13}, widths: []vg.Length{w, w}, want: []int{0, 0}},
		{name: "three in a row, all close", xs: []float64{1, 1.5, 2}, widths: []vg.Length{w, w, w}, want: []int{0, 1, 2}},
		{name: "three in a row, first and last clear of each other", xs: []float64{1, 2, 3}, widths: []vg.Length{w, w, w}, want: []int{0, 1, 0}},
		{name: "three in a row, all clear", xs: []float64{1, 10, 20}, widths: []vg.Length{w, w, w}, want: []int{0, 0, 0}},
		{name: "a wide label pushes the next two up", xs: []float64{1, 2, 3}, widths: []vg.Length{100, w, w}, want: []int{0, 1, 2}},
		{name: "out of order", xs: []float64{0.8, 20, 0.3}, widths: []vg.Length{w, w, w}, want: []int{1, 0, 0}},
		{name: "the demo's six acts", xs: []float64{0.3, 0.8, 14.3, 14.9, 46, 60.5}, widths: []vg.Length{w, w, w, w, w, w}, want: []int{0, 1, 0, 1, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := labelRows(tc.xs, tc.widths, scale)
			if !slices.Equal(got, tc.want) {
				t.Errorf("labelRows(%v, %v, %v) = %v, want %v", tc.xs, tc.widths, scale, got, tc.want)
			}
			assertNoOverlap(t, tc.xs, tc.widths, scale, got)
		})
	}
}

// assertNoOverlap checks the promise itself, whatever the rows: no two
// labels in one row come closer than labelGap.
func assertNoOverlap(t *testing.T, xs []float64, widths []vg.Length, scale vg.Length, rows []int) {
	t.Helper()
	for i := range xs {
		for j := range xs {
			if i == j || rows[i] != rows[j] || xs[i] > xs[j] {
				continue
			}
			if end, start := vg.Length(xs[i])*scale+widths[i], vg.Length(xs[j])*scale; start < end+labelGap {
				t.Errorf("labels %d and %d share row %d: %d ends at %v, %d starts at %v", i, j, rows[i], i, end, j, start)
			}
		}
	}
}

// TestTimelineWrite draws a made-up run shaped like the demo's into the
// test's artifact directory; `go test -artifacts ./test/demo/` keeps the
// pictures for a look.
func TestTimelineWrite(t *testing.T) {
	tl := newTimeline()
	tl.start = time.Unix(0, 0)
	acts := []actMark{{0.3, "a"}, {0.8, "b"}, {14.3, "c"}, {14.9, "d"}, {46, "e"}, {60.5, "f"}}
	for tick := 0.0; tick <= 68; tick += 0.5 {
		s := &snapshot{At: tl.start.Add(time.Duration(tick * float64(time.Second)))}
		for i := range 60 {
			s.Nodes = append(s.Nodes, madeUpNode(i, tick))
		}
		tl.record(s)
	}
	tl.marks = acts
	dir := t.ArtifactDir()
	for _, name := range []string{"timeline.svg", "timeline.png"} {
		path := filepath.Join(dir, name)
		if err := tl.write(path, 60, 3); err != nil {
			t.Fatalf("write: %v", err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("%s: not written (%v)", path, err)
		}
	}
}

// madeUpNode is node i of 60 at tick seconds into a run like the demo's:
// one node of the first zone dies and recovers, the last zone dies and
// recovers, then every node goes silent and comes back.
func madeUpNode(i int, tick float64) nodeState {
	n := nodeState{Name: fmt.Sprintf("node-%02d", i), Zone: fmt.Sprintf("zone-%c", 'a'+i/20), Ready: corev1.ConditionTrue, PodsAlive: 2}
	dead, taintAt, evictAt := false, 0.0, 0.0
	switch {
	case i == 0 && tick >= 5 && tick < 14.3:
		dead, taintAt, evictAt = true, 6, 14
	case i >= 40 && tick >= 18.5 && tick < 46:
		dead, taintAt, evictAt = true, 20+float64(i-40), 28+float64(i-40)
	case tick >= 50 && tick < 60.5:
		dead = true
	}
	if !dead {
		return n
	}
	n.Ready = corev1.ConditionUnknown
	if taintAt > 0 && tick >= taintAt {
		n.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
	}
	if evictAt > 0 && tick >= evictAt {
		n.PodsAlive = 0
	}
	return n
}
