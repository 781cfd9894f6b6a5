package main

import (
	"os"
	"runtime"
	"testing"
)

func TestProcStatOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	// Burn some CPU so that at least one tick is counted.
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	_ = x
	cpu, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if cpu <= 0 {
		t.Errorf("cpuTime = %v, want more than zero", cpu)
	}
	rss, err := peakRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 {
		t.Errorf("peakRSS = %d bytes, want at least a MiB", rss)
	}
	if _, err := cpuTime(-1); err == nil {
		t.Error("cpuTime(-1) succeeded")
	}
}
