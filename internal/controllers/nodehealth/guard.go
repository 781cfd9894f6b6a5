package nodehealth

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
)

// ApplyGuardChange acts on a change of the guard made outside a reconcile,
// such as a pool's settings changing with its policy.
func (r *Reconciler) ApplyGuardChange(ctx context.Context, c disruption.Change) {
	r.applyChange(ctx, c, r.Clock.Now())
}

// applyChange acts on what a guard update changed beyond one node: metrics,
// logs and events, and the nodes whose taints the change affects.
func (r *Reconciler) applyChange(ctx context.Context, c disruption.Change, now time.Time) {
	if c.Empty() {
		return
	}
	if c.Freeze || c.Cooldown {
		r.keepFreeze(ctx, true)
	}
	log := ctrl.LoggerFrom(ctx)
	for _, zone := range c.Zones {
		publishZone(r.Guard, zone)
	}
	if len(c.Held) > 0 {
		for _, pool := range c.Held {
			if why := r.Guard.PoolHold(pool); why != "" {
				log.Info("Pool holds NoExecute taints and evictions back", "pool", pool, "reason", why)
			} else {
				log.Info("Pool no longer holds NoExecute taints and evictions back", "pool", pool)
			}
		}
		r.wakes.now(r.Guard.PoolNodes(c.Held...)...)
	}
	if len(c.StateChanged) > 0 {
		for _, zone := range c.StateChanged {
			log.Info("Zone changed state", "zone", zone.Zone, "pool", zone.Pool, "state", r.Guard.Zone(zone).State)
		}
		// Their nodes' place and pace in the tainting queue changed.
		r.wakes.now(r.Guard.Nodes(c.StateChanged...)...)
	}
	if c.Halt {
		if c.Halted {
			log.Info("Every zone is fully disrupted: removing NoExecute taints and holding evictions")
		} else {
			// Nodes came back: judge nobody on heartbeats lost while the
			// whole cluster was dark.
			r.Tracker.RefreshAll(now)
			log.Info("A zone is back: every node gets a fresh grace period")
		}
		r.wakes.now(r.Guard.Nodes()...)
	}
	if c.Decided {
		log.Info("Every node is known to live or to be going quiet: destructive work may begin",
			"partitionFreeze", r.Guard.Frozen())
		r.wakes.now(r.Guard.Nodes()...)
	}
	if c.Freeze {
		lost, total := r.Guard.LostCount(now)
		setFreezeMetric(c.Frozen)
		if c.Frozen {
			log.Info("Partition freeze: most heartbeats were lost at once", "silentNodes", lost, "nodes", total)
		} else {
			log.Info("Partition freeze ended", "silentNodes", lost, "nodes", total)
		}
		r.eventFreeze(c.Frozen, lost, total)
		r.wakes.now(r.Guard.Nodes()...)
	}
}
