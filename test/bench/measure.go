package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

// bench is one contender's run: its own control plane, fleet and watch of
// them, and the directory of its logs.
type bench struct {
	cfg   config
	env   *envtest.Environment
	dir   string
	fleet nodeFleet
	obs   *observer
	// victims are the nodes stopped in the run: the fleet's nodes are named
	// alike in every run, so they are the same for each controller.
	victims []string
}

// turn is what one contender's run measured.
type turn struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
	// User is the user it acted as, by which its requests are counted.
	User string `json:"user"`
	// FlowControl is what each flow schema's requests met at the
	// apiserver's priority and fairness from the stop to the recovery,
	// unless every client was exempt.
	FlowControl []flowUse `json:"flowControl,omitempty"`
	// MarkRequests counts, over the stopped nodes, from the stop to the
	// recovery, the requests each node's mark was made of (the live reads
	// before its first status write, and the write), and RereadRequests
	// the live reads of those nodes after it.
	MarkRequests   int `json:"markRequests"`
	RereadRequests int `json:"rereadRequests"`
	// Round counts from 1; Position is the run's place in its round, from
	// 1. Dir holds the run's logs, audit log and profile.
	Round    int    `json:"round"`
	Position int    `json:"position"`
	Dir      string `json:"dir"`
	// ControlPlaneStart and FleetStart are how long the run's own control
	// plane took to start, and then its fleet to be Ready; PodCreation is
	// the part of FleetStart spent creating the pods.
	ControlPlaneStart string `json:"controlPlaneStart"`
	FleetStart        string `json:"fleetStart"`
	PodCreation       string `json:"podCreation,omitempty"`
	// Judges is true for a controller; the floor judges no node, and its
	// run has no failure phase.
	Judges bool `json:"judges"`

	// The instants that bound the phases: started, serving, steady state,
	// heartbeats stopped, every stopped node tainted (or given up on),
	// resumed, every node recovered, stopped.
	Started     time.Time `json:"started"`
	Serving     time.Time `json:"serving"`
	SteadyStart time.Time `json:"steadyStart"`
	SteadyEnd   time.Time `json:"steadyEnd"`
	Failed      time.Time `json:"failed"`
	AllTainted  time.Time `json:"allTainted"`
	Recovered   time.Time `json:"recovered"`
	Ended       time.Time `json:"ended"`

	// CPUSecondsPerMinute is the CPU time used in the steady state, per
	// minute of it.
	CPUSecondsPerMinute float64 `json:"cpuSecondsPerMinute"`
	// CPUSecondsFailure is the CPU time used from the failure to the
	// recovery; CPUSecondsTotal over the whole run.
	CPUSecondsFailure float64 `json:"cpuSecondsFailure"`
	CPUSecondsTotal   float64 `json:"cpuSecondsTotal"`
	// PeakRSSBytes is VmHWM at the end of the run.
	PeakRSSBytes int64 `json:"peakRSSBytes"`

	// Requests counts API requests per phase: "startup" (start to steady
	// state), "steady" and "failure" (failure to recovery).
	Requests map[string]requestCount `json:"requests"`
	// RequestsPerMinute is the steady state's rate.
	RequestsPerMinute float64 `json:"requestsPerMinute"`
	// PodStatusWritesPerSecond is the rate at which the fleet wrote pod
	// statuses in the steady state, the load every contender's run should
	// share; PodStatusWriteFailures counts the writes that failed in it.
	PodStatusWritesPerSecond float64 `json:"podStatusWritesPerSecond"`
	PodStatusWriteFailures   int64   `json:"podStatusWriteFailures"`
	// Kubelets is what hollow kubelets used in the steady state, nil for
	// the simulated fleet.
	Kubelets *kubeletUse `json:"kubelets,omitempty"`

	// Stopped has one entry per stopped node.
	Stopped []stoppedNode `json:"stopped"`
	// TaintTimeout is true when some stopped node was not marked and
	// tainted in time.
	TaintTimeout bool `json:"taintTimeout"`
	// FalsePositives are the nodes that kept their heartbeats but were
	// seen not Ready or with a lifecycle taint.
	FalsePositives map[string]falsePositive `json:"falsePositives"`
	// LeaseLag is, from the stop to the recovery, how long after its
	// renewTime each Lease renewal of a node not stopped reached the
	// bench's watch: whether the kubelets' heartbeats were held up.
	LeaseLag summary `json:"leaseLagSeconds"`
	// PodWriteLimit is, with --stop-zone, how many pod status writes a
	// second the apiserver accepted from one client writing the dead
	// zone's pods at our controller's concurrency, once they were all
	// NotReady and before the nodes were resumed.
	PodWriteLimit *podWriteLimit `json:"podWriteLimit,omitempty"`

	// Profile and ProfileTop are the files of the CPU profile, if taken.
	Profile    string `json:"profile,omitempty"`
	ProfileTop string `json:"profileTop,omitempty"`
	// HeapProfile and HeapProfileTop are the files of the heap profile
	// taken at the end of the steady state, if profiles were asked for.
	HeapProfile    string `json:"heapProfile,omitempty"`
	HeapProfileTop string `json:"heapProfileTop,omitempty"`
}

// measure gives one contender its turn: start, settle, steady state, and
// for a controller failure and recovery, then stop. It returns what it
// measured so far even when it fails.
func (b *bench) measure(ctx context.Context, ct contender) (*turn, error) {
	r := &turn{Name: ct.Name, Judges: ct.judges}
	b.obs.beginRun()
	defer func() {
		r.collect(b.obs.endRun(), b.fleet)
		if err := r.collectOwn(filepath.Join(b.dir, ct.Name+".log")); err != nil {
			fmt.Printf("No mark delays by %s's own clock: %v\n", ct.Name, err)
		}
	}()

	r.Started = time.Now()
	proc, err := ct.start(ctx, b.env, b.dir, b.cfg.profile, b.cfg.gogc)
	if err != nil {
		return r, fmt.Errorf("start %s: %w", ct.Name, err)
	}
	r.Command = append([]string{proc.Path}, proc.Args...)
	r.Serving = time.Now()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		r.Ended = time.Now()
		fmt.Printf("Stopping %s ...\n", ct.Name)
		return proc.Stop(30 * time.Second)
	}
	defer func() { _ = stop() }()

	settle := startupGrace + monitorPeriod
	fmt.Printf("%s serves after %s; letting it settle for %v ...\n", ct.Name, secs(r.Serving.Sub(r.Started)), settle)
	if err := hold(ctx, proc, settle); err != nil {
		return r, err
	}
	podWrites := b.fleet.PodStatusWrites()
	endKubelets, err := meterKubelets(b.fleet)
	if err != nil {
		return r, err
	}
	if err := r.steadyState(ctx, proc, b.cfg, b.dir); err != nil {
		return r, err
	}
	r.countPodWrites(podWrites, b.fleet.PodStatusWrites())
	if err := endKubelets(r); err != nil {
		return r, err
	}
	// The floor marks no node, so stopping some would only wait out a
	// timeout; its peak memory is read after its steady state.
	if ct.judges {
		if err := r.failAndRecover(ctx, proc, b); err != nil {
			return r, err
		}
	}
	peak, err := peakRSS(proc.PID())
	if err != nil {
		return r, err
	}
	r.PeakRSSBytes = peak
	total, err := cpuTime(proc.PID())
	if err != nil {
		return r, err
	}
	r.CPUSecondsTotal = total.Seconds()
	if err := stop(); err != nil {
		return r, err
	}
	if r.Profile != "" {
		top, err := pprofTop(ctx, proc.Path, r.Profile)
		if err != nil {
			return r, err
		}
		r.ProfileTop = top
	}
	if r.HeapProfile != "" {
		top, err := pprofTop(ctx, proc.Path, r.HeapProfile, "-sample_index=inuse_space")
		if err != nil {
			return r, err
		}
		r.HeapProfileTop = top
	}
	return r, nil
}

// steadyState measures CPU over the steady-state window, and takes a CPU
// profile of the whole window when asked for: at a controller's steady cost
// of a few CPU-seconds a minute, 30s hold too few samples to place a
// difference of a tenth of that.
func (r *turn) steadyState(ctx context.Context, proc *running, c config, dir string) error {
	fmt.Printf("Steady state for %v ...\n", c.steady)
	before, err := cpuTime(proc.PID())
	if err != nil {
		return err
	}
	r.SteadyStart = time.Now()
	profiled := make(chan error, 1)
	if c.profile {
		path := filepath.Join(dir, r.Name+"-cpu.pprof")
		go func() { profiled <- saveProfile(ctx, proc.serving, c.steady, path) }()
		r.Profile = path
	} else {
		profiled <- nil
	}
	holdErr := hold(ctx, proc, c.steady)
	after, err := cpuTime(proc.PID())
	r.SteadyEnd = time.Now()
	if err := errors.Join(holdErr, err, <-profiled); err != nil {
		return err
	}
	if c.profile {
		r.HeapProfile = filepath.Join(dir, r.Name+"-heap.pprof")
		if err := saveHeapProfile(ctx, proc.serving, r.HeapProfile); err != nil {
			return err
		}
	}
	r.CPUSecondsPerMinute = (after - before).Seconds() / r.SteadyEnd.Sub(r.SteadyStart).Minutes()
	fmt.Printf("%s used %.2f CPU s/min in the steady state.\n", r.Name, r.CPUSecondsPerMinute)
	return nil
}

// countPodWrites records the fleet's pod status writes over the steady
// state, from its counts at the start and at the end.
func (r *turn) countPodWrites(start, end fleet.PodStatusWrites) {
	if d := r.SteadyEnd.Sub(r.SteadyStart); d > 0 {
		r.PodStatusWritesPerSecond = float64(end.Written-start.Written) / d.Seconds()
	}
	r.PodStatusWriteFailures = end.Failed - start.Failed
}

// failAndRecover stops the victims' heartbeats, waits until each is marked
// and tainted, then resumes them and waits until every node is Ready and
// untainted.
func (r *turn) failAndRecover(ctx context.Context, proc *running, b *bench) error {
	before, err := cpuTime(proc.PID())
	if err != nil {
		return err
	}
	perZone := 0
	for _, z := range b.fleet.Zones() {
		perZone = max(perZone, len(inZone(b.fleet, b.victims, z)))
	}
	// The rate limit taints one node per zone every 1/rate seconds, the
	// first at once.
	timeout := monitorGrace + 2*monitorPeriod + time.Duration(float64(perZone)/evictionRate*float64(time.Second)) + time.Minute
	what, done := "marked and tainted, and their pods NotReady", func() bool { return b.obs.allMarkedAndTainted() && b.obs.allPodsNotReady() }
	if b.cfg.stopZone {
		// The zone's rate taints one node every 1/rate seconds: the run
		// counts how many it allows in the window, and waits for the
		// marks and the pods, which no rate holds back by design.
		timeout = monitorGrace + 2*monitorPeriod + 8*time.Minute
		what, done = "marked and their pods NotReady, "+zoneWindow.String()+" after the stop at least", func() bool {
			return time.Since(r.Failed) >= zoneWindow && b.obs.allPodsNotReady()
		}
	}
	stopPods, err := b.obs.watchPods(ctx, b.victims)
	if err != nil {
		return err
	}
	defer stopPods()
	fmt.Printf("Stopping the heartbeats of %d nodes (at most %d per zone); waiting up to %v for each to be %s ...\n",
		len(b.victims), perZone, timeout, what)
	var flowAtStop flowSnapshot
	if b.cfg.fairness != fairnessExempt {
		if flowAtStop, err = scrapeFlowControl(ctx, b.env.Config); err != nil {
			return err
		}
	}
	b.obs.stopping(b.victims)
	b.fleet.Stop(b.victims...)
	r.Failed = time.Now()
	err = b.obs.waitFor(ctx, "the stopped nodes to be "+what, timeout, done)
	r.AllTainted = time.Now()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		r.TaintTimeout = true
		fmt.Printf("Not every stopped node was %s within %v: %v\n", what, timeout, err)
	default:
		fmt.Printf("Every stopped node is %s, %s after the stop.\n", what, secs(r.AllTainted.Sub(r.Failed)))
	}

	if b.cfg.stopZone && !r.TaintTimeout {
		fmt.Printf("Writing every pod of the stopped nodes once, %d at a time, to measure the apiserver's pod write rate ...\n", controllerPodWrites)
		limit, err := measurePodWrites(ctx, b.env.Config, b.victims, controllerPodWrites)
		if err != nil {
			return err
		}
		r.PodWriteLimit = &limit
		fmt.Printf("The apiserver accepted %d of %d pod writes in %.1fs: %.0f a second.\n",
			limit.Pods-limit.Failed, limit.Pods, limit.Seconds, limit.PerSecond)
	}
	b.fleet.Resume(b.victims...)
	all := len(b.fleet.Nodes())
	if err := b.obs.waitFor(ctx, "every node to be Ready and untainted", 3*time.Minute, func() bool {
		return b.obs.countWhere(isRecovered) == all
	}); err != nil {
		return err
	}
	r.Recovered = time.Now()
	fmt.Printf("Every node is Ready and untainted again, %s after the resume.\n", secs(r.Recovered.Sub(r.AllTainted)))
	if flowAtStop != nil {
		flowAtRecovery, err := scrapeFlowControl(ctx, b.env.Config)
		if err != nil {
			return err
		}
		r.FlowControl = flowAtRecovery.since(flowAtStop)
	}
	after, err := cpuTime(proc.PID())
	if err != nil {
		return err
	}
	r.CPUSecondsFailure = (after - before).Seconds()
	return nil
}

// hold waits d, unless ctx ends or the controller exits first.
func hold(ctx context.Context, proc *running, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-proc.Exited():
		return fmt.Errorf("%s exited (see its log)", proc.Path)
	}
}

func seconds(d time.Duration) *float64 {
	s := d.Seconds()
	return &s
}

// secs formats a duration in seconds with one decimal.
func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
