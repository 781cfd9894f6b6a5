// Command demo shows the node lifecycle controller at work: it starts a
// local control plane (envtest), runs the controller binary against it with
// short timings and a simulated fleet, plays a script of node failures, draws the cluster live
// in the terminal and writes a timeline picture at the end.
//
// Run it with `make demo` (which builds the control plane into bin/).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// The demo's timings: seconds where a real cluster has minutes.
const (
	graceperiod       = 4 * time.Second
	startupGrace      = 6 * time.Second
	monitorPeriod     = time.Second
	podEvictTimeout   = 10 * time.Second
	evictionRate      = 1.0 // NoExecute taints per second and zone
	freezeCooldown    = 4 * time.Second
	tolerationSeconds = 8 // the fleet's pods tolerate unreachable and not-ready this long
	podsPerNode       = 2
	viewInterval      = 500 * time.Millisecond
)

// config is what the command line sets.
type config struct {
	nodes, zones int
	outDir       string
	controller   string
}

func main() { harness.Main("demo", run) }

func parseFlags() (config, error) {
	var c config
	flag.IntVar(&c.nodes, "nodes", 60, "number of simulated nodes")
	flag.IntVar(&c.zones, "zones", 3, "number of zones the nodes are spread over (at least 2)")
	flag.StringVar(&c.outDir, "out", "bin/demo", "directory for the logs, the controller's kubeconfig and the timeline picture")
	flag.StringVar(&c.controller, "controller", "bin/node-lifecycle-controller", "the controller binary to run")
	flag.Parse()
	switch {
	case c.zones < 2:
		return c, fmt.Errorf("--zones=%d: need at least 2, so that one zone can fail beside healthy ones", c.zones)
	case c.nodes < 3 || c.nodes < c.zones:
		return c, fmt.Errorf("--nodes=%d: need at least 3 and at least one per zone", c.nodes)
	}
	return c, nil
}

func run(ctx context.Context) error {

	c, err := parseFlags()
	if err != nil {
		return err
	}
	assets, closeFleetLog, err := harness.Prepare("make demo", c.outDir)
	if err != nil {
		return err
	}
	defer closeFleetLog()
	logPath := filepath.Join(c.outDir, "controller.log")
	controllerLog, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create controller log: %w", err)
	}
	defer func() { _ = controllerLog.Close() }()

	fmt.Printf("Starting a local control plane from %s ...\n", assets)
	env := harness.NewEnvironment(assets)
	cfg, err := harness.StartControlPlane(env)
	if err != nil {
		return err
	}
	defer harness.StopControlPlane(env, "demo")

	ctl, err := startController(ctx, env, c.controller, c.outDir, controllerLog)
	if err != nil {
		return err
	}
	defer ctl.stop()

	fmt.Printf("Starting a fleet of %d nodes in %d zones, %d pods each ...\n", c.nodes, c.zones, podsPerNode)
	f, err := fleet.Start(ctx, cfg, fleet.Options{
		Nodes:                     c.nodes,
		Zones:                     c.zones,
		PodsPerNode:               podsPerNode,
		LeaseDurationSeconds:      2,
		NodeStatusUpdateFrequency: time.Second,
		PodTolerations: []corev1.Toleration{
			{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](tolerationSeconds)},
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](tolerationSeconds)},
		},
	})
	if err != nil {
		return fmt.Errorf("start fleet: %w", err)
	}
	defer f.Close()

	obsCfg := rest.CopyConfig(cfg)
	obsCfg.QPS, obsCfg.Burst = 200, 400 // the view and the acts poll several times a second
	cs, err := kubernetes.NewForConfig(obsCfg)
	if err != nil {
		return fmt.Errorf("build client: %w", err)
	}
	d := &demo{
		fleet:    f,
		obs:      &observer{client: cs, controller: ctl, podsPerNode: podsPerNode, namespace: corev1.NamespaceDefault},
		start:    time.Now(),
		logPath:  logPath,
		timeline: newTimeline(),
	}
	d.timeline.start = d.start

	viewCtx, stopView := context.WithCancel(ctx)
	var viewDone sync.WaitGroup
	viewDone.Go(func() { d.runView(viewCtx, term.IsTerminal(int(os.Stdout.Fd()))) })
	results, playErr := d.play(ctx)
	stopView()
	viewDone.Wait()

	d.printSummary(results)
	for _, name := range []string{"timeline.svg", "timeline.png"} {
		path := filepath.Join(c.outDir, name)
		if err := d.timeline.write(path, c.nodes, c.zones); err != nil {
			return errors.Join(playErr, fmt.Errorf("write timeline: %w", err))
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		fmt.Printf("Timeline written to %s\n", path)
	}
	return playErr
}
