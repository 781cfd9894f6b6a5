// Command costmodel fits the bench's steady-state cost to the size of the
// fleet: it reads the results.json of bench runs, and for each contender
// (and for ours over the floor, the controller's own work) fits its CPU
// and its peak RSS, by least squares over the runs without pods, as a
// constant plus a cost per node; then prints the fit, how far each run
// lies from it (the runs with pods: what their pods and pod writes cost
// beyond it), what it gives for larger fleets, and where the CPU reaches a
// core.
//
//	go run ./costmodel bin/cost-1k0 bin/cost-2k0 ...
//
// (from test/bench). A term that no two runs vary is left out of the fit.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	flag.Usage = func() {
		_, _ = fmt.Fprintln(flag.CommandLine.Output(), "usage: costmodel <bench results directory or results.json>...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var runs []run
	for _, arg := range flag.Args() {
		rs, err := load(arg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "costmodel:", err)
			os.Exit(1)
		}
		runs = append(runs, rs...)
	}
	fmt.Print(report(runs))
}

// run is one contender's run, as the fit sees it.
type run struct {
	Source    string
	Contender string
	Nodes     float64
	Pods      float64
	// Writes is the pod status writes a second the fleet achieved in the
	// steady state.
	Writes float64
	// CPU is CPU seconds a minute in the steady state; RSS peak MiB.
	CPU, RSS float64
}

// results is the part of the bench's results.json the fit reads.
type results struct {
	Config struct {
		Nodes       int `json:"nodes"`
		PodsPerNode int `json:"podsPerNode"`
	} `json:"config"`
	Runs []struct {
		Name                     string  `json:"name"`
		CPUSecondsPerMinute      float64 `json:"cpuSecondsPerMinute"`
		PeakRSSBytes             int64   `json:"peakRSSBytes"`
		PodStatusWritesPerSecond float64 `json:"podStatusWritesPerSecond"`
	} `json:"runs"`
}

// load reads the runs of one bench's results.
func load(path string) ([]run, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "results.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if res.Config.Nodes <= 0 {
		return nil, fmt.Errorf("%s: no node count in its config", path)
	}
	var out []run
	for _, r := range res.Runs {
		if r.CPUSecondsPerMinute <= 0 || r.PeakRSSBytes <= 0 {
			// A run cut short measured nothing.
			continue
		}
		out = append(out, run{Source: filepath.Base(filepath.Dir(path)), Contender: r.Name,
			Nodes: float64(res.Config.Nodes), Pods: float64(res.Config.Nodes * res.Config.PodsPerNode),
			Writes: r.PodStatusWritesPerSecond, CPU: r.CPUSecondsPerMinute, RSS: float64(r.PeakRSSBytes) / (1 << 20)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no complete run", path)
	}
	return out, nil
}

// term is one explanatory variable of the fit.
type term struct {
	Name string
	Of   func(run) float64
}

var terms = []term{
	{"per node", func(r run) float64 { return r.Nodes }},
	{"per pod", func(r run) float64 { return r.Pods }},
	{"per pod write/s", func(r run) float64 { return r.Writes }},
}

// fit is a least-squares fit of one metric of one contender.
type fit struct {
	Terms []term
	// Coef holds the constant, then one coefficient a term.
	Coef []float64
	// R2 is the share of the metric's variance the fit explains.
	R2 float64
}

// predict returns the fit's value for a run.
func (f fit) predict(r run) float64 {
	v := f.Coef[0]
	for i, t := range f.Terms {
		v += f.Coef[i+1] * t.Of(r)
	}
	return v
}

// errTooFew is returned when there are fewer runs than the fit has
// unknowns.
var errTooFew = errors.New("fewer runs than unknowns")

// fitRuns fits metric over the runs with the terms that the runs vary.
func fitRuns(runs []run, metric func(run) float64) (fit, error) {
	var used []term
	for _, t := range terms {
		for _, r := range runs[1:] {
			if t.Of(r) != t.Of(runs[0]) {
				used = append(used, t)
				break
			}
		}
	}
	k := len(used) + 1
	if len(runs) < k {
		return fit{}, fmt.Errorf("%w: %d runs, %d unknowns", errTooFew, len(runs), k)
	}
	x := make([][]float64, len(runs))
	y := make([]float64, len(runs))
	for i, r := range runs {
		x[i] = append([]float64{1}, make([]float64, len(used))...)
		for j, t := range used {
			x[i][j+1] = t.Of(r)
		}
		y[i] = metric(r)
	}
	coef, err := leastSquares(x, y)
	if err != nil {
		return fit{}, err
	}
	f := fit{Terms: used, Coef: coef}
	var mean, total, resid float64
	for _, v := range y {
		mean += v
	}
	mean /= float64(len(y))
	for i, r := range runs {
		total += (y[i] - mean) * (y[i] - mean)
		d := y[i] - f.predict(r)
		resid += d * d
	}
	f.R2 = 1
	if total > 0 {
		f.R2 = 1 - resid/total
	}
	return f, nil
}

// leastSquares solves the normal equations (XᵀX)b = Xᵀy by Gaussian
// elimination with partial pivoting, each column scaled to its largest
// value first so that counts of nodes and pods do not swamp the constant.
func leastSquares(x [][]float64, y []float64) ([]float64, error) {
	k := len(x[0])
	scale := make([]float64, k)
	for j := range k {
		for i := range x {
			scale[j] = max(scale[j], abs(x[i][j]))
		}
		if scale[j] == 0 {
			return nil, errors.New("a term is zero in every run")
		}
	}
	a := make([][]float64, k)
	for r := range k {
		a[r] = make([]float64, k+1)
		for c := range k {
			for i := range x {
				a[r][c] += x[i][r] / scale[r] * x[i][c] / scale[c]
			}
		}
		for i := range x {
			a[r][k] += x[i][r] / scale[r] * y[i]
		}
	}
	for col := range k {
		p := col
		for r := col + 1; r < k; r++ {
			if abs(a[r][col]) > abs(a[p][col]) {
				p = r
			}
		}
		if abs(a[p][col]) < 1e-12 {
			return nil, errors.New("the runs do not tell the terms apart")
		}
		a[col], a[p] = a[p], a[col]
		for r := range k {
			if r == col {
				continue
			}
			m := a[r][col] / a[col][col]
			for c := col; c <= k; c++ {
				a[r][c] -= m * a[col][c]
			}
		}
	}
	out := make([]float64, k)
	for j := range k {
		out[j] = a[j][k] / a[j][j] / scale[j]
	}
	return out, nil
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// metrics are the steady-state costs fitted, each with the level at which
// one replica is taken to stop being enough, or none.
var metrics = []struct {
	Name, Unit string
	Of         func(run) float64
	Limit      float64
	LimitName  string
}{
	{"CPU", "CPU-s/min", func(r run) float64 { return r.CPU }, 60, "one core (60 CPU-s/min)"},
	{"peak RSS", "MiB", func(r run) float64 { return r.RSS }, 0, ""},
}

// reaches returns the number of nodes at which the fit reaches limit, and
// false when it does not grow with them.
func reaches(f fit, limit float64) (float64, bool) {
	// The fit is linear in the number of nodes.
	at0, at1 := f.predict(run{Nodes: 0}), f.predict(run{Nodes: 1})
	if at1 <= at0 {
		return 0, false
	}
	return max(0, (limit-at0)/(at1-at0)), true
}

// overFloor returns, for each source that holds a run of ours and one of
// the floor, what ours costs above the floor: the controller's own work.
func overFloor(runs []run) []run {
	floors := map[string]run{}
	for _, r := range runs {
		if r.Contender == "floor" {
			floors[r.Source] = r
		}
	}
	var out []run
	for _, r := range runs {
		fl, ok := floors[r.Source]
		if r.Contender != "ours" || !ok {
			continue
		}
		d := r
		d.Contender = "ours over the floor"
		d.CPU, d.RSS = r.CPU-fl.CPU, r.RSS-fl.RSS
		out = append(out, d)
	}
	return out
}

// sizes are the numbers of nodes the fit is carried to.
var sizes = []float64{1000, 5000, 10000, 20000, 50000, 100000}

// report returns, per contender and metric, the fit over the runs without
// pods, each run against it, what the runs with pods cost beyond it, and
// the fit carried to larger fleets.
func report(runs []run) string {
	var w strings.Builder
	runs = append(slices.Clone(runs), overFloor(runs)...)
	var names []string
	for _, r := range runs {
		if !slices.Contains(names, r.Contender) {
			names = append(names, r.Contender)
		}
	}
	for _, name := range names {
		var bare, podded []run
		for _, r := range runs {
			switch {
			case r.Contender != name:
			case r.Pods == 0:
				bare = append(bare, r)
			default:
				podded = append(podded, r)
			}
		}
		for _, m := range metrics {
			if len(bare) == 0 {
				fmt.Fprintf(&w, "## %s, %s: no fit: no run without pods\n\n", name, m.Name)
				continue
			}
			f, err := fitRuns(bare, m.Of)
			if err != nil {
				fmt.Fprintf(&w, "## %s, %s: no fit: %v\n\n", name, m.Name, err)
				continue
			}
			fmt.Fprintf(&w, "## %s, %s (%s)\n\n", name, m.Name, m.Unit)
			fmt.Fprintf(&w, "Fit over the runs without pods: %.4g", f.Coef[0])
			for i, t := range f.Terms {
				fmt.Fprintf(&w, " %+.4g %s", f.Coef[i+1], t.Name)
			}
			fmt.Fprintf(&w, " (R² %.3f, %d runs)\n\n", f.R2, len(bare))
			fmt.Fprintln(&w, "| run | nodes | pods | pod writes/s | measured | fit | measured − fit |")
			fmt.Fprintln(&w, "|---|---:|---:|---:|---:|---:|---:|")
			for _, r := range append(slices.Clone(bare), podded...) {
				fmt.Fprintf(&w, "| %s | %.0f | %.0f | %.0f | %.2f | %.2f | %+.2f |\n", r.Source, r.Nodes, r.Pods, r.Writes,
					m.Of(r), f.predict(r), m.Of(r)-f.predict(r))
			}
			fmt.Fprintln(&w)
			fmt.Fprintln(&w, "| nodes | fit |")
			fmt.Fprintln(&w, "|---:|---:|")
			for _, n := range sizes {
				fmt.Fprintf(&w, "| %.0f | %.1f |\n", n, f.predict(run{Nodes: n}))
			}
			fmt.Fprintln(&w)
			if m.Limit > 0 {
				if n, ok := reaches(f, m.Limit); ok {
					fmt.Fprintf(&w, "It reaches %s at about %.0f nodes.\n\n", m.LimitName, n)
				} else {
					fmt.Fprintf(&w, "It does not grow with the fleet: it never reaches %s.\n\n", m.LimitName)
				}
			}
		}
	}
	return w.String()
}
