package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFitFindsTheLineOfExactData(t *testing.T) {
	var runs []run
	for _, n := range []float64{1000, 2000, 5000} {
		runs = append(runs, run{Nodes: n, CPU: 0.5 + 0.0006*n})
	}
	f, err := fitRuns(runs, func(r run) float64 { return r.CPU })
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.Base-0.5) > 1e-9 || math.Abs(f.PerNode-0.0006) > 1e-12 || f.R2 < 0.999999 {
		t.Fatalf("fit %+v, want 0.5 + 0.0006 per node, R² 1", f)
	}
}

func TestFitNeedsTwoSizes(t *testing.T) {
	runs := []run{{Nodes: 1000, CPU: 1}, {Nodes: 1000, CPU: 2}}
	if _, err := fitRuns(runs, func(r run) float64 { return r.CPU }); err == nil {
		t.Fatal("two runs of one size fitted a line")
	}
}

func TestLoadReadsTheBenchsResults(t *testing.T) {
	dir := t.TempDir()
	res := map[string]any{
		"config": map[string]any{"nodes": 2000, "podsPerNode": 30},
		"runs": []map[string]any{
			{"name": "ours", "cpuSecondsPerMinute": 1.5, "peakRSSBytes": 100 << 20, "podStatusWritesPerSecond": 199.5},
			{"name": "floor", "cpuSecondsPerMinute": 0, "peakRSSBytes": 0},
		},
	}
	b, _ := json.Marshal(res)
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	runs, err := load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want the one complete", len(runs))
	}
	r := runs[0]
	if r.Contender != "ours" || r.Nodes != 2000 || r.Pods != 60000 || r.Writes != 199.5 || r.CPU != 1.5 || r.RSS != 100 {
		t.Fatalf("run %+v", r)
	}
	out := report(append(runs, run{Source: "x", Contender: "ours", Nodes: 1000, Pods: 0, Writes: 0, CPU: 1, RSS: 50},
		run{Source: "y", Contender: "ours", Nodes: 5000, Pods: 0, Writes: 0, CPU: 3, RSS: 120},
		run{Source: "z", Contender: "ours", Nodes: 1000, Pods: 30000, Writes: 100, CPU: 1.3, RSS: 55}))
	if !strings.Contains(out, "## ours, CPU") || !strings.Contains(out, "| 100000 |") {
		t.Fatalf("report:\n%s", out)
	}
}

func TestReachesAndOverFloor(t *testing.T) {
	f := fit{Base: 1, PerNode: 0.001}
	if n, ok := reaches(f, 60); !ok || math.Abs(n-59000) > 1e-6 {
		t.Fatalf("reaches = %v, %v; want 59000 nodes", n, ok)
	}
	if _, ok := reaches(fit{Base: 1}, 60); ok {
		t.Fatal("a flat fit reaches its limit")
	}
	got := overFloor([]run{
		{Source: "a", Contender: "ours", Nodes: 1000, CPU: 1.5, RSS: 90},
		{Source: "a", Contender: "floor", Nodes: 1000, CPU: 1.0, RSS: 70},
		{Source: "b", Contender: "ours", Nodes: 2000, CPU: 2},
	})
	if len(got) != 1 || got[0].CPU != 0.5 || got[0].RSS != 20 || got[0].Contender != "ours over the floor" {
		t.Fatalf("overFloor = %+v", got)
	}
}
