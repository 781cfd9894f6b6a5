package fleet

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
)

var (
	costNodes  = flag.Int("fleet.cost", 0, "run TestFleetCost with this many nodes; 0 skips it")
	costSettle = flag.Duration("fleet.settle", 3*time.Minute, "how long TestFleetCost lets the fleet run before it measures")
	costSteady = flag.Duration("fleet.steady", 2*time.Minute, "how long TestFleetCost measures")
)

// TestFleetCost starts a fleet of -fleet.cost nodes, without pods, in this
// process and reports what it adds to the process's resident memory and
// the share of a core it takes once steady. docs/kubelet.md sets it beside
// a hollow kubelet's.
func TestFleetCost(t *testing.T) {
	if *costNodes == 0 {
		t.Skip("set -fleet.cost=N to measure a fleet of N nodes")
	}
	_, cfg := testenv.Start(t)
	runtime.GC()
	before := residentBytes(t)
	f, err := Start(t.Context(), cfg, Options{Nodes: *costNodes, Zones: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	pause(t, *costSettle) // past every node's first status report
	cpu, began := processCPU(t), time.Now()
	pause(t, *costSteady)
	share := (processCPU(t) - cpu).Seconds() / time.Since(began).Seconds()
	added := residentBytes(t) - before
	t.Logf("%d nodes: %d MiB resident over the process's %d MiB before (%.0f KiB a node), %.1f%% of a core (%.3f%% a node)",
		*costNodes, added>>20, before>>20, float64(added)/1024/float64(*costNodes), 100*share, 100*share/float64(*costNodes))
}

func pause(t *testing.T, d time.Duration) {
	select {
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	case <-time.After(d):
	}
}

// residentBytes reads this process's resident memory from /proc.
func residentBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		t.Fatalf("parse /proc/self/statm: %v", err)
	}
	return resident * int64(os.Getpagesize())
}

// processCPU is the processor time this process has used, user and system.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
