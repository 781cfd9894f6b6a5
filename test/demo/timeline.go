package main

import (
	"cmp"
	"fmt"
	"image/color"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
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
	canvas, err := draw.NewFormattedCanvas(14*vg.Inch, 6*vg.Inch, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return fmt.Errorf("timeline %s: %w", path, err)
	}
	if err := tl.draw(draw.New(canvas), nodes, zones); err != nil {
		return err
	}
	return harness.WriteFile(path, canvas)
}

// draw draws the timeline on c: the rows and act labels on the left, the
// legend in a column of its own on the right, where it hides no row however
// the run ends.
func (tl *timeline) draw(c draw.Canvas, nodes, zones int) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Node lifecycle demo: %d nodes in %d zones, one row per node", nodes, zones)
	p.X.Label.Text = "seconds since the demo started"
	p.Y.Label.Text = "nodes, by zone"
	p.Y.Tick.Marker = tl.zoneTicks()
	n := float64(len(tl.rows))

	grid := &runs{end: tl.last}
	for _, name := range tl.rows {
		grid.rows = append(grid.rows, tl.data[name])
	}
	p.Add(grid)

	labels := &actLabels{base: n, style: text.Style{
		Color:   color.Black,
		Font:    font.From(plot.DefaultFont, vg.Points(11)),
		Handler: plot.DefaultTextHandler,
	}}
	var widths []vg.Length
	for _, m := range tl.marks {
		label := "(" + m.key + ")"
		line, err := plotter.NewLine(plotter.XYs{{X: m.t, Y: 0}, {X: m.t, Y: n}})
		if err != nil {
			return fmt.Errorf("act marker: %w", err)
		}
		line.Color = color.Gray{Y: 0x40}
		line.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(line)
		labels.xs = append(labels.xs, m.t)
		labels.texts = append(labels.texts, label)
		widths = append(widths, labels.style.Width(label))
	}
	p.Add(labels)

	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(2)
	legend.ThumbnailWidth = vg.Points(14)
	for _, st := range phaseStyle {
		legend.Add(st.name, swatch{st.fill})
	}
	const legendGap = 18 // points between the rows' frame and the legend
	area := draw.Crop(c, 0, -(legend.Rectangle(c).Size().X + 2*legendGap), 0, 0)

	// The label rows depend on how many points a second takes, which only
	// the drawn plot knows; the plot's data area does not depend on the
	// ranges, so ask it before setting the band above the rows.
	p.X.Min, p.X.Max = 0, axisEnd(tl.last, tl.marks)
	p.Y.Min, p.Y.Max = 0, n
	data := p.DataCanvas(area)
	labels.rows = labelRows(labels.xs, widths, data.Size().X/vg.Length(p.X.Max-p.X.Min))
	band := 2*labelPad + vg.Length(slices.Max(append(labels.rows, -1))+1)*labels.rowHeight()
	// Past half the height the rows would be squeezed thin; there, rather
	// let the top labels run into the title.
	if h := data.Size().Y; band < h/2 {
		p.Y.Max = n * float64(h/(h-band))
	}
	p.Draw(area)

	_, trY := p.Transforms(&data)
	legend.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: area.Max.X + legendGap, Y: data.Min.Y},
		Max: vg.Point{X: c.Max.X, Y: trY(n)},
	}})
	return nil
}

// axisMargin is the room after the last sample or act mark, as a share of
// the time shown: enough that the last runs do not touch the frame, too
// little to read as time that was recorded.
const axisMargin = 0.02

// axisEnd returns where the time axis, which starts at zero, ends: just
// after the last sample or act mark, whichever is later. A mark can be later
// than the last sample when the demo is cut short.
func axisEnd(last float64, marks []actMark) float64 {
	end := last
	for _, m := range marks {
		end = max(end, m.t)
	}
	if end <= 0 {
		// A zero-width axis cannot be drawn.
		return 1
	}
	return end * (1 + axisMargin)
}

// labelPad is the room below and above the band of act labels, which keeps
// them off the top row of nodes and off the title; labelInset the room
// between a label and its act's boundary, which keeps it off the dashes;
// labelGap the least room between two labels in one row.
const (
	labelPad   = vg.Length(3)
	labelInset = vg.Length(1.5)
	labelGap   = vg.Length(4)
)

// labelRows lays out labels that start at xs, in data units, and are widths
// wide, on an axis of scale per data unit. Going from left to right, it puts
// each label in the lowest row, 0 being nearest the data, where it keeps
// labelGap from the labels already there, so that labels of acts that start
// close together are stacked instead of printed over each other.
func labelRows(xs []float64, widths []vg.Length, scale vg.Length) []int {
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	rows := make([]int, len(xs))
	var ends []vg.Length // the right edge of the last label in each row
	for _, i := range order {
		left := vg.Length(xs[i]) * scale
		row := 0
		for row < len(ends) && left < ends[row]+labelGap {
			row++
		}
		if row == len(ends) {
			ends = append(ends, 0)
		}
		ends[row] = left + widths[i]
		rows[i] = row
	}
	return rows
}

// actLabels is a plotter that writes each act's letter just right of the
// act's boundary, in the band above the rows, in the row labelRows gave it.
type actLabels struct {
	xs    []float64
	texts []string
	rows  []int
	base  float64 // the top of the rows, in data units
	style text.Style
}

// rowHeight is the height of one row of labels, with room between rows.
func (a *actLabels) rowHeight() vg.Length {
	return a.style.FontExtents().Height + vg.Points(1)
}

// Plot implements plot.Plotter.
func (a *actLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	descent := a.style.FontExtents().Descent
	for i, s := range a.texts {
		pt := vg.Point{
			X: trX(a.xs[i]) + labelInset,
			Y: trY(a.base) + labelPad + descent + vg.Length(a.rows[i])*a.rowHeight(),
		}
		c.FillText(a.style, pt, s)
	}
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
