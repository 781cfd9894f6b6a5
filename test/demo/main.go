// Command demo shows the node lifecycle controller at work: it starts a
// local control plane (envtest), runs the controller binary against it with
// short timings and a fleet of nodes, plays a script of node failures, draws
// the cluster live in the terminal and writes a timeline picture at the end.
// The nodes are simulated (pkg/fleet), on timings of seconds, by default, or
// real kubelets with --kubelets=hollow: kubemark's hollow nodes, whose fixed
// timings (a Lease renewed every 10s) the controller's are then set to suit.
//
// Run it with `make demo` (which builds the control plane into bin/), or
// `make demo ARGS=--kubelets=hollow` (which builds kubemark too).
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

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

func main() { harness.Main("demo", run) }

func run(ctx context.Context) error {
	c, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		return err
	}
	t := timingsFor(c.kubelets)
	var kubemark string
	if c.kubelets == hollowKubelets {
		// Before the control plane starts, so that a missing binary is
		// said at once.
		if kubemark, err = harness.KubemarkBinary("bin/kubemark"); err != nil {
			return fmt.Errorf("--kubelets=hollow: %w", err)
		}
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

	ctl, err := startController(ctx, env, c.controller, c.outDir, controllerLog, t)
	if err != nil {
		return err
	}
	defer ctl.stop()

	obsCfg := rest.CopyConfig(cfg)
	obsCfg.QPS, obsCfg.Burst = 200, 400 // the view and the acts poll several times a second
	cs, err := kubernetes.NewForConfig(obsCfg)
	if err != nil {
		return fmt.Errorf("build client: %w", err)
	}
	var (
		f          nodeFleet
		closeFleet func()
	)
	if c.kubelets == hollowKubelets {
		f, closeFleet, err = startHollow(ctx, env, cs, kubemark, c, t)
	} else {
		f, closeFleet, err = startSimulated(ctx, cfg, c, t)
	}
	if err != nil {
		return err
	}
	defer closeFleet()

	d := &demo{
		fleet:    f,
		timings:  t,
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

	final, err := d.obs.observe(context.WithoutCancel(ctx))
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: the cluster at the end: %v\n", err)
	}
	d.printSummary(results, final)
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
