package main

import (
	"fmt"
	"image/color"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// nodePhase is the color of one node in one sample of the timeline.
type nodePhase uint8

const (
	phaseReady   nodePhase = iota // Ready, no NoExecute taint
	phaseUnknown                  // not Ready, not (yet) tainted NoExecute
	phaseTainted                  // tainted NoExecute, pods still there
	phaseEvicted                  // tainted NoExecute, pods deleted
)

var phaseStyle = []struct {
	name string
	fill color.Color
}{
	phaseReady:   {"Ready", color.RGBA{R: 0x2e, G: 0xa0, B: 0x43, A: 0xff}},
	phaseUnknown: {"not Ready (no NoExecute taint)", color.RGBA{R: 0xf5, G: 0x9e, B: 0x0b, A: 0xff}},
	phaseTainted: {"tainted NoExecute", color.RGBA{R: 0xdc, G: 0x26, B: 0x26, A: 0xff}},
	phaseEvicted: {"tainted, pods deleted", color.RGBA{R: 0x6b, G: 0x0f, B: 0x1a, A: 0xff}},
}

func phaseOf(n *nodeState) nodePhase {
	switch {
	case n.noExecute() != nil && n.PodsAlive == 0:
		return phaseEvicted
	case n.noExecute() != nil:
		return phaseTainted
	case !isReady(n):
		return phaseUnknown
	default:
		return phaseReady
	}
}

type sample struct {
	t     float64 // seconds since the demo started
	phase nodePhase
}

type actMark struct {
	t   float64
	key string
}

// timeline records every node's phase at every view tick.
type timeline struct {
	mu    sync.Mutex
	start time.Time
	rows  []string // node names, by zone then name, in first-seen order
	zone  map[string]string
	data  map[string][]sample
	marks []actMark
	last  float64
}

func newTimeline() *timeline {
	return &timeline{zone: map[string]string{}, data: map[string][]sample{}}
}

func (tl *timeline) record(s *snapshot) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	t := s.At.Sub(tl.start).Seconds()
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if _, ok := tl.data[n.Name]; !ok {
			tl.rows = append(tl.rows, n.Name)
			tl.zone[n.Name] = n.Zone
		}
		tl.data[n.Name] = append(tl.data[n.Name], sample{t: t, phase: phaseOf(n)})
	}
	tl.last = t
}

func (tl *timeline) mark(key string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.marks = append(tl.marks, actMark{t: time.Since(tl.start).Seconds(), key: key})
}

// write plots the timeline to path; the format follows its extension.
func (tl *timeline) write(path string, nodes, zones int) error {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.rows) == 0 {
		return fmt.Errorf("no samples recorded")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Node lifecycle demo: %d nodes in %d zones, one row per node", nodes, zones)
	p.X.Label.Text = "seconds since the demo started"
	p.Y.Label.Text = "nodes, by zone"
	n := float64(len(tl.rows))

	grid := &runs{end: tl.last}
	for _, name := range tl.rows {
		grid.rows = append(grid.rows, tl.data[name])
	}
	p.Add(grid)

	// Act boundaries, labeled with the act's letter above the rows.
	var labels plotter.XYLabels
	for i, m := range tl.marks {
		line, err := plotter.NewLine(plotter.XYs{{X: m.t, Y: 0}, {X: m.t, Y: n}})
		if err != nil {
			return fmt.Errorf("act marker: %w", err)
		}
		line.Color = color.Gray{Y: 0x40}
		line.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(line)
		// Acts can start close together: stagger their labels.
		labels.XYs = append(labels.XYs, plotter.XY{X: m.t, Y: n * (1.02 + 0.04*float64(i%2))})
		labels.Labels = append(labels.Labels, "("+m.key+")")
	}
	if len(labels.XYs) > 0 {
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return fmt.Errorf("act labels: %w", err)
		}
		p.Add(l)
	}

	p.Y.Tick.Marker = tl.zoneTicks()
	p.Y.Min, p.Y.Max = 0, n*1.1
	// Room on the right for the legend, clear of the rows.
	p.X.Min, p.X.Max = 0, tl.last*1.32
	p.Legend.Top = true
	p.Legend.XOffs = -vg.Points(24)
	p.Legend.YOffs = -vg.Points(24)
	p.Legend.Padding = vg.Points(2)
	p.Legend.ThumbnailWidth = vg.Points(14)
	for _, st := range phaseStyle {
		p.Legend.Add(st.name, swatch{st.fill})
	}
	if err := p.Save(14*vg.Inch, 6*vg.Inch, path); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}

// zoneTicks labels the middle of each zone's block of rows and marks the
// block boundaries.
func (tl *timeline) zoneTicks() plot.ConstantTicks {
	var ticks plot.ConstantTicks
	first := 0
	for i := 1; i <= len(tl.rows); i++ {
		if i < len(tl.rows) && tl.zone[tl.rows[i]] == tl.zone[tl.rows[first]] {
			continue
		}
		ticks = append(ticks,
			plot.Tick{Value: float64(first)},
			plot.Tick{Value: float64(first+i) / 2, Label: tl.zone[tl.rows[first]]})
		first = i
	}
	return append(ticks, plot.Tick{Value: float64(len(tl.rows))})
}

// runs is a plotter that draws each node as a row of rectangles, one per
// run of samples in the same phase.
type runs struct {
	rows [][]sample
	end  float64
}

// Plot implements plot.Plotter.
func (r *runs) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for y, row := range r.rows {
		y0, y1 := trY(float64(y)+0.08), trY(float64(y)+0.92)
		for i := 0; i < len(row); {
			j := i
			for j < len(row) && row[j].phase == row[i].phase {
				j++
			}
			x1 := r.end
			if j < len(row) {
				x1 = row[j].t
			}
			x0, x1v := trX(row[i].t), trX(x1)
			c.FillPolygon(phaseStyle[row[i].phase].fill, []vg.Point{{X: x0, Y: y0}, {X: x1v, Y: y0}, {X: x1v, Y: y1}, {X: x0, Y: y1}})
			i = j
		}
	}
}

// DataRange implements plot.DataRanger.
func (r *runs) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, r.end, 0, float64(len(r.rows))
}

// swatch is a legend entry's colored square.
type swatch struct{ fill color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.fill, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}
