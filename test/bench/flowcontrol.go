package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// flowUse is what one flow schema's requests met at the apiserver's
// priority and fairness over a span of a run, from its metrics.
type flowUse struct {
	FlowSchema    string  `json:"flowSchema"`
	PriorityLevel string  `json:"priorityLevel"`
	Dispatched    float64 `json:"dispatched"`
	Rejected      float64 `json:"rejected"`
	// WaitMean is the mean time, in seconds, a dispatched request waited
	// in its queue for a seat; WaitP99 the upper bound of the histogram
	// bucket its 99th percentile falls in ("+Inf" past the last), and
	// WaitMax that of the highest bucket any request waited in.
	WaitMean float64 `json:"waitMeanSeconds"`
	WaitP99  string  `json:"waitP99Seconds"`
	WaitMax  string  `json:"waitMaxSeconds"`
}

// Metric names of priority and fairness.
const (
	dispatchedMetric = "apiserver_flowcontrol_dispatched_requests_total"
	rejectedMetric   = "apiserver_flowcontrol_rejected_requests_total"
	waitMetric       = "apiserver_flowcontrol_request_wait_duration_seconds"
)

// flowSnapshot is the apiserver's priority and fairness metrics at one
// moment, cumulative since its start, by flow schema and priority level.
type flowSnapshot map[[2]string]*flowRaw

// flowRaw is one flow schema's cumulative counts.
type flowRaw struct {
	dispatched, rejected float64
	wait                 waitHistogram
}

// scrapeFlowControl reads the apiserver's priority and fairness metrics,
// as its admin cfg.
func scrapeFlowControl(ctx context.Context, cfg *rest.Config) (flowSnapshot, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for the apiserver's metrics: %w", err)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("get the apiserver's /metrics: %w", err)
	}
	return parseFlowControl(raw)
}

// parseFlowControl sums the priority and fairness metrics of the text
// exposition raw by flow schema and priority level.
func parseFlowControl(raw []byte) (flowSnapshot, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse the apiserver's metrics: %w", err)
	}
	snap := flowSnapshot{}
	of := func(m *dto.Metric) *flowRaw {
		key := [2]string{label(m, "flow_schema"), label(m, "priority_level")}
		f, ok := snap[key]
		if !ok {
			f = &flowRaw{}
			snap[key] = f
		}
		return f
	}
	for _, m := range families[dispatchedMetric].GetMetric() {
		of(m).dispatched += m.GetCounter().GetValue()
	}
	for _, m := range families[rejectedMetric].GetMetric() {
		of(m).rejected += m.GetCounter().GetValue()
	}
	for _, m := range families[waitMetric].GetMetric() {
		// Requests that were dispatched; the others were rejected or
		// timed out in their queue and are counted as rejected.
		if label(m, "execute") == "true" {
			of(m).wait.add(m.GetHistogram())
		}
	}
	return snap, nil
}

// since returns what each flow schema met between before (nil for the
// apiserver's start) and s, leaving out the exempt level and flow schemas
// that sent nothing meanwhile, the busiest first.
func (s flowSnapshot) since(before flowSnapshot) []flowUse {
	var out []flowUse
	for key, f := range s {
		d := *f
		d.wait = f.wait.minus(nil)
		if b := before[key]; b != nil {
			d.dispatched -= b.dispatched
			d.rejected -= b.rejected
			d.wait = f.wait.minus(&b.wait)
		}
		if key[1] == "exempt" || d.dispatched+d.rejected == 0 {
			continue
		}
		u := flowUse{FlowSchema: key[0], PriorityLevel: key[1], Dispatched: d.dispatched, Rejected: d.rejected}
		mean, p99, maxWait := d.wait.summary()
		u.WaitMean, u.WaitP99, u.WaitMax = mean, bound(p99), bound(maxWait)
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b flowUse) int {
		if c := -cmpFloat(a.Dispatched, b.Dispatched); c != 0 {
			return c
		}
		return strings.Compare(a.FlowSchema, b.FlowSchema)
	})
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// waitHistogram sums histograms of one flow schema.
type waitHistogram struct {
	count, sum float64
	// cumulative counts by upper bound.
	buckets map[float64]float64
}

// minus returns w less before (nil for nothing), bucket by bucket.
func (w *waitHistogram) minus(before *waitHistogram) waitHistogram {
	out := waitHistogram{count: w.count, sum: w.sum, buckets: maps.Clone(w.buckets)}
	if before == nil {
		return out
	}
	out.count -= before.count
	out.sum -= before.sum
	for b, n := range before.buckets {
		if out.buckets != nil {
			out.buckets[b] -= n
		}
	}
	return out
}

func (w *waitHistogram) add(h *dto.Histogram) {
	w.count += float64(h.GetSampleCount())
	w.sum += h.GetSampleSum()
	if w.buckets == nil {
		w.buckets = map[float64]float64{}
	}
	for _, b := range h.GetBucket() {
		w.buckets[b.GetUpperBound()] += float64(b.GetCumulativeCount())
	}
}

// summary returns the mean, the bucket bound of the 99th percentile and that
// of the highest wait.
func (w *waitHistogram) summary() (mean, p99, maxWait float64) {
	if w.count == 0 {
		return 0, 0, 0
	}
	bounds := make([]float64, 0, len(w.buckets))
	for b := range w.buckets {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	p99, maxWait = math.Inf(1), math.Inf(1)
	for i := len(bounds) - 1; i >= 0; i-- {
		if w.buckets[bounds[i]] >= w.count {
			maxWait = bounds[i]
		}
	}
	for _, b := range bounds {
		if w.buckets[b] >= 0.99*w.count {
			p99 = b
			break
		}
	}
	return w.sum / w.count, p99, maxWait
}

// flowTable renders the runs' flow uses, for results.md.
func flowTable(runs []*turn) string {
	var b strings.Builder
	for _, r := range runs {
		if len(r.FlowControl) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nPriority and fairness in round %d's %s run, from the stop to the recovery, by flow schema (the apiserver's metrics; the exempt level left out):\n\n", r.Round, r.Name)
		b.WriteString("| flow schema | priority level | dispatched | rejected | queue wait mean (s) | p99 ≤ (s) | max ≤ (s) |\n|---|---|---:|---:|---:|---:|---:|\n")
		for _, u := range r.FlowControl {
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %.4f | %s | %s |\n", u.FlowSchema, u.PriorityLevel, u.Dispatched, u.Rejected, u.WaitMean, u.WaitP99, u.WaitMax)
		}
	}
	return b.String()
}

// bound prints a bucket's upper bound.
func bound(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return fmt.Sprintf("%g", v)
}
