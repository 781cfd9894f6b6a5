package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// pollInterval is how often an act looks at the cluster.
const pollInterval = 200 * time.Millisecond

// finalHold is how long the recovered cluster is shown after the last act.
const finalHold = 3 * time.Second

// actSlack is what every act's timeout allows beyond the timings it waits
// for: a loaded machine's delays, and the apiserver's.
const actSlack = 30 * time.Second

// demo holds the running demo's parts and what the script has done so far.
type demo struct {
	fleet    nodeFleet
	timings  timings
	obs      *observer
	start    time.Time
	logPath  string
	timeline *timeline

	mu      sync.Mutex
	caption string
	done    []actResult
	// statusReport is what the status subcommand said while a node was
	// dead and its pods were waiting for eviction.
	statusReport string
}

// actResult is what one act showed.
type actResult struct {
	Key     string // "a" to "f"
	Title   string
	Took    time.Duration
	Notes   []string
	Deleted int // pods deleted during the act
	Err     error
}

// act is one step of the script; it returns what it measured.
type act struct {
	key, title, caption string
	timeout             time.Duration
	run                 func(ctx context.Context, r *actResult) error
}

// play runs the acts in order and stops at the first that fails.
func (d *demo) play(ctx context.Context) ([]actResult, error) {
	all := d.fleet.Nodes()
	zones := d.fleet.Zones()
	victim := d.fleet.InZone(zones[0])[0]
	deadZone := zones[len(zones)-1]
	zoneNodes := d.fleet.InZone(deadZone)
	t := d.timings
	// Each act's timeout is the longest its story takes on these timings,
	// and actSlack.
	recoverWithin := t.readyWithin() + actSlack
	taintZoneWithin := time.Duration(float64(len(zoneNodes)) / t.evictionRate * float64(time.Second))
	acts := []act{
		{"a", "settle", "(a) Settle: every node reports Ready, nothing is tainted, every pod runs", time.Minute + t.startupGrace,
			d.settle(all)},
		{"b", "one node dies", fmt.Sprintf("(b) Node %s dies: Unknown %v after its last heartbeat, tainted NoExecute, its pods evicted %ds later",
			victim, t.grace, t.tolerationSeconds),
			t.unknownWithin() + t.toleration() + actSlack,
			d.nodeDies(victim)},
		{"c", "it recovers", fmt.Sprintf("(c) %s comes back: Ready again, its taints removed at once", victim), recoverWithin,
			d.recover([]string{victim})},
		{"d", "a zone dies", fmt.Sprintf("(d) Zone %s dies (%d nodes) beside healthy zones: tainted one per second, pods evicted; then it comes back", deadZone, len(zoneNodes)),
			t.unknownWithin() + taintZoneWithin + t.toleration() + actSlack + recoverWithin,
			d.zoneDies(deadZone)},
		{"e", "everything dies", "(e) Every node goes silent at once: held (a partition freeze, or every zone down), nothing is tainted NoExecute, no pod is evicted",
			t.unknownWithin() + t.observeWindow() + actSlack,
			d.allDie(all)},
		{"f", "everything recovers", "(f) Every node comes back: all Ready, nothing was lost in (e)", recoverWithin + t.freezeCooldown,
			d.recover(all)},
	}
	var results []actResult
	for _, a := range acts {
		r := d.runAct(ctx, a)
		results = append(results, r)
		if r.Err != nil {
			return results, errors.Join(fmt.Errorf("act (%s) %s: %w", a.key, a.title, r.Err), d.fleet.Resume(all...))
		}
	}
	// Keep sampling the recovered cluster for a moment, so that the
	// timeline shows how it ends.
	d.setCaption("Done: every node is back")
	hold := time.NewTimer(finalHold)
	defer hold.Stop()
	select {
	case <-ctx.Done():
		return results, fmt.Errorf("interrupted: %w", ctx.Err())
	case <-hold.C:
	}
	return results, nil
}

func (d *demo) runAct(ctx context.Context, a act) actResult {
	d.setCaption(a.caption)
	d.timeline.mark(a.key)
	fmt.Println("▶ " + a.caption)
	before, err := d.obs.observe(ctx)
	r := actResult{Key: a.key, Title: a.title}
	start := time.Now()
	if err == nil {
		actCtx, cancel := context.WithTimeout(ctx, a.timeout)
		err = a.run(actCtx, &r)
		cancel()
	}
	r.Took, r.Err = time.Since(start), err
	if after, err := d.obs.observe(context.WithoutCancel(ctx)); err == nil && before != nil {
		r.Deleted = after.PodsDeleted - before.PodsDeleted
	}
	d.mu.Lock()
	d.done = append(d.done, r)
	d.mu.Unlock()
	return r
}

func (d *demo) setCaption(c string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.caption = c
}

func (d *demo) settle(all []string) func(context.Context, *actResult) error {
	return func(ctx context.Context, r *actResult) error {
		healthy := &milestone{name: "every node Ready without taints", cond: func(s *snapshot) bool {
			return len(s.Nodes) == len(all) && s.all(all, isHealthy)
		}}
		running := &milestone{name: "every pod running", cond: func(s *snapshot) bool {
			return s.PodsRunning == len(all)*podsPerNode
		}}
		// A real kubelet says Ready before it has a Lease, which it creates
		// at its first renewal once its Node exists, up to 10s later: the
		// story's silences start from a Lease renewal.
		leased := &milestone{name: "every node's Lease renewed", cond: func(s *snapshot) bool {
			return len(s.Nodes) == len(all) && s.all(all, hasLease)
		}}
		if err := d.await(ctx, time.Now(), healthy, running, leased); err != nil {
			return err
		}
		r.Notes = append(r.Notes, fmt.Sprintf("%d nodes Ready with no taints after %s, their %d pods running after %s, every Lease renewed after %s",
			len(all), secs(healthy.at), len(all)*podsPerNode, secs(running.at), secs(leased.at)))
		return nil
	}
}

func (d *demo) nodeDies(victim string) func(context.Context, *actResult) error {
	return func(ctx context.Context, r *actResult) error {
		one := []string{victim}
		t0 := time.Now()
		if err := d.fleet.Stop(victim); err != nil {
			return err
		}
		unknown := &milestone{name: "Ready=Unknown", cond: func(s *snapshot) bool { return s.all(one, isUnknown) }}
		tainted := &milestone{name: "unreachable:NoExecute", cond: func(s *snapshot) bool { return s.all(one, isTainted) }}
		evicted := &milestone{name: "its pods deleted", cond: func(s *snapshot) bool { return s.all(one, podsGone) }}
		if err := d.await(ctx, t0, unknown, tainted); err != nil {
			return err
		}
		// The silence began at the last renewal, which may be well before
		// the stop: a real kubelet renews every 10s.
		silent, err := d.obs.silentFor(ctx, victim, t0.Add(unknown.at))
		if err != nil {
			return err
		}
		// What an operator asking "why, and when will my pods go" sees.
		report, err := d.obs.controller.status(ctx)
		if err != nil {
			return err
		}
		d.statusReport = report
		if err := d.await(ctx, t0, evicted); err != nil {
			return err
		}
		r.Notes = append(r.Notes,
			fmt.Sprintf("stop -> Ready=Unknown %s (%s after its last heartbeat), -> unreachable:NoExecute %s, -> its %d pods deleted %s",
				secs(unknown.at), silent, secs(tainted.at), podsPerNode, secs(evicted.at)))
		return nil
	}
}

func (d *demo) recover(names []string) func(context.Context, *actResult) error {
	return func(ctx context.Context, r *actResult) error {
		t0 := time.Now()
		if err := d.fleet.Resume(names...); err != nil {
			return err
		}
		ready := &milestone{name: "Ready=True", cond: func(s *snapshot) bool { return s.all(names, isReady) }}
		clean := &milestone{name: "no NoExecute taint", cond: func(s *snapshot) bool { return s.all(names, isRecovered) }}
		free := &milestone{name: "no hold on destructive work", cond: func(s *snapshot) bool { return s.held() == "" }}
		if err := d.await(ctx, t0, ready, clean, free); err != nil {
			return err
		}
		r.Notes = append(r.Notes, fmt.Sprintf("resume -> %s Ready %s, NoExecute taints gone %s, no hold on destructive work %s",
			plural(len(names), "node"), secs(ready.at), secs(clean.at), secs(free.at)))
		return nil
	}
}

func (d *demo) zoneDies(zone string) func(context.Context, *actResult) error {
	return func(ctx context.Context, r *actResult) error {
		names := d.fleet.InZone(zone)
		others := slices.DeleteFunc(d.fleet.Nodes(), func(n string) bool { return slices.Contains(names, n) })
		before, err := d.obs.observe(ctx)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := d.fleet.Stop(names...); err != nil {
			return err
		}
		unknown := &milestone{name: "zone Unknown", cond: func(s *snapshot) bool { return s.all(names, isUnknown) }}
		first := &milestone{name: "first NoExecute taint", cond: func(s *snapshot) bool { return s.count(names, isTainted) > 0 }}
		tainted := &milestone{name: "every node tainted NoExecute", cond: func(s *snapshot) bool { return s.all(names, isTainted) }}
		evicted := &milestone{name: "the zone's pods deleted", cond: func(s *snapshot) bool { return s.all(names, podsGone) }}
		if err := d.await(ctx, t0, unknown, first, tainted, evicted); err != nil {
			return err
		}
		after, err := d.obs.observe(ctx)
		if err != nil {
			return err
		}
		if !after.all(others, isRecovered) || after.deletedOn(others) != before.deletedOn(others) {
			return errors.New("the healthy zones were touched: a node there is not Ready, is tainted NoExecute or lost a pod")
		}
		gap := "n/a"
		if len(names) > 1 {
			gap = secs((tainted.at - first.at) / time.Duration(len(names)-1))
		}
		r.Notes = append(r.Notes,
			fmt.Sprintf("stop -> all %d nodes Unknown %s; NoExecute taints from %s to %s (one per %s)",
				len(names), secs(unknown.at), secs(first.at), secs(tainted.at), gap),
			fmt.Sprintf("stop -> all %d of the zone's pods deleted %s; the other zones untouched", after.deletedOn(names)-before.deletedOn(names), secs(evicted.at)))
		return d.recover(names)(ctx, r)
	}
}

func (d *demo) allDie(all []string) func(context.Context, *actResult) error {
	return func(ctx context.Context, r *actResult) error {
		before, err := d.obs.observe(ctx)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := d.fleet.Stop(all...); err != nil {
			return err
		}
		unknown := &milestone{name: "every node Unknown", cond: func(s *snapshot) bool { return s.all(all, isUnknown) }}
		if err := d.await(ctx, t0, unknown); err != nil {
			return err
		}
		// Watch for the window in which taints and evictions would
		// otherwise have happened.
		maxTainted, deleted := 0, before.PodsDeleted
		window := time.NewTimer(d.timings.observeWindow())
		defer window.Stop()
		tick := time.NewTicker(pollInterval)
		defer tick.Stop()
	watch:
		for {
			s, err := d.obs.observe(ctx)
			if err != nil {
				return err
			}
			maxTainted = max(maxTainted, s.count(all, func(n *nodeState) bool { return n.noExecute() != nil }))
			deleted = max(deleted, s.PodsDeleted)
			select {
			case <-ctx.Done():
				return fmt.Errorf("observing the hold: %w", ctx.Err())
			case <-window.C:
				break watch
			case <-tick.C:
			}
		}
		freeze, err := d.obs.partitionFreeze(ctx, t0)
		if err != nil {
			return err
		}
		if freeze == "" {
			freeze = "none seen"
		}
		r.Notes = append(r.Notes,
			fmt.Sprintf("stop -> all %d nodes Unknown %s; then watched %s: at most %d nodes tainted NoExecute, pods deleted %d -> %d",
				len(all), secs(unknown.at), d.timings.observeWindow(), maxTainted, before.PodsDeleted, deleted),
			"PartitionFreeze event: "+freeze)
		if maxTainted > 0 || deleted != before.PodsDeleted {
			return fmt.Errorf("nothing held: %d nodes tainted NoExecute, %d pods deleted", maxTainted, deleted-before.PodsDeleted)
		}
		return nil
	}
}

// milestone is a condition an act waits for, and when it first held.
type milestone struct {
	name string
	cond func(*snapshot) bool
	met  bool
	at   time.Duration
}

// await polls the cluster until every milestone has held once, recording
// for each how long after t0 it first held.
func (d *demo) await(ctx context.Context, t0 time.Time, ms ...*milestone) error {
	var pending []string
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		s, err := d.obs.observe(ctx)
		if err != nil && ctx.Err() == nil {
			return false, err
		}
		pending = pending[:0]
		for _, m := range ms {
			if !m.met && s != nil && m.cond(s) {
				m.met, m.at = true, s.At.Sub(t0)
			}
			if !m.met {
				pending = append(pending, m.name)
			}
		}
		return len(pending) == 0, nil
	})
	// The poll returns ctx.Err() when ctx ends, and observe's error as is.
	if err != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("still waiting for %s: %w", strings.Join(pending, ", "), err)
	}
	return err
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
