package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

// nodeFleet is what a run does to its nodes: names them, places them in
// zones, stops and resumes their heartbeats, and says what their pods cost
// to set up and write. The simulated fleet (*fleet.Fleet) and hollow
// kubelets (*hollowFleet) both are one, so that one measurement serves both.
type nodeFleet interface {
	// Nodes and Zones return the names, in order; InZone the nodes of a
	// zone, in order; Zone the zone of a node.
	Nodes() []string
	Zones() []string
	InZone(zone string) []string
	Zone(name string) string
	// Stop ends the named nodes' heartbeats, their status and their pods'
	// status writes, as hung nodes; Resume lets them go on.
	Stop(names ...string)
	Resume(names ...string)
	// PodStatusWrites counts the pod status writes the bench made for the
	// nodes' pods so far; PodCreation is how long their pods took to be
	// created.
	PodStatusWrites() fleet.PodStatusWrites
	PodCreation() time.Duration
	Close()
}

var (
	_ nodeFleet = (*fleet.Fleet)(nil)
	_ nodeFleet = (*hollowFleet)(nil)
)

// What --kubelets takes: the nodes are simulated (pkg/fleet, inside the
// bench's process) or hollow kubelets (kubemark, a process each).
const (
	kubeletsSimulated = "simulated"
	kubeletsHollow    = "hollow"
)

// startFleet starts the run's nodes, simulated or hollow kubelets as
// --kubelets says, their pods and a watch of the nodes, waits until every
// node is Ready, labels them as kubelets would, and returns how long that
// took. It comes before the contender starts, so that creating the pods,
// which takes the most of it, stays out of every measured window; the
// simulated pods' statuses are written from then on, in every contender's
// run alike. The bench watches with cfg; the simulated fleet writes with
// fleetCfg, and hollow kubelets log under dir.
func startFleet(ctx context.Context, env *envtest.Environment, cfg, fleetCfg *rest.Config, c config, dir string) (nodeFleet, *observer, time.Duration, error) {
	start := time.Now()
	obs, err := startObserver(ctx, cfg)
	if err != nil {
		return nil, nil, 0, err
	}
	fmt.Printf("Starting a fleet of %s ...\n", describeConfig(c).fleetLoad())
	var f nodeFleet
	if c.kubelets == kubeletsHollow {
		f, err = startHollowFleet(ctx, env, cfg, c, dir)
	} else {
		f, err = fleet.Start(ctx, fleetCfg, fleet.Options{
			Nodes: c.nodes, Zones: c.zones, PodsPerNode: c.podsPerNode, PodStatusEvery: c.podStatusEvery,
			ImagesPerNode: c.imagesPerNode,
		})
	}
	if err != nil {
		obs.stop()
		return nil, nil, 0, fmt.Errorf("start fleet: %w", err)
	}
	if c.podsPerNode > 0 {
		fmt.Printf("Created %d pods in %s.\n", c.nodes*c.podsPerNode, secs(f.PodCreation()))
	}
	if err := obs.waitFor(ctx, "every node Ready", 5*time.Minute, func() bool {
		return obs.countWhere(isReady) == c.nodes
	}); err != nil {
		f.Close()
		obs.stop()
		return nil, nil, 0, err
	}
	if err := addBetaLabels(ctx, cfg, f.Nodes()); err != nil {
		f.Close()
		obs.stop()
		return nil, nil, 0, err
	}
	took := time.Since(start)
	fmt.Printf("The fleet is Ready after %s.\n", secs(took))
	return f, obs, took, nil
}

// zoneWindow is how long after a zone's stop (--stop-zone) the run lasts at
// least: its nodes' deadlines come 40 to 50s after the stop, and the window
// counts the taints the zone's rate allows in the minute after.
const zoneWindow = 2 * time.Minute

// pickVictims chooses the nodes to stop: every node of the first zone, or
// percent of the nodes, at least one, spread evenly over the zones and
// within each zone.
func pickVictims(f nodeFleet, c config) []string {
	if c.stopZone {
		return f.InZone(f.Zones()[0])
	}
	percent := c.stopPercent
	nodes := f.Nodes()
	n := max(1, int(float64(len(nodes))*percent/100+0.5))
	zones := f.Zones()
	var out []string
	for z, zone := range zones {
		members := f.InZone(zone)
		want := n / len(zones)
		if z < n%len(zones) {
			want++
		}
		for k := range want {
			out = append(out, members[k*len(members)/want])
		}
	}
	return out
}

// inZone returns the names in zone.
func inZone(f nodeFleet, names []string, zone string) []string {
	var out []string
	for _, n := range names {
		if f.Zone(n) == zone {
			out = append(out, n)
		}
	}
	return out
}
