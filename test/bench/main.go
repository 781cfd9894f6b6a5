// Command bench runs upstream kube-controller-manager's node lifecycle
// controllers and ours side by side, with the same flags, beside a floor
// (test/bench/floor) that only watches Nodes and node Leases. Each contender
// runs on a fresh local control plane with a freshly started simulated
// fleet of its own, one after the other, in rounds that rotate which goes
// first. The fleet's nodes run pods (30 each unless --pods-per-node says
// otherwise) whose statuses change all along (--pod-status-every), as in a
// real cluster, where pods outnumber nodes and change far more often.
// With --kubelets=hollow the nodes are real kubelets instead, kubemark's
// hollow nodes, which run their pods and write their statuses themselves.
// For each it measures CPU, peak memory and API requests in a steady
// state; then, for the two controllers, it stops 1% of the nodes and
// measures how long after their grace deadline each is marked Unknown and
// tainted NoExecute, and whether any other node was ever judged wrongly. It
// writes a markdown table (the median and spread over the rounds, and each
// controller's cost over the floor's), the raw numbers and a chart into the
// output folder.
//
// Run it with `make bench` (which builds the control plane and both
// controllers into bin/; the bench builds the floor into the output folder),
// or, from the repository's root (the bench is a module of its own, so
// that its charting stays out of the library's go.mod):
//
//	go build -C test/bench -o $PWD/bin/bench-cmd . &&
//		KUBEBUILDER_ASSETS=$PWD/bin bin/bench-cmd --nodes=1000 --out=bin/bench
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// The fleet's pods, unless the command line says otherwise: 30 a node, the
// low end of what real clusters run (pods outnumber nodes 30 to 100 times),
// each pod's status written every 5 minutes. At 1,000 nodes that is 30,000
// pods and 100 status writes a second, the same order as the nodes' own
// 100 Lease renewals a second, and what a 2-core machine carries beside
// the control plane and the contender.
//
// Each node lists 50 container images in its status, the kubelet's default
// cap (nodeStatusMaxImages), which a node reaches once it has pulled 50
// images: the DaemonSets' and the workloads' over its life. They make each
// Node some 20 KiB larger in a cache that keeps them.
const (
	defaultPodsPerNode    = 30
	defaultPodStatusEvery = 5 * time.Minute
	defaultImagesPerNode  = 50
)

// config is what the command line sets.
type config struct {
	nodes, zones, podsPerNode int
	imagesPerNode             int
	podStatusEvery            time.Duration
	stopPercent               float64
	stopZone                  bool
	steady                    time.Duration
	runs                      int
	outDir                    string
	only                      string
	profile                   bool
	gogc                      string
	ours, upstream, floor     string
	// fairness is who the clients are to priority and fairness; kustomize
	// and installer render the installer's objects when they are not
	// exempt.
	fairness             fairness
	kustomize, installer string
	// cacheCheck leaves the apiserver's watch cache check and etcd's
	// compaction on.
	cacheCheck bool
	// kubelets is what the nodes are, kubeletsSimulated or kubeletsHollow;
	// kubemark is the binary of hollow ones.
	kubelets, kubemark string
}

// benchConfig is what the bench was asked to do.
type benchConfig struct {
	// Kubelets is "hollow" when the nodes were hollow kubelets, empty for
	// the simulated fleet.
	Kubelets    string `json:"kubelets,omitempty"`
	Nodes       int    `json:"nodes"`
	Zones       int    `json:"zones"`
	PodsPerNode int    `json:"podsPerNode"`
	// ImagesPerNode is how many container images each Node's status lists.
	ImagesPerNode int `json:"imagesPerNode,omitempty"`
	// PodStatusEvery is how often each pod's status is written, empty
	// when never; PodStatusWritesPerSecond is the rate that makes for the
	// whole fleet.
	PodStatusEvery           string  `json:"podStatusEvery,omitempty"`
	PodStatusWritesPerSecond float64 `json:"podStatusWritesPerSecond"`
	StopPercent              float64 `json:"stopPercent"`
	// StopZone is true when every node of one zone was stopped at once,
	// instead of StopPercent of the nodes spread over the zones.
	StopZone bool   `json:"stopZone,omitempty"`
	Steady   string `json:"steady"`
	Runs     int    `json:"runs"`
	Profile  bool   `json:"profile"`
	// GOGC is what every contender's GOGC was set to, empty for Go's
	// default (100).
	GOGC string `json:"gogc,omitempty"`
	// Fairness is who the contenders and the fleet were to the apiserver's
	// priority and fairness (--fairness).
	Fairness string `json:"fairness,omitempty"`
	// CacheCheck is true when the apiserver's watch cache check and etcd's
	// compaction were left on.
	CacheCheck bool     `json:"cacheCheck,omitempty"`
	Flags      []string `json:"sharedFlags"`
	FloorFlags []string `json:"floorFlags"`
}

func describeConfig(c config) benchConfig {
	d := benchConfig{
		Nodes: c.nodes, Zones: c.zones, PodsPerNode: c.podsPerNode, ImagesPerNode: c.imagesPerNode,
		StopPercent: c.stopPercent, StopZone: c.stopZone, Steady: c.steady.String(), Runs: c.runs, Profile: c.profile, GOGC: c.gogc,
		Fairness: string(c.fairness), CacheCheck: c.cacheCheck,
		Flags: sharedFlags(), FloorFlags: clientFlags(),
	}
	if c.kubelets == kubeletsHollow {
		d.Kubelets = kubeletsHollow
	}
	if c.podsPerNode > 0 && c.podStatusEvery > 0 {
		d.PodStatusEvery = c.podStatusEvery.String()
		d.PodStatusWritesPerSecond = float64(c.nodes*c.podsPerNode) / c.podStatusEvery.Seconds()
	}
	return d
}

// fleetLoad says what the fleet runs: its nodes, the images they list,
// their pods and how often the pods' statuses are written.
func (c benchConfig) fleetLoad() string {
	s := fmt.Sprintf("%d nodes in %d zones", c.Nodes, c.Zones)
	if c.Kubelets == kubeletsHollow {
		s = fmt.Sprintf("%d hollow kubelets in %d zones", c.Nodes, c.Zones)
		if c.PodsPerNode > 0 {
			return s + fmt.Sprintf(", %d pods each (%d pods), their statuses the kubelets' own", c.PodsPerNode, c.Nodes*c.PodsPerNode)
		}
	}
	if c.ImagesPerNode > 0 {
		s += fmt.Sprintf(", each listing %d images", c.ImagesPerNode)
	}
	switch {
	case c.PodsPerNode == 0:
		return s + ", no pods"
	case c.PodStatusEvery == "":
		return s + fmt.Sprintf(", %d pods each (%d pods), no pod status written after start", c.PodsPerNode, c.Nodes*c.PodsPerNode)
	default:
		return s + fmt.Sprintf(", %d pods each (%d pods), each pod's status written every %s (%.1f writes/s)",
			c.PodsPerNode, c.Nodes*c.PodsPerNode, c.PodStatusEvery, c.PodStatusWritesPerSecond)
	}
}

func main() { harness.Main("bench", run) }

func parseFlags() (config, error) {
	var c config
	flag.IntVar(&c.nodes, "nodes", 1000, "number of nodes, simulated or hollow kubelets (--kubelets)")
	flag.StringVar(&c.kubelets, "kubelets", kubeletsSimulated, `what the nodes are: "simulated", pkg/fleet's nodes inside the bench's process, or "hollow", a real kubelet each, kubemark's hollow node `+
		"(make kubemark; found as $KUBEMARK, kubemark in KUBEBUILDER_ASSETS or bin/kubemark), which runs its pods and writes their statuses itself, with kubemark's fixed timings (Lease 40s renewed every 10s); "+
		"a stopped node is a frozen kubelet (SIGSTOP). Hollow kubelets refuse --pod-status-every and --images-per-node when given, and run with both 0. "+
		"Each takes some 18 MiB and 0.4% of a core once Ready: 200 fit beside the control plane on 2 cores")
	flag.IntVar(&c.zones, "zones", 3, "number of zones the nodes are spread over")
	flag.IntVar(&c.podsPerNode, "pods-per-node", defaultPodsPerNode, "running pods bound to each node (real clusters run 30 to 100 times as many pods as nodes); 0 runs none")
	flag.IntVar(&c.imagesPerNode, "images-per-node", defaultImagesPerNode, "container images each node's status lists, as a kubelet lists up to 50 by default; 0 lists none")
	flag.DurationVar(&c.podStatusEvery, "pod-status-every", defaultPodStatusEvery, "how often each pod's status is written, as its kubelet reports a container restart, spread evenly over the pods and over time; "+
		"the default at 1000 nodes of 30 pods is 100 writes/s, as many as the nodes' Lease renewals; 0 writes none")
	flag.Float64Var(&c.stopPercent, "stop-percent", 1, "share of the nodes, in percent, whose heartbeats stop after the steady state (at least one node)")
	flag.BoolVar(&c.stopZone, "stop-zone", false, "stop every node of the first zone at once, with its pods (a third of the nodes at 3 zones), instead of --stop-percent of them spread over the zones; "+
		"the run then waits until each is marked and each of its pods is NotReady, and at least "+zoneWindow.String()+" from the stop, counting the taints the zone's rate allows meanwhile")
	flag.DurationVar(&c.steady, "steady", 2*time.Minute, "length of the steady-state window in which CPU and API requests are measured")
	flag.IntVar(&c.runs, "runs", 3, "rounds: each runs every contender once, on a fresh control plane and fleet, the first round upstream, ours, floor, each next one starting one later in that list")
	flag.StringVar(&c.outDir, "out", "bin/bench", "directory for the results, and for each run's logs, audit log and profile")
	flag.StringVar(&c.only, "only", "", `run only some contenders, a comma-separated list of "upstream", "ours" and "floor"; empty runs all three`)
	flag.BoolVar(&c.profile, "profile", false, "save a CPU profile of each contender taken during the steady state and a heap profile taken at its end, each with its `go tool pprof -top`")
	flag.StringVar(&c.gogc, "gogc", "", "GOGC for every contender (a percentage, or off), to weigh memory against CPU; empty leaves Go's default, 100")
	flag.StringVar(&c.ours, "ours", "bin/node-lifecycle-controller", "our controller binary (make build)")
	flag.StringVar(&c.upstream, "upstream", "bin/kube-controller-manager", "the kube-controller-manager binary (make envtest-assets)")
	flag.StringVar(&c.floor, "floor", "", "the floor binary; empty builds test/bench/floor into --out")
	var fair string
	flag.StringVar(&fair, "fairness", string(fairnessExempt), `who the clients are to the apiserver's priority and fairness: "exempt" runs the contenders and the fleet in system:masters, which it exempts; `+
		`"cluster" runs upstream as system:kube-controller-manager, ours and the floor as the installer's ServiceAccount with its RBAC, and the fleet as nodes, under the apiserver's own flow schemas; `+
		`"install" does too, with the installer's priority level and flow schemas (config/flowcontrol) applied`)
	flag.BoolVar(&c.cacheCheck, "cache-check", false, "leave on the apiserver's periodic check of each watch cache against etcd (DetectCacheInconsistency, first 5 to 7.5 minutes after its start) and etcd's compaction every 5 minutes, which the bench otherwise turns off: "+
		"at 5,000 nodes the check holds every request for some 25s")
	flag.StringVar(&c.kustomize, "kustomize", "bin/kustomize", "the kustomize binary (make kustomize) that renders --installer, unless --fairness=exempt")
	flag.StringVar(&c.installer, "installer", "config/default", "the kustomize installer whose ServiceAccount, RBAC and, with --fairness=install, flow control objects ours and the floor run with")
	flag.Parse()
	c.fairness = fairness(fair)
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := c.applyKubelets(set); err != nil {
		return c, err
	}
	switch {
	case flag.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments: %v", flag.Args())
	case c.zones < 1:
		return c, fmt.Errorf("--zones=%d: need at least 1", c.zones)
	case c.nodes < c.zones:
		return c, fmt.Errorf("--nodes=%d: need at least one node per zone", c.nodes)
	case c.podsPerNode < 0:
		return c, fmt.Errorf("--pods-per-node=%d: must not be negative", c.podsPerNode)
	case c.imagesPerNode < 0:
		return c, fmt.Errorf("--images-per-node=%d: must not be negative", c.imagesPerNode)
	case c.podStatusEvery < 0:
		return c, fmt.Errorf("--pod-status-every=%v: must not be negative", c.podStatusEvery)
	case !(c.stopPercent > 0 && c.stopPercent <= 50):
		return c, fmt.Errorf("--stop-percent=%v: must be in (0, 50], so that no zone is disrupted", c.stopPercent)
	case c.stopZone && c.zones < 2:
		return c, fmt.Errorf("--stop-zone with --zones=%d: a zone must be a share of the nodes, not all of them", c.zones)
	case c.steady < 10*time.Second:
		return c, fmt.Errorf("--steady=%v: need at least 10s", c.steady)
	case c.runs < 1:
		return c, fmt.Errorf("--runs=%d: need at least 1", c.runs)
	case c.gogc != "" && c.gogc != "off" && !positiveInt(c.gogc):
		return c, fmt.Errorf(`--gogc=%s: must be a positive whole percentage or "off"`, c.gogc)
	case !slices.Contains(fairnessModes, c.fairness):
		return c, fmt.Errorf(`--fairness=%s: must be "exempt", "cluster" or "install"`, c.fairness)
	case c.only != "" && slices.ContainsFunc(strings.Split(c.only, ","), func(n string) bool { return !slices.Contains(contenderNames, n) }):
		return c, fmt.Errorf(`--only=%s: must list "upstream", "ours" or "floor", separated by commas`, c.only)
	}
	return c, nil
}

// positiveInt says whether s is a whole number above zero.
func positiveInt(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0
}

func run(ctx context.Context) error {
	began := time.Now()

	c, err := parseFlags()
	if err != nil {
		return err
	}
	if c.kubelets == kubeletsHollow {
		if c.kubemark, err = harness.KubemarkBinary("bin/kubemark"); err != nil {
			return err
		}
	}
	contenders, err := pickContenders(ctx, c)
	if err != nil {
		return err
	}
	var installer []*unstructured.Unstructured
	if c.fairness != fairnessExempt {
		if installer, err = renderInstaller(ctx, c.kustomize, c.installer, c.fairness); err != nil {
			return err
		}
	}
	assets, closeLog, err := harness.Prepare("make bench", c.outDir)
	if err != nil {
		return err
	}
	defer closeLog()

	res := &results{Config: describeConfig(c), Machine: describeMachine(c)}
	for round := range c.runs {
		for position, ct := range inRound(contenders, round) {
			fmt.Printf("\n=== round %d of %d: %s ===\n", round+1, c.runs, ct.Name)
			r, err := runAlone(ctx, c, assets, ct, installer, round+1, position+1)
			if r != nil {
				res.Runs = append(res.Runs, r)
			}
			if err != nil {
				return errors.Join(err, res.write(c.outDir))
			}
		}
	}
	res.Took = time.Since(began).Round(time.Second).String()
	return res.write(c.outDir)
}

// runAlone gives one contender a run of its own: a fresh control plane with
// an audit log of its requests, a fresh fleet on it, its turn, and its
// requests counted. Nothing of an earlier run's etcd, watch cache or fleet
// carries over. The contender and the fleet act as --fairness says, ours
// and the floor with the objects of installer. It returns what it measured
// so far even when it fails.
func runAlone(ctx context.Context, c config, assets string, ct contender, installer []*unstructured.Unstructured, round, position int) (*turn, error) {
	dir := filepath.Join(c.outDir, fmt.Sprintf("round%d-%s", round, ct.Name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	audit := auditLog{path: filepath.Join(dir, "audit.log")}
	env := harness.NewEnvironment(assets)
	if err := audit.configure(env, dir, []contender{ct}); err != nil {
		return nil, err
	}
	// A new node gets a not-ready NoSchedule taint from admission, which a
	// controller would remove at its start, in its measured run. Without it
	// every run starts from the same steady state: every node Ready,
	// nothing tainted, as in a cluster whose nodes registered long ago.
	env.ControlPlane.GetAPIServer().Configure().Set("disable-admission-plugins", "ServiceAccount", "TaintNodesByCondition")
	// The apiserver's check of each watch cache against etcd
	// (DetectCacheInconsistency, on by default since 1.34) first runs 5 to
	// 7.5 minutes after its start, just as the stopped nodes fall due, and
	// lists every object of each resource from both: at 5,000 nodes on 2
	// cores it held every request for some 25s, in every contender's run
	// alike. Its compaction of etcd, every 5 minutes, is off too. A run's
	// etcd is fresh and lives under 15 minutes, and no controller's delays
	// should hold the control plane's housekeeping. --cache-check leaves
	// both on, to measure how the marks ride through them.
	if !c.cacheCheck {
		env.ControlPlane.GetAPIServer().Configure().Set("etcd-compaction-interval", "0")
		env.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "DetectCacheInconsistency=false")
	}
	fmt.Printf("Starting a local control plane from %s ...\n", assets)
	start := time.Now()
	cfg, err := harness.StartControlPlane(env)
	if err != nil {
		return nil, err
	}
	defer harness.StopControlPlane(env, "bench")
	planeUp := time.Since(start)
	fleetCfg, err := prepareIdentities(ctx, env, cfg, c.fairness, ct, installer)
	if err != nil {
		return nil, err
	}

	f, obs, fleetUp, err := startFleet(ctx, env, cfg, fleetCfg, c, dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer obs.stop()

	b := &bench{cfg: c, env: env, dir: dir, fleet: f, obs: obs, victims: pickVictims(f, c)}
	r, err := b.measure(ctx, ct)
	r.Round, r.Position, r.Dir, r.User = round, position, dir, ct.user()
	r.ControlPlaneStart, r.FleetStart = secs(planeUp), secs(fleetUp)
	if c.podsPerNode > 0 {
		r.PodCreation = secs(f.PodCreation())
	}
	requests, auditErr := audit.read()
	if auditErr == nil {
		r.countRequests(requests)
	}
	return r, errors.Join(err, auditErr)
}
