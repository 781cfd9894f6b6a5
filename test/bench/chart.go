package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// contenderColor tells the controllers apart in every panel.
var contenderColor = map[string]color.Color{
	"upstream": color.RGBA{R: 0x6b, G: 0x72, B: 0x80, A: 0xff},
	"ours":     color.RGBA{R: 0x2e, G: 0xa0, B: 0x43, A: 0xff},
}

// chart draws four panels into path, whose extension picks the format: the
// distributions of the mark and taint delays, and the steady state's CPU and
// API requests.
func (res *results) chart(path string) error {
	marks, err := res.delayPlot("Mark delay: seen Ready=Unknown", markDelay)
	if err != nil {
		return err
	}
	taints, err := res.delayPlot("Taint delay: seen unreachable:NoExecute", taintDelay)
	if err != nil {
		return err
	}
	cpu, err := res.barPlot("CPU in the steady state", "CPU seconds per minute", func(r *turn) float64 { return r.CPUSecondsPerMinute })
	if err != nil {
		return err
	}
	api, err := res.barPlot("API requests in the steady state", "requests per minute", func(r *turn) float64 { return r.RequestsPerMinute })
	if err != nil {
		return err
	}
	plots := [][]*plot.Plot{{marks, taints}, {cpu, api}}

	const w, h = 12 * vg.Inch, 8 * vg.Inch
	canvas, err := draw.NewFormattedCanvas(w, h, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return fmt.Errorf("chart %s: %w", path, err)
	}
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Inch / 4, PadY: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align(plots, tiles, draw.New(canvas))
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := canvas.WriteTo(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// delayPlot draws, for each controller, the share of stopped nodes whose
// delay was at most x seconds after their deadline.
func (res *results) delayPlot(title string, pick func(*stoppedNode) *float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds after the node's deadline (last heartbeat + grace)"
	p.Y.Label.Text = "share of stopped nodes"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), vg.Points(8)
	for _, r := range res.Runs {
		d := slices.Sorted(slices.Values(r.delays(pick)))
		if len(d) == 0 {
			continue
		}
		pts := plotter.XYs{{X: d[0], Y: 0}}
		for i, v := range d {
			pts = append(pts, plotter.XY{X: v, Y: float64(i+1) / float64(len(d))})
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", title, err)
		}
		line.StepStyle = plotter.PostStep
		line.Color, line.Width = contenderColor[r.Name], vg.Points(2)
		points.Color, points.Shape = contenderColor[r.Name], draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(r.Name, line, points)
	}
	p.Add(plotter.NewGrid())
	// Zero is the deadline itself: keep it in view, and at least a second
	// beyond it.
	p.X.Min, p.X.Max = min(0, p.X.Min), max(1, p.X.Max*1.05)
	return p, nil
}

// barPlot draws one bar per controller.
func (res *results) barPlot(title, unit string, value func(*turn) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	var names []string
	for i, r := range res.Runs {
		bar, err := plotter.NewBarChart(plotter.Values{value(r)}, vg.Inch)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", title, err)
		}
		bar.XMin = float64(i)
		bar.Color = contenderColor[r.Name]
		bar.LineStyle.Width = 0
		p.Add(bar)
		labels, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    []plotter.XY{{X: float64(i), Y: value(r)}},
			Labels: []string{fmt.Sprintf("%.2f", value(r))},
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", title, err)
		}
		p.Add(labels)
		names = append(names, r.Name)
	}
	p.NominalX(names...)
	// Room above the bars for their labels, and an axis even at zero.
	p.Y.Min, p.Y.Max = 0, max(1e-3, p.Y.Max*1.15)
	return p, nil
}
