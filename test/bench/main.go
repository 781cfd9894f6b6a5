// Command bench runs upstream kube-controller-manager's node lifecycle
// controllers and ours side by side: one after the other, against the same
// local control plane and the same simulated fleet, with the same flags. For
// each it measures CPU, peak memory and API requests in a steady state, then
// stops 1% of the nodes and measures how long after their grace deadline each
// is marked Unknown and tainted NoExecute, and whether any other node was
// ever judged wrongly. It writes a markdown table, the raw numbers and a
// chart into the output folder.
//
// Run it with `make bench` (which builds the control plane and both
// binaries into bin/), or:
//
//	KUBEBUILDER_ASSETS=$PWD/bin go run ./test/bench --nodes=1000 --out=bin/bench
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// config is what the command line sets.
type config struct {
	nodes, zones, podsPerNode int
	stopPercent               float64
	steady                    time.Duration
	outDir                    string
	only                      string
	profile                   bool
	ours, upstream            string
}

// benchConfig is what the bench was asked to do.
type benchConfig struct {
	Nodes       int      `json:"nodes"`
	Zones       int      `json:"zones"`
	PodsPerNode int      `json:"podsPerNode"`
	StopPercent float64  `json:"stopPercent"`
	Steady      string   `json:"steady"`
	Profile     bool     `json:"profile"`
	Flags       []string `json:"sharedFlags"`
}

func describeConfig(c config) benchConfig {
	return benchConfig{
		Nodes: c.nodes, Zones: c.zones, PodsPerNode: c.podsPerNode,
		StopPercent: c.stopPercent, Steady: c.steady.String(), Profile: c.profile, Flags: sharedFlags(),
	}
}

func main() { harness.Main("bench", run) }

func parseFlags() (config, error) {
	var c config
	flag.IntVar(&c.nodes, "nodes", 1000, "number of simulated nodes")
	flag.IntVar(&c.zones, "zones", 3, "number of zones the nodes are spread over")
	flag.IntVar(&c.podsPerNode, "pods-per-node", 0, "pods bound to each node")
	flag.Float64Var(&c.stopPercent, "stop-percent", 1, "share of the nodes, in percent, whose heartbeats stop after the steady state (at least one node)")
	flag.DurationVar(&c.steady, "steady", 2*time.Minute, "length of the steady-state window in which CPU and API requests are measured")
	flag.StringVar(&c.outDir, "out", "bin/bench", "directory for the results, the logs, the audit log and the profiles")
	flag.StringVar(&c.only, "only", "", `run only one controller: "upstream" or "ours"; empty runs both, upstream first`)
	flag.BoolVar(&c.profile, "profile", false, "save a CPU profile of each controller taken during the steady state, and its `go tool pprof -top`")
	flag.StringVar(&c.ours, "ours", "bin/node-lifecycle-controller", "our controller binary (make build)")
	flag.StringVar(&c.upstream, "upstream", "bin/kube-controller-manager", "the kube-controller-manager binary (make envtest-assets)")
	flag.Parse()
	switch {
	case flag.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments: %v", flag.Args())
	case c.zones < 1:
		return c, fmt.Errorf("--zones=%d: need at least 1", c.zones)
	case c.nodes < c.zones:
		return c, fmt.Errorf("--nodes=%d: need at least one node per zone", c.nodes)
	case c.podsPerNode < 0:
		return c, fmt.Errorf("--pods-per-node=%d: must not be negative", c.podsPerNode)
	case !(c.stopPercent > 0 && c.stopPercent <= 50):
		return c, fmt.Errorf("--stop-percent=%v: must be in (0, 50], so that no zone is disrupted", c.stopPercent)
	case c.steady < 10*time.Second:
		return c, fmt.Errorf("--steady=%v: need at least 10s", c.steady)
	case c.only != "" && c.only != "upstream" && c.only != "ours":
		return c, fmt.Errorf(`--only=%s: must be "upstream" or "ours"`, c.only)
	}
	return c, nil
}

func run(ctx context.Context) error {
	began := time.Now()

	c, err := parseFlags()
	if err != nil {
		return err
	}
	contenders, err := pickContenders(c)
	if err != nil {
		return err
	}
	assets, closeLog, err := harness.Prepare("make bench", c.outDir)
	if err != nil {
		return err
	}
	defer closeLog()

	audit := auditLog{path: filepath.Join(c.outDir, "audit.log")}
	env := harness.NewEnvironment(assets)
	if err := audit.configure(env, c.outDir, contenders); err != nil {
		return err
	}
	// A new node gets a not-ready NoSchedule taint from admission, which the
	// first controller to run would remove and the second would find gone.
	// Without it both start from the same steady state: every node Ready,
	// nothing tainted, as in a cluster whose nodes registered long ago.
	env.ControlPlane.GetAPIServer().Configure().Set("disable-admission-plugins", "ServiceAccount", "TaintNodesByCondition")
	fmt.Printf("Starting a local control plane from %s ...\n", assets)
	cfg, err := harness.StartControlPlane(env)
	if err != nil {
		return err
	}
	defer harness.StopControlPlane(env, "bench")

	res := &results{Config: describeConfig(c), Machine: describeMachine(c)}
	f, obs, err := startFleet(ctx, cfg, c, res)
	if err != nil {
		return err
	}
	defer f.Close()
	defer obs.stop()

	b := &bench{cfg: c, env: env, fleet: f, obs: obs, victims: pickVictims(f, c.stopPercent)}
	for _, ct := range contenders {
		r, err := b.measure(ctx, ct)
		if r != nil {
			res.Runs = append(res.Runs, r)
		}
		if err != nil {
			return errors.Join(err, res.write(c.outDir, audit))
		}
	}
	res.Took = time.Since(began).Round(time.Second).String()
	return res.write(c.outDir, audit)
}

// startFleet starts the simulated nodes and a watch of them, waits until
// every node is Ready, and labels them as kubelets would.
func startFleet(ctx context.Context, cfg *rest.Config, c config, res *results) (*fleet.Fleet, *observer, error) {
	start := time.Now()
	obs, err := startObserver(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	fmt.Printf("Starting a fleet of %d nodes in %d zones, %d pods each ...\n", c.nodes, c.zones, c.podsPerNode)
	f, err := fleet.Start(ctx, cfg, fleet.Options{Nodes: c.nodes, Zones: c.zones, PodsPerNode: c.podsPerNode})
	if err != nil {
		obs.stop()
		return nil, nil, fmt.Errorf("start fleet: %w", err)
	}
	if err := obs.waitFor(ctx, "every node Ready", 5*time.Minute, func() bool {
		return obs.countWhere(isReady) == c.nodes
	}); err != nil {
		f.Close()
		obs.stop()
		return nil, nil, err
	}
	if err := addBetaLabels(ctx, cfg, f.Nodes()); err != nil {
		f.Close()
		obs.stop()
		return nil, nil, err
	}
	res.FleetStart = secs(time.Since(start))
	fmt.Printf("The fleet is Ready after %s.\n", res.FleetStart)
	return f, obs, nil
}
