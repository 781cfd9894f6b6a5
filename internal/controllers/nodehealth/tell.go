package nodehealth

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety/act"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/taints"
)

// lookTimes are when a look began, and when its node was handed to the work
// queue for its passed deadline (zero if it was not).
type lookTimes struct {
	handed, start time.Time
}

// tell logs, counts and records what a look did; done is false when it
// failed part way, and only what it did before is told.
func (r *Reconciler) tell(ctx context.Context, out act.Outcome, done bool, at lookTimes) {
	log := ctrl.LoggerFrom(ctx)
	r.applyChange(ctx, out.Change)
	d, node := out.Decision, out.Node
	if d.First && registeredSince(node, r.told.started) {
		r.eventRegistered(node)
	}
	if m := out.Mark; m != nil {
		markDelay.Observe(m.Delay.Seconds())
		log.Info("Marked node unreachable", append([]any{"deadline", m.Verdict.Deadline, "delay", m.Delay,
			"neverReported", m.Verdict.NeverReported}, markStages(m, at)...)...)
		// As with kube-controller-manager, only a node the mark took from
		// Ready is announced: one already NotReady, or never ready, lost
		// nothing.
		if m.WasReady {
			r.eventNotReady(node)
		}
		return
	}
	if d.Waiting != "" {
		log.V(1).Info("NoExecute taint held back", "taint", d.Want, "reason", d.Waiting, "retryAt", d.Next.At)
	}
	if !done {
		return
	}
	if w := d.Write; out.Wrote {
		switch {
		case w.Added != "":
			taintsApplied.WithLabelValues(zoneLabel(node), d.Pool).Inc()
			log.Info("Tainted node NoExecute", "taint", w.Added, "countdown", countdownText(w.Countdown))
		case w.Removed && d.Held != "":
			log.Info("Removing NoExecute taint while the node is held; its countdown is kept", "reason", d.Held,
				"countdown", countdownText(w.Countdown))
		}
		log.V(1).Info("Updated taints", "noSchedule", taints.WantedNoSchedule(node), "noExecute", d.Want)
	}
	if d.Recorded {
		moveState(d.Previous, d.Verdict.State)
	}
	r.reconcileMaintenance(ctx, node, d)
}

// countdownText says what a countdown record keeps, for the logs.
func countdownText(c *safety.Countdown) string {
	if c == nil {
		return "new"
	}
	return fmt.Sprintf("started %s, %s served", c.Started.UTC().Format("15:04:05"), c.Served())
}

// guardChanged carries out a change of the guard made by the seed or a
// node's removal, and tells it.
func (r *Reconciler) guardChanged(ctx context.Context, c disruption.Change) {
	r.applyChange(ctx, r.exec.Changed(ctx, port{r}, c))
}

// applyChange tells what a change of the guard means beyond one node:
// metrics, logs and events. The executor has woken the nodes it affects
// and kept the freeze in the cluster.
func (r *Reconciler) applyChange(ctx context.Context, c safety.Change) {
	if c.Empty() {
		return
	}
	log := ctrl.LoggerFrom(ctx)
	for _, zone := range c.Zones {
		r.told.zones.publish(zone, c.State.Zones[zone], c.Version)
	}
	for _, pool := range c.Held {
		if why := c.State.Held[pool]; why != "" {
			log.Info("Pool holds NoExecute taints and evictions back", "pool", pool, "reason", why)
		} else {
			log.Info("Pool no longer holds NoExecute taints and evictions back", "pool", pool)
		}
	}
	for _, zone := range c.StateChanged {
		log.Info("Zone changed state", "zone", zone.Zone, "pool", zone.Pool, "state", c.State.Zones[zone].State)
	}
	switch {
	case c.Halt && c.Halted:
		log.Info("Every zone is fully disrupted: removing NoExecute taints and holding evictions")
	case c.Halt:
		log.Info("A zone is back: every node gets a fresh grace period")
	}
	if c.Decided {
		log.Info("Every node is known to live or to be going quiet: destructive work may begin",
			"partitionFreeze", c.State.Frozen)
	}
	if c.Freeze {
		lost, total := c.Lost, c.Total
		setFreezeMetric(c.Frozen)
		if c.Frozen {
			log.Info("Partition freeze: most heartbeats were lost at once", "silentNodes", lost, "nodes", total)
		} else {
			log.Info("Partition freeze ended", "silentNodes", lost, "nodes", total)
		}
		r.eventFreeze(c.Frozen, lost, total)
	}
}

// markStages splits a mark's time from the node's deadline into its
// stages, observes each (markStage) and returns them as log values: until
// the node was handed to the work queue (wake), waiting there for a worker
// (queue), the live reads (read), the mark's write (patch), and the rest of
// the look (look). A node looked at for another reason than its deadline
// wake (a watch event, a retry) has only the last three.
func markStages(m *act.Mark, at lookTimes) []any {
	look := m.Delay - m.Read - m.Patch
	stages := []any{"read", m.Read, "patch", m.Patch}
	markStage.WithLabelValues("read").Observe(m.Read.Seconds())
	markStage.WithLabelValues("patch").Observe(m.Patch.Seconds())
	if !at.handed.IsZero() {
		wake, queue := at.handed.Sub(m.Verdict.Deadline), at.start.Sub(at.handed)
		look -= wake + queue
		markStage.WithLabelValues("wake").Observe(wake.Seconds())
		markStage.WithLabelValues("queue").Observe(queue.Seconds())
		stages = append(stages, "wake", wake, "queue", queue)
		markStage.WithLabelValues("look").Observe(look.Seconds())
		stages = append(stages, "look", look)
	}
	return stages
}
