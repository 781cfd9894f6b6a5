package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// The kubelets the demo's nodes can run.
const (
	// simulatedKubelets are pkg/fleet's reporters: a Lease and a status
	// each, in this process, on the demo's short timings.
	simulatedKubelets = "simulated"
	// hollowKubelets are kubemark's hollow nodes, the real kubelet's code on
	// a fake container runtime, one process each, on kubemark's timings.
	hollowKubelets = "hollow"
)

// Default fleet sizes. A hollow kubelet takes about 80 MiB resident and
// 0.3% of a core once steady, and 0.2s of a core to start: 12 in 3 zones
// start in a few seconds and cost about one GiB and 4% of a core, little
// beside the control plane on two cores, and leave every zone 4 nodes, so
// that its one dead node is a quarter of it and its death a third of the
// fleet, below the partition freeze's threshold (0.6).
const (
	defaultSimulatedNodes = 60
	defaultHollowNodes    = 12
	// maxHollowNodes is as many hollow kubelets as two cores run beside
	// the control plane and the controller with room to spare (about 0.8
	// of a core with their control plane, docs/kubelet.md); more starve
	// each other into missing renewals, and the story's timings with them.
	maxHollowNodes = 200
)

// podsPerNode is how many pods every node runs.
const podsPerNode = 2

// viewInterval is how often the view samples the cluster.
const viewInterval = 500 * time.Millisecond

// config is what the command line sets.
type config struct {
	kubelets     string
	nodes, zones int
	outDir       string
	controller   string
}

// bind binds the config's fields to flags of fs, with their defaults.
func (c *config) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.kubelets, "kubelets", simulatedKubelets,
		"the `kind` of kubelets the nodes run: simulated (pkg/fleet's reporters, on timings of seconds) or hollow "+
			"(kubemark's hollow nodes, the real kubelet on a fake runtime, from bin/kubemark, which make kubemark builds; "+
			"on a 30s grace, as kubemark renews its Lease every 10s)")
	fs.IntVar(&c.nodes, "nodes", 0, fmt.Sprintf("number of nodes (default %d simulated, %d hollow; at most %d hollow)",
		defaultSimulatedNodes, defaultHollowNodes, maxHollowNodes))
	fs.IntVar(&c.zones, "zones", 3, "number of zones the nodes are spread over (at least 2)")
	fs.StringVar(&c.outDir, "out", "bin/demo", "directory for the logs, the controller's kubeconfig and the timeline picture")
	fs.StringVar(&c.controller, "controller", "bin/node-lifecycle-controller", "the controller binary to run")
}

// setDefaults fills in what the command line left to the kind of kubelets.
func (c *config) setDefaults() {
	if c.nodes == 0 {
		c.nodes = defaultSimulatedNodes
		if c.kubelets == hollowKubelets {
			c.nodes = defaultHollowNodes
		}
	}
}

// validate says what in the config the demo cannot play.
func (c *config) validate() error {
	var errs []error
	if c.kubelets != simulatedKubelets && c.kubelets != hollowKubelets {
		errs = append(errs, fmt.Errorf("--kubelets=%s: want %s or %s", c.kubelets, simulatedKubelets, hollowKubelets))
	}
	if c.zones < 2 {
		errs = append(errs, fmt.Errorf("--zones=%d: need at least 2, so that one zone can fail beside healthy ones", c.zones))
	}
	if c.nodes < 3 || c.nodes < c.zones {
		errs = append(errs, fmt.Errorf("--nodes=%d: need at least 3 and at least one per zone", c.nodes))
	}
	if c.kubelets == hollowKubelets && c.nodes > maxHollowNodes {
		errs = append(errs, fmt.Errorf("--nodes=%d: at most %d hollow kubelets, which two cores run beside the control plane", c.nodes, maxHollowNodes))
	}
	return errors.Join(errs...)
}

// parseFlags reads the config from args, as fs binds it.
func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	var c config
	c.bind(fs)
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("parse flags: %w", err)
	}
	c.setDefaults()
	return c, c.validate()
}

// timings are the demo's durations: the controller's flags, the pods'
// tolerations, and the nodes' own intervals, which bound how long each act
// may take.
type timings struct {
	// grace, startupGrace, monitorPeriod, podEvictTimeout, evictionRate and
	// freezeCooldown are the controller's flags of those names.
	grace, startupGrace, monitorPeriod, podEvictTimeout time.Duration
	evictionRate                                        float64 // NoExecute taints per second and zone
	freezeCooldown                                      time.Duration
	// tolerationSeconds is how long the pods tolerate unreachable and
	// not-ready.
	tolerationSeconds int64
	// renewEvery is how often a node renews its Lease: a stopped node's
	// silence began up to that long before its stop.
	renewEvery time.Duration
	// statusEvery is how often a node computes its status: a resumed node
	// says Ready within it, or within two when its first word is that it
	// is not ready.
	statusEvery time.Duration
}

// timingsFor returns the timings the demo plays its story with on the given
// kubelets.
func timingsFor(kubelets string) timings {
	if kubelets == hollowKubelets {
		// kubemark's kubelet renews its 40s Lease every 10s and computes
		// its status every 10s, and neither can be set. A 30s grace lets
		// two renewals go missing before a live node is marked; the
		// cooldown outlasts two status checks, so that every resumed
		// kubelet has said Ready, even after a first Ready=False, before
		// the freeze lets its NoExecute taints through.
		return timings{
			grace:             30 * time.Second,
			startupGrace:      time.Minute,
			monitorPeriod:     time.Second,
			podEvictTimeout:   40 * time.Second,
			evictionRate:      1,
			freezeCooldown:    30 * time.Second,
			tolerationSeconds: 8,
			renewEvery:        harness.KubeletLeaseRenewInterval,
			statusEvery:       harness.KubeletStatusInterval,
		}
	}
	// Seconds where a real cluster has minutes; the simulated fleet's
	// Lease lasts 2s and is renewed every 0.5s, its status written every
	// second.
	return timings{
		grace:             4 * time.Second,
		startupGrace:      6 * time.Second,
		monitorPeriod:     time.Second,
		podEvictTimeout:   10 * time.Second,
		evictionRate:      1,
		freezeCooldown:    4 * time.Second,
		tolerationSeconds: 8,
		renewEvery:        500 * time.Millisecond,
		statusEvery:       time.Second,
	}
}

// toleration is tolerationSeconds as a duration.
func (t timings) toleration() time.Duration { return time.Duration(t.tolerationSeconds) * time.Second }

// unknownWithin is the longest from a node's stop to its mark: its last
// renewal, a grace, then the controller's next look.
func (t timings) unknownWithin() time.Duration { return t.renewEvery + t.grace + t.monitorPeriod }

// readyWithin is the longest a resumed node takes to say Ready again.
func (t timings) readyWithin() time.Duration { return 2 * t.statusEvery }

// observeWindow is how long act (e) watches for destructive work that must
// not happen once every node is Unknown: the pods' toleration, and a
// little more.
func (t timings) observeWindow() time.Duration { return t.toleration() + 2*time.Second }
