package nodehealth

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// guardStatus is what the disruption guard needs of a node. A node silent
// past its deadline is silent since then. A node not heard since this
// process first saw it, and already marked Unknown, is silent since its
// mark, the Ready condition's lastTransitionTime, capped at now: that is
// how a new leader or a restarted process tells the nodes that went silent
// together in a partition from those that died long before it, and does
// not take either for nodes going quiet now. The mark was written by the
// apiserver's clock, which the local one runs skew ahead of: the mark is
// carried over to the local clock, so that a replica whose clock runs ahead
// does not take fresh marks for old ones. A node in maintenance is counted
// nowhere, silent or not.
func guardStatus(node *corev1.Node, v health.Verdict, pool string, heard, inMaintenance bool, now time.Time, skew time.Duration) disruption.NodeStatus {
	st := disruption.NodeStatus{Pool: pool, Zone: disruption.ZoneKey(node), Excluded: disruption.Excluded(node), Maintenance: inMaintenance}
	ready := health.ReadyCondition(node)
	if ready != nil && ready.Status == corev1.ConditionTrue {
		st.Ready = true
	}
	if v.Expired {
		st.SilentSince = v.Deadline
	}
	if !heard && ready != nil && ready.Status == corev1.ConditionUnknown {
		marked := ready.LastTransitionTime.Add(skew)
		if marked.After(now) {
			marked = now
		}
		if st.SilentSince.IsZero() || marked.Before(st.SilentSince) {
			st.SilentSince = marked
		}
	}
	return st
}

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
