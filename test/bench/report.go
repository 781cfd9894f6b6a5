package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// results is everything the bench measured, as written to results.json.
type results struct {
	Date       string      `json:"date"`
	Took       string      `json:"took,omitempty"`
	FleetStart string      `json:"fleetStart"`
	Config     benchConfig `json:"config"`
	Machine    machine     `json:"machine"`
	Runs       []*turn     `json:"runs"`
}

// write counts each run's API requests in the audit log, then writes
// results.json, results.md and the chart into dir and prints the table.
func (res *results) write(dir string, audit auditLog) error {
	res.Date = time.Now().UTC().Format(time.RFC3339)
	var errs []error
	if requests, err := audit.read(); err != nil {
		errs = append(errs, err)
	} else {
		for _, r := range res.Runs {
			r.countRequests(requests)
		}
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("encode results: %w", err))...)
	}
	errs = append(errs, writeFile(filepath.Join(dir, "results.json"), b))
	md := res.markdown()
	errs = append(errs, writeFile(filepath.Join(dir, "results.md"), []byte(md)))
	for _, name := range []string{"chart.svg", "chart.png"} {
		errs = append(errs, res.chart(filepath.Join(dir, name)))
	}
	fmt.Printf("\n%s\nResults written to %s\n", md, dir)
	return errors.Join(errs...)
}

// phases says how long each phase of the run took.
func (r *turn) phases() string {
	parts := []string{"serving after " + secs(r.Serving.Sub(r.Started))}
	if !r.SteadyEnd.IsZero() {
		parts = append(parts, "settled "+secs(r.SteadyStart.Sub(r.Serving)), "steady "+secs(r.SteadyEnd.Sub(r.SteadyStart)))
	}
	if !r.AllTainted.IsZero() {
		parts = append(parts, "stop to all tainted "+secs(r.AllTainted.Sub(r.Failed)))
	}
	if !r.Recovered.IsZero() {
		parts = append(parts, "resume to all recovered "+secs(r.Recovered.Sub(r.AllTainted)))
	}
	if !r.Ended.IsZero() {
		parts = append(parts, secs(r.Ended.Sub(r.Started))+" from start to stop")
	}
	return strings.Join(parts, ", ")
}

// countRequests fills the run's request counts from the audit log.
func (r *turn) countRequests(requests []request) {
	user := contender{Name: r.Name}.user()
	r.Requests = map[string]requestCount{}
	if !r.SteadyStart.IsZero() {
		r.Requests["startup"] = count(requests, user, r.Started, r.SteadyStart)
	}
	if !r.SteadyEnd.IsZero() {
		steady := count(requests, user, r.SteadyStart, r.SteadyEnd)
		r.Requests["steady"] = steady
		r.RequestsPerMinute = float64(steady.Total) / r.SteadyEnd.Sub(r.SteadyStart).Minutes()
	}
	if !r.Recovered.IsZero() {
		r.Requests["failure"] = count(requests, user, r.Failed, r.Recovered)
	}
}

func writeFile(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// row is one line of the table: how to read a number from a run and print
// it.
type row struct {
	name string
	// value returns the number, and false when the run has none.
	value func(r *turn) (float64, bool)
	// format prints a value; ratio says whether ours/upstream means
	// anything for it.
	format string
	ratio  bool
}

func always(f func(r *turn) float64) func(r *turn) (float64, bool) {
	return func(r *turn) (float64, bool) { return f(r), true }
}

// delayRow is a row of one statistic of one delay.
func delayRow(name string, pick func(*stoppedNode) *float64, stat func(summary) float64) row {
	return row{name: name, format: "%.2f", ratio: true, value: func(r *turn) (float64, bool) {
		s := summarize(r.delays(pick))
		return stat(s), s.N > 0
	}}
}

func p50(s summary) float64   { return s.P50 }
func p99(s summary) float64   { return s.P99 }
func maxOf(s summary) float64 { return s.Max }

// tableRows are the rows of results.md, in order.
func tableRows(nodes int) []row {
	return []row{
		{name: "nodes", format: "%.0f", value: always(func(*turn) float64 { return float64(nodes) })},
		{name: "nodes stopped", format: "%.0f", value: always(func(r *turn) float64 { return float64(len(r.Stopped)) })},
		{name: "CPU, steady state (s/min)", format: "%.2f", ratio: true, value: always(func(r *turn) float64 { return r.CPUSecondsPerMinute })},
		{name: "peak RSS (MiB)", format: "%.0f", ratio: true, value: always(func(r *turn) float64 { return float64(r.PeakRSSBytes) / (1 << 20) })},
		{name: "API requests/min, steady state", format: "%.1f", ratio: true, value: always(func(r *turn) float64 { return r.RequestsPerMinute })},
		{name: "API requests, failure to recovery", format: "%.0f", ratio: true, value: always(func(r *turn) float64 { return float64(r.Requests["failure"].Total) })},
		delayRow("mark delay p50 (s)", markDelay, p50),
		delayRow("mark delay p99 (s)", markDelay, p99),
		delayRow("mark delay max (s)", markDelay, maxOf),
		delayRow("taint delay p50 (s)", taintDelay, p50),
		delayRow("taint delay p99 (s)", taintDelay, p99),
		delayRow("taint delay max (s)", taintDelay, maxOf),
		delayRow("mark to taint p50 (s)", markToTaint, p50),
		delayRow("mark to taint max (s)", markToTaint, maxOf),
		{name: "stopped nodes not tainted in time", format: "%.0f", value: always(func(r *turn) float64 {
			return float64(len(r.Stopped) - len(r.delays(taintDelay)))
		})},
		{name: "false positives", format: "%.0f", value: always(func(r *turn) float64 { return float64(len(r.FalsePositives)) })},
	}
}

// byName returns the run of the named controller, or nil.
func (res *results) byName(name string) *turn {
	for _, r := range res.Runs {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// markdown renders results.md.
func (res *results) markdown() string {
	var b strings.Builder
	c, m := res.Config, res.Machine
	fmt.Fprintf(&b, "# Node lifecycle: upstream kube-controller-manager and ours, side by side\n\n")
	fmt.Fprintf(&b, "- Date: %s; the whole bench took %s, the fleet's start %s.\n", res.Date, orDash(res.Took), res.FleetStart)
	fmt.Fprintf(&b, "- Machine: %d CPUs, %s, Linux %s, %s; Kubernetes %s (apiserver, etcd and kube-controller-manager built from source).\n",
		m.CPUs, m.CPUModel, m.Kernel, m.GoVersion, m.Kubernetes)
	fmt.Fprintf(&b, "- Fleet: %d simulated nodes in %d zones, %d pods each, default kubelet timings (Lease 40s renewed every 10s, status every 10s, reported on change or every 5m); %v%% of the nodes stopped.\n",
		c.Nodes, c.Zones, c.PodsPerNode, c.StopPercent)
	fmt.Fprintf(&b, "- Flags, identical for both: `%s`.\n", strings.Join(c.Flags, " "))
	if c.Profile {
		b.WriteString("- Each controller was profiled for up to 30s of its steady state (`--profile`), which costs both a little CPU.\n")
	}
	for _, r := range res.Runs {
		fmt.Fprintf(&b, "- %s ran as `%s`; %s.\n", r.Name, strings.Join(r.Command, " "), r.phases())
	}
	b.WriteString("\n| | upstream | ours | ours/upstream |\n|---|---:|---:|---:|\n")
	up, ours := res.byName("upstream"), res.byName("ours")
	for _, row := range tableRows(c.Nodes) {
		uv, uok := value(up, row)
		ov, ook := value(ours, row)
		ratio := "—"
		if row.ratio && uok && ook && uv != 0 {
			ratio = fmt.Sprintf("%.3g", ov/uv)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", row.name, cell(uv, uok, row.format), cell(ov, ook, row.format), ratio)
	}
	b.WriteString(`
- CPU: user and system time of the controller process (/proc/PID/stat) over the steady-state window, per minute.
  Peak RSS: VmHWM at the end of the run.
- API requests: from the kube-apiserver audit log, by each controller's own user, each request once
  (by the time the apiserver received it; a watch counts when it opens).
- Delays are measured by the bench's own watch, from each stopped node's deadline: its last heartbeat
  (the later of its last Lease renewTime and its last status report) plus the grace period.
  Mark: the bench sees Ready=Unknown. Taint: it sees node.kubernetes.io/unreachable:NoExecute.
  The taints are rate-limited to --node-eviction-rate nodes per second and zone, the first at once, so
  with several stopped nodes per zone the taint delay includes that queue; mark to taint shows it.
  p99 is nearest-rank: with fewer than 100 stopped nodes it is the largest.
- False positives: nodes that were not stopped yet were seen not Ready, or with a not-ready or
  unreachable taint, at any time from the controller's start to the end of its run.
`)
	fmt.Fprintf(&b, "\n![latency and cost](chart.svg)\n")
	return b.String()
}

func value(r *turn, rw row) (float64, bool) {
	if r == nil {
		return 0, false
	}
	return rw.value(r)
}

func cell(v float64, ok bool, format string) string {
	if !ok {
		return "—"
	}
	return fmt.Sprintf(format, v)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
