package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestOwnMarkDelays(t *testing.T) {
	log := `I1124 22:25:24.254694   15445 shadow.go:136] "Dry run: would mark node Unknown" Node="a"
I1124 22:25:24.254903   15445 mark.go:88] "Marked node unreachable" controller="node-lifecycle-controller" Node="a" namespace="" name="a" lastHeartbeat="2026-11-24 22:25:20 +0000 UTC" deadline="2026-11-24 22:25:24.24 +0000 UTC" delay="11.22456ms" neverReported=false
I1124 22:25:25.000000   15445 mark.go:88] "Marked node unreachable" Node="b" delay="1.5s" neverReported=true
I1124 22:26:25.000000   15445 mark.go:88] "Marked node unreachable" Node="a" delay="3s" neverReported=false
{"ts":1.7e9,"msg":"Marked node unreachable","controller":"node-lifecycle-controller","Node":"c","delay":2500000}
`
	path := filepath.Join(t.TempDir(), "ours.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ownMarkDelays(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"a": 11224560 * time.Nanosecond, "b": 1500 * time.Millisecond, "c": 2500 * time.Microsecond}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for n, d := range want {
		if got[n] != d {
			t.Errorf("%s: got %v, want %v", n, got[n], d)
		}
	}
}
