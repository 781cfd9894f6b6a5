package main

import (
	"cmp"
	"fmt"
	"image/color"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// contenderColor tells the contenders apart in every panel.
var contenderColor = map[string]color.Color{
	"upstream": color.RGBA{R: 0x6b, G: 0x72, B: 0x80, A: 0xff},
	"ours":     color.RGBA{R: 0x2e, G: 0xa0, B: 0x43, A: 0xff},
	"floor":    color.RGBA{R: 0x3b, G: 0x6f, B: 0xc4, A: 0xff},
}

// chart draws six panels into path, whose extension picks the format: the
// distributions of the mark and taint delays over every run, and the median
// and min–max over the runs of the steady state's API requests, CPU and
// peak memory, and of each controller's CPU and memory over the floor's.
func (res *results) chart(path string) error {
	marks, markNotes, err := res.delayPlot("Mark delay: seen Ready=Unknown", markDelay)
	if err != nil {
		return err
	}
	taints, taintNotes, err := res.delayPlot("Taint delay: seen unreachable:NoExecute", taintDelay)
	if err != nil {
		return err
	}
	api, err := spreadPlot("API requests in the steady state", "requests per minute", "%.1f",
		res.contenderBars(func(s contenderSummary) spread { return s.RequestsPerMinute }))
	if err != nil {
		return err
	}
	cpu, err := spreadPlot("CPU in the steady state", "CPU seconds per minute", "%.2f",
		res.contenderBars(func(s contenderSummary) spread { return s.CPUSecondsPerMinute }))
	if err != nil {
		return err
	}
	rss, err := spreadPlot("Peak memory", "peak RSS (MiB)", "%.0f",
		res.contenderBars(func(s contenderSummary) spread { return s.PeakRSSMiB }))
	if err != nil {
		return err
	}
	over, err := spreadPlot("Over the floor, round by round", "ratio to the floor's", "%.2f", res.floorBars())
	if err != nil {
		return err
	}
	addLevel(over, 1)
	plots := [][]*plot.Plot{{marks, taints, api}, {cpu, rss, over}}

	const w, h = 16 * vg.Inch, 8 * vg.Inch
	canvas, err := draw.NewFormattedCanvas(w, h, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return fmt.Errorf("chart %s: %w", path, err)
	}
	// A caption above the panels says what the fleet was, so that the
	// chart, shown alone, still says what it was measured with.
	caption := text.Style{
		Font:    font.From(plot.DefaultFont, vg.Points(12)),
		Handler: plot.DefaultTextHandler,
		Color:   color.Black,
		XAlign:  text.XCenter,
		YAlign:  text.YTop,
	}
	captionHeight := caption.FontExtents().Height + vg.Inch/8
	tiles := draw.Tiles{Rows: 2, Cols: 3, PadX: vg.Inch / 4, PadY: vg.Inch / 4, PadTop: vg.Inch/8 + captionHeight, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	dc := draw.New(canvas)
	dc.FillText(caption, vg.Point{X: w / 2, Y: h - vg.Inch/8}, "Fleet: "+res.Config.fleetLoad())
	canvases := plot.Align(plots, tiles, dc)
	// Where the medians' labels go depends on the drawn width of a second,
	// which only the aligned panels know. Both delay panels get the band
	// of the one that needs more rows, so that their shares stay level.
	rows := max(markNotes.layout(marks, canvases[0][0]), taintNotes.layout(taints, canvases[0][1]))
	markNotes.makeRoom(marks, canvases[0][0], rows)
	taintNotes.makeRoom(taints, canvases[0][1], rows)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	return harness.WriteFile(path, canvas)
}

// delayPlot draws, for each controller, the share of stopped nodes, over
// all its runs, whose delay was at most x seconds after their deadline, and
// marks its median
// with a line and a label in the controller's color, which also tell the
// controllers apart: a legend would sit on a curve in one corner or another.
func (res *results) delayPlot(title string, pick func(*stoppedNode) *float64) (*plot.Plot, *annotations, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds after the node's deadline (last heartbeat + grace)"
	p.Y.Label.Text = "share of stopped nodes"
	// Fixed ticks keep the axis as wide whatever makeRoom adds above 1, so
	// that the panels stay aligned, and keep shares above 1 off the axis.
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25}, {Value: 0.5, Label: "0.5"}, {Value: 0.75}, {Value: 1, Label: "1"}}
	notes := &annotations{top: 1, style: text.Style{
		Font:    font.From(plot.DefaultFont, vg.Points(10)),
		Handler: plot.DefaultTextHandler,
	}}
	var all [][]float64
	for _, name := range contenderNames {
		var d []float64
		for _, r := range named(res.Runs, name) {
			d = append(d, r.delays(pick)...)
		}
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		all = append(all, d)
		pts := plotter.XYs{{X: d[0], Y: 0}}
		for i, v := range d {
			pts = append(pts, plotter.XY{X: v, Y: float64(i+1) / float64(len(d))})
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", title, err)
		}
		line.StepStyle = plotter.PostStep
		line.Color, line.Width = contenderColor[name], vg.Points(2)
		points.Color, points.Shape = contenderColor[name], draw.CircleGlyph{}
		median := summarize(d).P50
		mark, err := plotter.NewLine(plotter.XYs{{X: median, Y: 0}, {X: median, Y: 1}})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", title, err)
		}
		mark.Color, mark.Dashes = contenderColor[name], []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(line, points, mark)
		notes.add(median, fmt.Sprintf("%s p50 %.2fs", name, median), contenderColor[name])
	}
	p.Add(plotter.NewGrid(), notes)
	p.X.Min, p.X.Max = delayRange(all...)
	p.Y.Min, p.Y.Max = 0, 1
	return p, notes, nil
}

// axisMargin is the room after the latest delay, as a share of the axis:
// enough that its point is not cut by the frame, too little to read as data.
const axisMargin = 0.02

// delayRange returns the x axis's range for delays: from the deadline, zero,
// or from the earliest delay if one came before it, to just after the
// latest delay.
func delayRange(delays ...[]float64) (lo, hi float64) {
	var seen bool
	for _, d := range delays {
		for _, v := range d {
			lo, hi, seen = min(lo, v), max(hi, v), true
		}
	}
	if !seen || hi == lo {
		// A zero-width axis cannot be drawn.
		return lo, lo + 1
	}
	return lo, hi + axisMargin*(hi-lo)
}

// annotations is a plotter that writes labels along the x axis in a band
// above the data, each beside the x it names, in rows that keep them apart.
type annotations struct {
	xs     []float64
	texts  []string
	colors []color.Color
	top    float64 // the top of the data, in data units
	style  text.Style
	places []placement // from layout
}

// add writes label in color c beside x.
func (a *annotations) add(x float64, label string, c color.Color) {
	a.xs, a.texts, a.colors = append(a.xs, x), append(a.texts, label), append(a.colors, c)
}

// annotationPad is the room below and above the band of annotations, which
// keeps them clear of the points at the top of the data and of the title.
const annotationPad = vg.Length(5)

// rowHeight is the height of one row of annotations, with room between
// rows.
func (a *annotations) rowHeight() vg.Length {
	return a.style.FontExtents().Height + vg.Points(1)
}

// layout lays the annotations out for p drawn on c, once p's ranges are
// set, and returns how many rows they take.
func (a *annotations) layout(p *plot.Plot, c draw.Canvas) int {
	widths := make([]vg.Length, len(a.texts))
	for i, s := range a.texts {
		widths[i] = a.style.Width(s)
	}
	a.places = layoutAnnotations(a.xs, widths, axisScale{min: p.X.Min, max: p.X.Max, length: p.DataCanvas(c).Size().X})
	rows := 0
	for _, pl := range a.places {
		rows = max(rows, pl.row+1)
	}
	return rows
}

// makeRoom raises p.Y.Max so that a band of rows annotations fits between
// the top of the data and the frame of p drawn on c.
func (a *annotations) makeRoom(p *plot.Plot, c draw.Canvas, rows int) {
	band := 2*annotationPad + vg.Length(rows)*a.rowHeight()
	if h := p.DataCanvas(c).Size().Y; rows > 0 && band < h/2 {
		p.Y.Max = p.Y.Min + (a.top-p.Y.Min)*float64(h/(h-band))
	}
}

// Plot implements plot.Plotter.
func (a *annotations) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	descent := a.style.FontExtents().Descent
	for i, pl := range a.places {
		sty := a.style
		sty.Color = a.colors[i]
		c.FillText(sty, vg.Point{
			X: c.Min.X + pl.left,
			Y: trY(a.top) + annotationPad + descent + vg.Length(pl.row)*a.rowHeight(),
		}, a.texts[i])
	}
}

// axisScale is how an axis is drawn: the data range [min, max] over length.
type axisScale struct {
	min, max float64
	length   vg.Length
}

// at returns where x is drawn, from the axis's start.
func (s axisScale) at(x float64) vg.Length {
	return vg.Length((x-s.min)/(s.max-s.min)) * s.length
}

// placement is where an annotation goes: its row above the data, 0 the
// lowest, and its left edge, from the axis's start.
type placement struct {
	row  int
	left vg.Length
}

// annotationInset is the room between an annotation and the x it names;
// annotationGap the least room between two annotations in one row.
const (
	annotationInset = vg.Length(2)
	annotationGap   = vg.Length(6)
)

// layoutAnnotations places labels widths wide that name the positions xs,
// in data units, on axis. Each starts just right of its x, or ends just left
// of it where it would run past the axis's end, as the slower controller's
// median usually would; then, from left to right, each takes the lowest row
// where it keeps annotationGap from those already there, so that labels of
// close medians are stacked instead of printed over each other.
func layoutAnnotations(xs []float64, widths []vg.Length, axis axisScale) []placement {
	places := make([]placement, len(xs))
	order := make([]int, len(xs))
	for i, x := range xs {
		at := axis.at(x)
		left := at + annotationInset
		if left+widths[i] > axis.length {
			left = max(0, at-annotationInset-widths[i])
		}
		places[i].left = left
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(places[a].left, places[b].left) })
	var ends []vg.Length // the right edge of the last annotation in each row
	for _, i := range order {
		row := 0
		for row < len(ends) && places[i].left < ends[row]+annotationGap {
			row++
		}
		if row == len(ends) {
			ends = append(ends, 0)
		}
		ends[row] = places[i].left + widths[i]
		places[i].row = row
	}
	return places
}

// bar is one bar of a spreadPlot: a median, with a whisker from the least
// to the greatest value.
type bar struct {
	label  string
	color  color.Color
	spread spread
}

// contenderBars returns a bar for each contender that ran, of the spread
// pick reads from its summary.
func (res *results) contenderBars(pick func(contenderSummary) spread) []bar {
	var out []bar
	for _, s := range res.Summary {
		if sp := pick(s); sp.N > 0 {
			out = append(out, bar{label: s.Name, color: contenderColor[s.Name], spread: sp})
		}
	}
	return out
}

// floorBars returns a bar for each controller's CPU and peak memory over the
// floor's, in its color.
func (res *results) floorBars() []bar {
	var out []bar
	for _, what := range []struct {
		name string
		pick func(ratioSummary) spread
	}{
		{"CPU", func(r ratioSummary) spread { return r.CPUSecondsPerMinute }},
		{"RSS", func(r ratioSummary) spread { return r.PeakRSS }},
	} {
		for _, r := range res.Ratios {
			num, den, _ := strings.Cut(r.Name, "/")
			if sp := what.pick(r); den == "floor" && sp.N > 0 {
				out = append(out, bar{label: what.name + ", " + num, color: contenderColor[num], spread: sp})
			}
		}
	}
	return out
}

// spreadPlot draws a bar per median, with a whisker from the least to the
// greatest value and the median written above it.
func spreadPlot(title, unit, format string, bars []bar) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	names := make([]string, len(bars))
	top := 0.0
	for i, b := range bars {
		chart, err := plotter.NewBarChart(plotter.Values{b.spread.Median}, vg.Inch*3/4)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", title, err)
		}
		chart.XMin = float64(i)
		chart.Color = b.color
		chart.LineStyle.Width = 0
		p.Add(chart)
		if b.spread.Max > b.spread.Min {
			whisker, err := plotter.NewYErrorBars(whiskers{
				XYs:     plotter.XYs{{X: float64(i), Y: b.spread.Median}},
				YErrors: plotter.YErrors{{Low: b.spread.Median - b.spread.Min, High: b.spread.Max - b.spread.Median}},
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", title, err)
			}
			whisker.Width = vg.Points(1.5)
			p.Add(whisker)
		}
		labels, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    []plotter.XY{{X: float64(i), Y: b.spread.Max}},
			Labels: []string{fmt.Sprintf(format, b.spread.Median)},
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", title, err)
		}
		labels.TextStyle[0].XAlign = text.XCenter
		labels.Offset.Y = vg.Points(4)
		p.Add(labels)
		names[i] = b.label
		top = max(top, b.spread.Max)
	}
	if len(bars) == 0 {
		// A contender that did not run (--only) leaves a panel empty; it
		// says so rather than draw an axis of no names.
		p.Title.Text += ": not run"
		p.HideX()
		p.Y.Min, p.Y.Max = 0, 1
		return p, nil
	}
	p.NominalX(names...)
	// Room above the whiskers for the labels, and an axis even at zero.
	p.Y.Min, p.Y.Max = 0, max(1e-3, top*1.15)
	return p, nil
}

// whiskers are the min–max ranges of a spreadPlot, around the medians.
type whiskers struct {
	plotter.XYs
	plotter.YErrors
}

// addLevel draws a dashed line across p at y, which the y axis keeps in
// view.
func addLevel(p *plot.Plot, y float64) {
	level := plotter.NewFunction(func(float64) float64 { return y })
	level.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	level.Color = contenderColor["floor"]
	p.Add(level)
	p.Y.Max = max(p.Y.Max, y*1.15)
}
