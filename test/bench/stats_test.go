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
