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
	Date    string      `json:"date"`
	Took    string      `json:"took,omitempty"`
	Config  benchConfig `json:"config"`
	Machine machine     `json:"machine"`
	// Summary has, for each contender, the spread of its numbers over its
	// runs; Ratios the spread of their ratios, round by round.
	Summary []contenderSummary `json:"summary"`
	Ratios  []ratioSummary     `json:"ratios"`
	Runs    []*turn            `json:"runs"`
}

// contenderSummary is how one contender's steady state varied over its runs.
type contenderSummary struct {
	Name                string `json:"name"`
	CPUSecondsPerMinute spread `json:"cpuSecondsPerMinute"`
	PeakRSSMiB          spread `json:"peakRSSMiB"`
	RequestsPerMinute   spread `json:"requestsPerMinute"`
}

// ratioSummary is how the ratio of two contenders' numbers varied over the
// rounds, each round's runs divided by each other.
type ratioSummary struct {
	// Name is "ours/upstream", "ours/floor" or "upstream/floor".
	Name                string `json:"name"`
	CPUSecondsPerMinute spread `json:"cpuSecondsPerMinute"`
	PeakRSS             spread `json:"peakRSS"`
}

// ratioPairs are the ratios reported: ours against upstream, and each
// controller against the floor.
var ratioPairs = [][2]string{{"ours", "upstream"}, {"ours", "floor"}, {"upstream", "floor"}}

// write summarizes the runs, then writes results.json, results.md and the
// chart into dir and prints the table.
func (res *results) write(dir string) error {
	res.Date = time.Now().UTC().Format(time.RFC3339)
	res.Summary, res.Ratios = summarizeRuns(res.Runs)
	var errs []error
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
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

// The steady state's numbers, from a run that has them.
func steadyCPU(r *turn) (float64, bool) { return r.CPUSecondsPerMinute, !r.SteadyEnd.IsZero() }
func peakRSSMiB(r *turn) (float64, bool) {
	return float64(r.PeakRSSBytes) / (1 << 20), r.PeakRSSBytes > 0
}
func steadyRequests(r *turn) (float64, bool) {
	_, counted := r.Requests["steady"]
	return r.RequestsPerMinute, counted
}

// summarizeRuns returns, for each contender that ran, the spread of its steady
// CPU, peak RSS and steady requests over its runs, and the spread of the
// ratios of ratioPairs over the rounds in which both ran.
func summarizeRuns(runs []*turn) ([]contenderSummary, []ratioSummary) {
	var sums []contenderSummary
	for _, name := range contenderNames {
		mine := named(runs, name)
		if len(mine) == 0 {
			continue
		}
		sums = append(sums, contenderSummary{
			Name:                name,
			CPUSecondsPerMinute: spreadOf(valuesOf(mine, steadyCPU)),
			PeakRSSMiB:          spreadOf(valuesOf(mine, peakRSSMiB)),
			RequestsPerMinute:   spreadOf(valuesOf(mine, steadyRequests)),
		})
	}
	var ratios []ratioSummary
	for _, p := range ratioPairs {
		cpu, rss := roundRatios(runs, p[0], p[1], steadyCPU), roundRatios(runs, p[0], p[1], peakRSSMiB)
		if len(cpu) == 0 && len(rss) == 0 {
			continue
		}
		ratios = append(ratios, ratioSummary{Name: p[0] + "/" + p[1], CPUSecondsPerMinute: spreadOf(cpu), PeakRSS: spreadOf(rss)})
	}
	return sums, ratios
}

// roundRatios returns, for each round in which both a and b have the number
// value reads, a's divided by b's.
func roundRatios(runs []*turn, a, b string, value func(*turn) (float64, bool)) []float64 {
	var out []float64
	for _, ra := range named(runs, a) {
		for _, rb := range named(runs, b) {
			if rb.Round != ra.Round {
				continue
			}
			va, aok := value(ra)
			vb, bok := value(rb)
			if aok && bok && vb != 0 {
				out = append(out, va/vb)
			}
		}
	}
	return out
}

// named returns the runs of the named contender, in the order they ran.
func named(runs []*turn, name string) []*turn {
	var out []*turn
	for _, r := range runs {
		if r.Name == name {
			out = append(out, r)
		}
	}
	return out
}

// valuesOf returns the number value reads from each run that has it.
func valuesOf(runs []*turn, value func(*turn) (float64, bool)) []float64 {
	var out []float64
	for _, r := range runs {
		if v, ok := value(r); ok {
			out = append(out, v)
		}
	}
	return out
}

// phases says how long each phase of the run took.
func (r *turn) phases() string {
	parts := []string{"control plane up in " + r.ControlPlaneStart, "fleet Ready in " + r.FleetStart}
	if r.PodCreation != "" {
		parts[1] += " (pods created in " + r.PodCreation + ")"
	}
	parts = append(parts, "serving after "+secs(r.Serving.Sub(r.Started)))
	if !r.SteadyEnd.IsZero() {
		parts = append(parts, "settled "+secs(r.SteadyStart.Sub(r.Serving)), "steady "+secs(r.SteadyEnd.Sub(r.SteadyStart)))
		if r.PodStatusWritesPerSecond > 0 || r.PodStatusWriteFailures > 0 {
			parts = append(parts, fmt.Sprintf("pod status writes %.1f/s in the steady state (%d failed)", r.PodStatusWritesPerSecond, r.PodStatusWriteFailures))
		}
		if r.Kubelets != nil {
			parts = append(parts, r.Kubelets.String())
		}
	}
	if !r.AllTainted.IsZero() {
		parts = append(parts, "stop to the end of the wait "+secs(r.AllTainted.Sub(r.Failed)))
	}
	if stages := r.markStagesSummary(); stages != "" {
		parts = append(parts, stages)
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
	user := r.User
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
		stopped := make([]string, len(r.Stopped))
		for i, n := range r.Stopped {
			stopped[i] = n.Node
		}
		r.MarkRequests, r.RereadRequests = markSplit(requests, user, r.Failed, r.Recovered, stopped)
	}
}

func writeFile(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// row is one line of the table: how to read a number from a contender's
// runs and print it.
type row struct {
	name string
	// value returns the number, and false when the runs have none.
	value func(runs []*turn) (float64, bool)
	// format prints a value; ratio says whether ours/upstream means
	// anything for it, overFloor whether a controller's over the floor's
	// does.
	format           string
	ratio, overFloor bool
}

// median is the median over the runs of what value reads from each.
func median(value func(*turn) (float64, bool)) func([]*turn) (float64, bool) {
	return func(runs []*turn) (float64, bool) {
		s := spreadOf(valuesOf(runs, value))
		return s.Median, s.N > 0
	}
}

// judged is the median over a controller's runs of what value reads, for a
// number only a run with a failure phase has.
func judged(value func(*turn) float64) func([]*turn) (float64, bool) {
	return median(func(r *turn) (float64, bool) { return value(r), r.Judges && !r.Recovered.IsZero() })
}

// total is the sum over a controller's runs of what value reads.
func total(value func(*turn) float64) func([]*turn) (float64, bool) {
	return func(runs []*turn) (float64, bool) {
		sum, some := 0.0, false
		for _, r := range runs {
			if r.Judges {
				sum, some = sum+value(r), true
			}
		}
		return sum, some
	}
}

// delayRow is a row of one statistic of one delay, over the stopped nodes of
// every run.
func delayRow(name string, pick func(*stoppedNode) *float64, stat func(summary) float64) row {
	return row{name: name, format: "%.2f", ratio: true, value: func(runs []*turn) (float64, bool) {
		var all []float64
		for _, r := range runs {
			all = append(all, r.delays(pick)...)
		}
		s := summarize(all)
		return stat(s), s.N > 0
	}}
}

func p50(s summary) float64   { return s.P50 }
func p99(s summary) float64   { return s.P99 }
func maxOf(s summary) float64 { return s.Max }

// podWriteRate is the rate of pod status writes in a run's steady state.
func podWriteRate(r *turn) (float64, bool) { return r.PodStatusWritesPerSecond, !r.SteadyEnd.IsZero() }

// markKinds are the requests a mark is made of: the mark itself, a status
// write, and the live reads that confirm the silence before it.
var markKinds = []string{"patch nodes/status", "update nodes/status", "get nodes", "get leases"}

// markRequests is how many requests each mark was made of in a run (the
// live reads before a node's first status write, and the write), per node
// it was seen to mark.
func markRequests(r *turn) float64 { return perMarked(r, r.MarkRequests) }

// rereadRequests is how many live reads a run sent of the nodes it marked
// after their marks, per node it was seen to mark.
func rereadRequests(r *turn) float64 { return perMarked(r, r.RereadRequests) }

// perMarked is n per stopped node seen marked in the run, 0 without any.
func perMarked(r *turn, n int) float64 {
	marked := 0
	for _, s := range r.Stopped {
		if s.MarkDelay != nil {
			marked++
		}
	}
	if marked == 0 {
		return 0
	}
	return float64(n) / float64(marked)
}

// setting is a row's value for a number of the configuration, the same
// for every contender that ran; ok false prints a dash.
func setting(v float64, ok bool) func([]*turn) (float64, bool) {
	return func(runs []*turn) (float64, bool) { return v, ok && len(runs) > 0 }
}

// tableRows are the rows of results.md, in order. The first ones say what
// the fleet was: a result means little without the load it was measured
// under.
func tableRows(c benchConfig) []row {
	every, err := time.ParseDuration(c.PodStatusEvery)
	churn := err == nil && every > 0
	rows := []row{
		{name: "nodes", format: "%.0f", value: setting(float64(c.Nodes), true)},
		{name: "pods", format: "%.0f", value: setting(float64(c.Nodes*c.PodsPerNode), true)},
		{name: "pod status interval, per pod (s)", format: "%.0f", value: setting(every.Seconds(), churn)},
		{name: "pod status writes/s, steady state, median", format: "%.1f", value: median(podWriteRate)},
		{name: "runs", format: "%.0f", value: func(runs []*turn) (float64, bool) { return float64(len(runs)), len(runs) > 0 }},
		{name: "nodes stopped, per run", format: "%.0f", value: judged(func(r *turn) float64 { return float64(len(r.Stopped)) })},
		{name: "CPU, steady state (s/min), median", format: "%.2f", ratio: true, overFloor: true, value: median(steadyCPU)},
		{name: "peak RSS (MiB), median", format: "%.0f", ratio: true, overFloor: true, value: median(peakRSSMiB)},
		{name: "API requests/min, steady state, median", format: "%.1f", ratio: true, value: median(steadyRequests)},
		{name: "API requests, failure to recovery, median", format: "%.0f", ratio: true,
			value: judged(func(r *turn) float64 { return float64(r.Requests["failure"].Total) })},
		delayRow("mark delay p50 (s)", markDelay, p50),
		delayRow("mark delay p99 (s)", markDelay, p99),
		delayRow("mark delay max (s)", markDelay, maxOf),
		delayRow("mark delay p50, controller's own clock (s)", ownMarkDelay, p50),
		delayRow("mark delay p99, controller's own clock (s)", ownMarkDelay, p99),
		delayRow("taint delay p50 (s)", taintDelay, p50),
		delayRow("taint delay p99 (s)", taintDelay, p99),
		delayRow("taint delay max (s)", taintDelay, maxOf),
		delayRow("mark to taint p50 (s)", markToTaint, p50),
		delayRow("mark to taint max (s)", markToTaint, maxOf),
		{name: "stopped nodes not tainted in time, all runs", format: "%.0f", value: total(func(r *turn) float64 {
			return float64(len(r.Stopped) - len(r.delays(taintDelay)))
		})},
		delayRow("pods NotReady delay p50 (s), last pod of each node", podsDelay, p50),
		delayRow("pods NotReady delay p99 (s), last pod of each node", podsDelay, p99),
		delayRow("pods NotReady delay max (s), last pod of each node", podsDelay, maxOf),
		{name: "stopped nodes' pods never seen NotReady, all runs", format: "%.0f", value: total(func(r *turn) float64 {
			left := 0
			for _, n := range r.Stopped {
				left += n.Pods - n.PodsNotReady
			}
			return float64(left)
		})},
		{name: "requests per mark (live Node and Lease reads, and the status write), median", format: "%.2f", ratio: true, value: judged(markRequests)},
		{name: "live reads per marked node after its mark, median", format: "%.2f", ratio: true, value: judged(rereadRequests)},
		{name: "Lease renewal lag p99, stop to recovery (s), median", format: "%.2f", ratio: true,
			value: judged(func(r *turn) float64 { return r.LeaseLag.P99 })},
		{name: "Lease renewal lag max, stop to recovery (s), median", format: "%.2f", ratio: true,
			value: judged(func(r *turn) float64 { return r.LeaseLag.Max })},
		{name: "false positives, all runs", format: "%.0f", value: total(func(r *turn) float64 { return float64(len(r.FalsePositives)) })},
	}
	if c.StopZone {
		rows = append(rows, zoneRows...)
	}
	return rows
}

// zoneRows are the rows of a dead zone's run: its time against the time the
// apiserver's pod write rate, measured in the same run, allows.
var zoneRows = []row{
	{name: fmt.Sprintf("pod writes/s the apiserver accepted, one client, %d in flight, median", controllerPodWrites), format: "%.0f",
		value: median(func(r *turn) (float64, bool) {
			if r.PodWriteLimit == nil {
				return 0, false
			}
			return r.PodWriteLimit.PerSecond, true
		})},
	{name: "dead zone: first deadline to last pod NotReady (s), median", format: "%.1f", ratio: true,
		value: median(zoneTime(func(took, _ time.Duration) float64 { return took.Seconds() }))},
	{name: "the same at that write rate, at best (s), median", format: "%.1f",
		value: median(zoneTime(func(_, bound time.Duration) float64 { return bound.Seconds() }))},
	{name: "dead zone's time over the write rate's, median", format: "%.2f", ratio: true,
		value: median(zoneTime(func(took, bound time.Duration) float64 { return took.Seconds() / bound.Seconds() }))},
}

// zoneTime reads a number from a run's dead zone times (zoneTimes), at the
// pod write rate measured in the run.
func zoneTime(of func(took, bound time.Duration) float64) func(*turn) (float64, bool) {
	return func(r *turn) (float64, bool) {
		if r.PodWriteLimit == nil {
			return 0, false
		}
		took, bound, ok := zoneTimes(r.Stopped, r.PodWriteLimit.PerSecond)
		if !ok || bound <= 0 {
			return 0, false
		}
		return of(took, bound), true
	}
}

// markdown renders results.md.
func (res *results) markdown() string {
	var b strings.Builder
	c, m := res.Config, res.Machine
	fmt.Fprintf(&b, "# Node lifecycle: upstream kube-controller-manager, ours and the floor, side by side\n\n")
	fmt.Fprintf(&b, "- Date: %s; the whole bench took %s.\n", res.Date, orDash(res.Took))
	fmt.Fprintf(&b, "- Machine: %d CPUs, %s, Linux %s, %s; Kubernetes %s (apiserver, etcd and kube-controller-manager built from source).\n",
		m.CPUs, m.CPUModel, m.Kernel, m.GoVersion, m.Kubernetes)
	stopped := fmt.Sprintf("%v%% of the nodes", c.StopPercent)
	if c.StopZone {
		stopped = fmt.Sprintf("every node of one zone of %d, at once,", c.Zones)
	}
	fmt.Fprintf(&b, "- Fleet: %s; default kubelet timings (Lease 40s renewed every 10s, status every 10s, reported on change or every 5m, that interval shifted at random by up to half after each change, as the kubelet does); %s stopped in each controller's run.\n",
		c.fleetLoad(), stopped)
	if c.Kubelets == kubeletsHollow {
		b.WriteString("- " + hollowNote + "\n")
	}
	fmt.Fprintf(&b, "- Runs: %d round(s). Each run has a fresh control plane and a freshly started fleet of its own; "+
		"the first round runs upstream, ours, floor, and each next round starts one later in that list.\n", c.Runs)
	fmt.Fprintf(&b, "- Flags, identical for both controllers: `%s`. The floor (test/bench/floor) only watches Nodes and the Leases in kube-node-lease, with our controller's client settings; it gets `%s`.\n",
		strings.Join(c.Flags, " "), strings.Join(c.FloorFlags, " "))
	if c.GOGC != "" {
		fmt.Fprintf(&b, "- Every contender ran with GOGC=%s (`--gogc`).\n", c.GOGC)
	}
	b.WriteString("- " + describeFairness(fairness(c.Fairness)) + "\n")
	if c.CacheCheck {
		b.WriteString("- The apiserver's check of each watch cache against etcd and etcd's compaction were left on (`--cache-check`).\n")
	}
	if c.Profile {
		b.WriteString("- Each contender was CPU-profiled over its whole steady state (`--profile`), which costs each a little CPU, and its heap profiled, after a garbage collection, at the end of it.\n")
	}
	for _, r := range res.Runs {
		fmt.Fprintf(&b, "- Round %d, %s (run %d of the round) ran as `%s`; %s.\n", r.Round, r.Name, r.Position, strings.Join(r.Command, " "), r.phases())
	}
	b.WriteString("\n" + res.mainTable(c))
	b.WriteString("\n### Over the runs: min / median / max\n\n" + res.spreadTables())
	b.WriteString(flowTable(res.Runs))
	b.WriteString(`
- CPU: user and system time of the process (/proc/PID/stat) over the steady-state window, per minute.
  Peak RSS: VmHWM at the end of the run (for the floor, which has no failure phase, at the end of its steady state).
  The first table gives the median over the runs, and the ratios of those medians; the second, each
  ratio taken round by round, between the runs of one round.
- API requests: from the kube-apiserver audit log of the run's own control plane, by the contender's
  own user, each request once (by the time the apiserver received it; a watch counts when it opens).
- Delays are measured by the bench's own watch, from each stopped node's deadline: its last heartbeat
  (the later of its last Lease renewTime and its last status report) plus the grace period, over the
  stopped nodes of every run of the controller. Mark: the bench sees Ready=Unknown. Taint: it sees
  node.kubernetes.io/unreachable:NoExecute. The taints are rate-limited to --node-eviction-rate nodes
  per second and zone, the first at once, so with several stopped nodes per zone the taint delay
  includes that queue; mark to taint shows it. The controller's own clock: the delay our controller
  logs for each mark, from the deadline it computed (the heartbeat as its watch delivered it) to the
  write's answer; what the end-to-end figure adds is the watches' delivery, to it and to the bench.
  Each run's line gives that delay's stages, as the same log line splits it. kube-controller-manager
  does not log it. p99 is nearest-rank: with fewer than 100 stopped nodes
  it is the largest. The floor judges no node: no node is stopped in its runs, and "—" stands for
  what it does not do.
- Pods NotReady: the bench watches the stopped nodes' pods from just before the stop, and times,
  from each node's deadline, when the last of its pods is first seen with Ready=False: from then on
  no Service routes to the node. With --stop-zone the run waits until every stopped node is marked
  and each of its pods NotReady, and at least two minutes from the stop: the taints the zone's rate
  allows in that time are counted, the others are "not tainted in time".
- Dead zone (--stop-zone): once every pod of the zone was seen NotReady, and before the nodes
  resumed, the bench wrote each of those pods' status once more, as our controller marks one (a
  strategic merge patch of its Ready condition, bound to its UID), from one client of its own in
  system:masters, without a client-side rate limit, as many at a time as our controller has in
  flight at most; the pods' watch events fall in the contender's failure phase. The dead zone's time runs from the first of its nodes'
  deadlines to the last pod seen NotReady; the time the write rate allows is the least a server
  writing that many pods a second needs, each node's pods from its deadline on: the latest, over
  the deadlines, of the time to it plus the time to write the pods due from it on.
- Per mark: from the stop to the recovery, the requests about a stopped node of the kinds a mark is
  made of (a Node status patch or update, a live Node or Lease read), over the stopped nodes seen
  marked: up to and including the node's first status write (the mark), and after it (live reads
  again: ours reads a node again before writing its pods when their turn comes over a second after
  its mark, in case it came back while its watch lagged).
- Lease renewal lag: from the stop to the recovery, how long after its renewTime (stamped by the
  fleet as it sends the renewal) each renewal of a node that was not stopped reached the bench's
  watch: the apiserver's latency on the kubelets' heartbeats, and the watch's.
- Pods: each pod's status is written as its kubelet reports a container restart (restartCount, lastState,
  running and ready again), a node's pods in turn and the nodes offset, so that the writes come evenly.
  The pods stay Ready: no controller has cause to act on them, but one that watches pods receives each
  write. A stopped node's pods are not written, as its kubelet is gone. The writes/s row is what the
  fleet achieved in each run's steady state. Creating the pods is part of the fleet's start, before the
  contender starts, and out of every measured window.
- False positives: nodes that were not stopped yet were seen not Ready, or with a not-ready or
  unreachable taint, at any time from the controller's start to the end of its run.
`)
	fmt.Fprintf(&b, "\n![latency and cost](chart.svg)\n")
	return b.String()
}

// mainTable is the table of medians and pooled delays, and their ratios.
func (res *results) mainTable(c benchConfig) string {
	var b strings.Builder
	b.WriteString("| | upstream | ours | floor | ours/upstream | ours/floor | upstream/floor |\n|---|---:|---:|---:|---:|---:|---:|\n")
	up, ours, floor := named(res.Runs, "upstream"), named(res.Runs, "ours"), named(res.Runs, "floor")
	for _, rw := range tableRows(c) {
		uv, uok := rw.value(up)
		ov, ook := rw.value(ours)
		fv, fok := rw.value(floor)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", rw.name,
			cell(uv, uok, rw.format), cell(ov, ook, rw.format), cell(fv, fok, rw.format),
			ratioCell(ov, ook, uv, uok, rw.ratio), ratioCell(ov, ook, fv, fok, rw.overFloor), ratioCell(uv, uok, fv, fok, rw.overFloor))
	}
	return b.String()
}

// spreadTables are the spreads of the steady state's numbers per contender,
// and of their ratios round by round.
func (res *results) spreadTables() string {
	var b strings.Builder
	b.WriteString("| | upstream | ours | floor |\n|---|---:|---:|---:|\n")
	sums := map[string]contenderSummary{}
	for _, s := range res.Summary {
		sums[s.Name] = s
	}
	for _, rw := range []struct {
		name, format string
		pick         func(contenderSummary) spread
	}{
		{"CPU, steady state (s/min)", "%.2f", func(s contenderSummary) spread { return s.CPUSecondsPerMinute }},
		{"peak RSS (MiB)", "%.0f", func(s contenderSummary) spread { return s.PeakRSSMiB }},
		{"API requests/min, steady state", "%.1f", func(s contenderSummary) spread { return s.RequestsPerMinute }},
	} {
		fmt.Fprintf(&b, "| %s |", rw.name)
		for _, name := range contenderNames {
			fmt.Fprintf(&b, " %s |", rw.pick(sums[name]).format(rw.format))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| round by round | CPU, steady state | peak RSS |\n|---|---:|---:|\n")
	for _, r := range res.Ratios {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.Name, r.CPUSecondsPerMinute.format("%.3g"), r.PeakRSS.format("%.3g"))
	}
	return b.String()
}

// ratioCell prints a/b when the row has that ratio and both are known.
func ratioCell(a float64, aok bool, b float64, bok bool, has bool) string {
	if !has || !aok || !bok || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3g", a/b)
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
