package main

import (
	"fmt"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// summary is a distribution of delays, in seconds.
type summary struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// summarize returns the nearest-rank percentiles of values: with fewer than
// a hundred values, p99 is the largest. gonum's Empirical quantile is the
// nearest rank (the smallest value with at least the fraction p of values
// at or below it); LinInterp would interpolate between ranks instead.
func summarize(values []float64) summary {
	if len(values) == 0 {
		return summary{}
	}
	v := slices.Sorted(slices.Values(values))
	return summary{
		N:   len(v),
		P50: stat.Quantile(0.50, stat.Empirical, v, nil),
		P99: stat.Quantile(0.99, stat.Empirical, v, nil),
		Max: v[len(v)-1],
	}
}

// delays returns one delay of each stopped node that has it.
func (r *turn) delays(pick func(*stoppedNode) *float64) []float64 {
	var out []float64
	for i := range r.Stopped {
		if d := pick(&r.Stopped[i]); d != nil {
			out = append(out, *d)
		}
	}
	return out
}

func markDelay(n *stoppedNode) *float64    { return n.MarkDelay }
func ownMarkDelay(n *stoppedNode) *float64 { return n.OwnMarkDelay }
func taintDelay(n *stoppedNode) *float64   { return n.TaintDelay }
func markToTaint(n *stoppedNode) *float64  { return n.MarkToTaint }
func podsDelay(n *stoppedNode) *float64    { return n.PodsDelay }

// spread is how one number varied over the rounds: its least, median and
// greatest value, and over how many runs.
type spread struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// spreadOf returns the spread of values. The median of an even count is the
// mean of the middle two, as a reader computes it from the runs listed: of
// gonum's quantiles, Empirical would take the lower of them.
func spreadOf(values []float64) spread {
	if len(values) == 0 {
		return spread{}
	}
	v := slices.Sorted(slices.Values(values))
	n := len(v)
	median := v[n/2]
	if n%2 == 0 {
		median = (v[n/2-1] + v[n/2]) / 2
	}
	return spread{N: n, Min: v[0], Median: median, Max: v[n-1]}
}

// format prints a spread as "min / median / max", "—" when it is empty.
func (s spread) format(verb string) string {
	if s.N == 0 {
		return "—"
	}
	return fmt.Sprintf(verb+" / "+verb+" / "+verb, s.Min, s.Median, s.Max)
}
