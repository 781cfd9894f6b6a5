// Command costmodel fits the bench's steady-state cost to the size of the
// fleet: it reads the results.json of bench runs, and for each contender
// (and for ours over the floor, the controller's own work) fits its CPU
// and its peak RSS, by a least-squares line over the runs without pods, as
// a constant plus a cost per node; then prints the fit, how far each run
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

// fit is a least-squares line through one metric of one contender's runs,
// against their nodes.
type fit struct {
	// Base is the metric at no nodes, PerNode what each node adds.
	Base, PerNode float64
	// R2 is the share of the metric's variance the line explains.
	R2 float64
}

// predict returns the fit's value at the given number of nodes.
func (f fit) predict(nodes float64) float64 { return f.Base + f.PerNode*nodes }

// fitRuns fits metric over the runs, which must cover two sizes at least.
func fitRuns(runs []run, metric func(run) float64) (fit, error) {
	n := float64(len(runs))
	var mx, my float64
	for _, r := range runs {
		mx += r.Nodes / n
		my += metric(r) / n
	}
	var sxx, sxy, syy float64
	for _, r := range runs {
		dx, dy := r.Nodes-mx, metric(r)-my
		sxx, sxy, syy = sxx+dx*dx, sxy+dx*dy, syy+dy*dy
	}
	if sxx == 0 {
		return fit{}, fmt.Errorf("%d runs of one size: a line needs two sizes", len(runs))
	}
	f := fit{PerNode: sxy / sxx}
	f.Base = my - f.PerNode*mx
	f.R2 = 1
	if syy > 0 {
		f.R2 = sxy * sxy / (sxx * syy)
	}
	return f, nil
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
	if f.PerNode <= 0 {
		return 0, false
	}
	return max(0, (limit-f.Base)/f.PerNode), true
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
			fmt.Fprintf(&w, "Fit over the runs without pods: %.4g %+.4g per node (R² %.3f, %d runs)\n\n",
				f.Base, f.PerNode, f.R2, len(bare))
			fmt.Fprintln(&w, "| run | nodes | pods | pod writes/s | measured | fit | measured − fit |")
			fmt.Fprintln(&w, "|---|---:|---:|---:|---:|---:|---:|")
			for _, r := range append(slices.Clone(bare), podded...) {
				fmt.Fprintf(&w, "| %s | %.0f | %.0f | %.0f | %.2f | %.2f | %+.2f |\n", r.Source, r.Nodes, r.Pods, r.Writes,
					m.Of(r), f.predict(r.Nodes), m.Of(r)-f.predict(r.Nodes))
			}
			fmt.Fprintln(&w)
			fmt.Fprintln(&w, "| nodes | fit |")
			fmt.Fprintln(&w, "|---:|---:|")
			for _, n := range sizes {
				fmt.Fprintf(&w, "| %.0f | %.1f |\n", n, f.predict(n))
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
