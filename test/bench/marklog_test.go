package main

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestOwnMarks(t *testing.T) {
	log := `I1124 22:25:24.254694   15445 shadow.go:136] "Dry run: would mark node Unknown" Node="a"
I1124 22:25:24.254903   15445 mark.go:88] "Marked node unreachable" controller="node-lifecycle-controller" Node="a" namespace="" name="a" lastHeartbeat="2026-11-24 22:25:20 +0000 UTC" deadline="2026-11-24 22:25:24.24 +0000 UTC" delay="11.22456ms" neverReported=false
I1124 22:25:25.000000   15445 mark.go:88] "Marked node unreachable" Node="b" delay="1.5s" neverReported=true
I1124 22:26:25.000000   15445 mark.go:88] "Marked node unreachable" Node="a" delay="3s" neverReported=false
{"ts":1.7e9,"msg":"Marked node unreachable","controller":"node-lifecycle-controller","Node":"c","delay":2500000,"read":1000000,"patch":1500000}
I1128 21:13:36.745218    1183 tell.go:33] "Marked node unreachable" controller="node-lifecycle-controller" controllerGroup="" controllerKind="Node" Node="d" namespace="" name="d" reconcileID="a8e26970" deadline="2026-11-28 21:13:36.723302743 +0000 UTC m=+229.993887000" delay="21.82175ms" neverReported=false read="7.560247ms" patch="13.089244ms" wake="165.181µs" queue="269.846µs" look="737.232µs"
`
	path := filepath.Join(t.TempDir(), "ours.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ownMarks(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ownMark{
		"a": {delay: 11224560 * time.Nanosecond},
		"b": {delay: 1500 * time.Millisecond},
		"c": {delay: 2500 * time.Microsecond, stages: map[string]time.Duration{"read": time.Millisecond, "patch": 1500 * time.Microsecond}},
		"d": {delay: 21821750 * time.Nanosecond, stages: map[string]time.Duration{
			"read": 7560247 * time.Nanosecond, "patch": 13089244 * time.Nanosecond,
			"wake": 165181 * time.Nanosecond, "queue": 269846 * time.Nanosecond, "look": 737232 * time.Nanosecond,
		}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for n, w := range want {
		if got[n].delay != w.delay || !maps.Equal(got[n].stages, w.stages) {
			t.Errorf("%s: got %v %v, want %v %v", n, got[n].delay, got[n].stages, w.delay, w.stages)
		}
	}
}

func TestMarkStagesSummary(t *testing.T) {
	r := &turn{Stopped: []stoppedNode{
		{Node: "a", OwnMarkStages: map[string]float64{"wake": 0.001, "read": 0.002, "patch": 0.010}},
		{Node: "b", OwnMarkStages: map[string]float64{"wake": 0.003, "read": 0.004, "patch": 0.030}},
		{Node: "c"},
	}}
	want := "mark stages by its own clock, median / max: wake 1.00 / 3.00ms, read 2.00 / 4.00ms, patch 10.00 / 30.00ms"
	if got := r.markStagesSummary(); got != want {
		t.Errorf("markStagesSummary() = %q, want %q", got, want)
	}
	if got := (&turn{Stopped: []stoppedNode{{Node: "a"}}}).markStagesSummary(); got != "" {
		t.Errorf("markStagesSummary() without stages = %q, want none", got)
	}
}
