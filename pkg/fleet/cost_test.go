package fleet

import (
	"flag"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
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
	before := usage(t).RSS
	f, err := Start(t.Context(), cfg, Options{Nodes: *costNodes, Zones: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	pause(t, *costSettle) // past every node's first status report
	first, began := usage(t), time.Now()
	pause(t, *costSteady)
	last := usage(t)
	share := (last.CPU - first.CPU).Seconds() / time.Since(began).Seconds()
	added := last.RSS - before
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

// usage reads this process's resident memory and processor time.
func usage(t *testing.T) harness.Usage {
	u, err := harness.ProcessUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return u
}
