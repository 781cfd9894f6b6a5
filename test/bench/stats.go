package main

import (
	"math"
	"slices"
)

// summary is a distribution of delays, in seconds.
type summary struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// summarize returns the nearest-rank percentiles of values: with fewer than
// a hundred values, p99 is the largest.
func summarize(values []float64) summary {
	if len(values) == 0 {
		return summary{}
	}
	v := slices.Sorted(slices.Values(values))
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(v)))) - 1
		return v[max(0, min(i, len(v)-1))]
	}
	return summary{N: len(v), P50: rank(50), P99: rank(99), Max: v[len(v)-1]}
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

func markDelay(n *stoppedNode) *float64   { return n.MarkDelay }
func taintDelay(n *stoppedNode) *float64  { return n.TaintDelay }
func markToTaint(n *stoppedNode) *float64 { return n.MarkToTaint }
