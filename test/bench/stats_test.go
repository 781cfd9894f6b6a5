package main

import (
	"math"
	"testing"
)

// nearestRank is the definition the bench reports, written out: the value
// at rank ceil(p/100*n), counting from one.
func nearestRank(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func TestSummarizeNearestRank(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		want   summary
	}{
		{name: "none", want: summary{}},
		{name: "one", values: []float64{3}, want: summary{N: 1, P50: 3, P99: 3, Max: 3}},
		{name: "two", values: []float64{2, 1}, want: summary{N: 2, P50: 1, P99: 2, Max: 2}},
		{name: "ten, unsorted", values: []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, want: summary{N: 10, P50: 5, P99: 10, Max: 10}},
		{name: "eleven", values: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, want: summary{N: 11, P50: 6, P99: 11, Max: 11}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize(tt.values); got != tt.want {
				t.Errorf("summarize(%v) = %+v, want %+v", tt.values, got, tt.want)
			}
		})
	}
}

func TestSummarizeMatchesNearestRankAtEverySize(t *testing.T) {
	for n := 1; n <= 1000; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i) * 0.37
		}
		got := summarize(v)
		if want := nearestRank(v, 50); got.P50 != want {
			t.Fatalf("n=%d: p50 = %v, want %v", n, got.P50, want)
		}
		if want := nearestRank(v, 99); got.P99 != want {
			t.Fatalf("n=%d: p99 = %v, want %v", n, got.P99, want)
		}
	}
}

func TestSpreadOf(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		want   spread
	}{
		{name: "none", want: spread{}},
		{name: "one", values: []float64{2.5}, want: spread{N: 1, Min: 2.5, Median: 2.5, Max: 2.5}},
		{name: "two: the median is their mean", values: []float64{3, 1}, want: spread{N: 2, Min: 1, Median: 2, Max: 3}},
		{name: "three, unsorted", values: []float64{5, 1, 2}, want: spread{N: 3, Min: 1, Median: 2, Max: 5}},
		{name: "four", values: []float64{4, 1, 3, 2}, want: spread{N: 4, Min: 1, Median: 2.5, Max: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spreadOf(tt.values); got != tt.want {
				t.Errorf("spreadOf(%v) = %+v, want %+v", tt.values, got, tt.want)
			}
		})
	}
}

func TestSpreadOfLeavesItsInputAlone(t *testing.T) {
	v := []float64{3, 1, 2}
	spreadOf(v)
	if v[0] != 3 || v[1] != 1 || v[2] != 2 {
		t.Errorf("spreadOf sorted its input: %v", v)
	}
}

func TestSpreadFormat(t *testing.T) {
	if got, want := (spread{N: 3, Min: 1, Median: 1.234, Max: 2}).format("%.2f"), "1.00 / 1.23 / 2.00"; got != want {
		t.Errorf("format = %q, want %q", got, want)
	}
	if got, want := (spread{}).format("%.2f"), "—"; got != want {
		t.Errorf("format of no runs = %q, want %q", got, want)
	}
}
