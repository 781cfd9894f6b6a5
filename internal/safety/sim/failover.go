package sim

import (
	"context"
	"time"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
)

// controllers holds the leader, and the phantom of the last one to die.
type controllers struct {
	w          *world
	leader     *controller
	old        *controller
	failedOver time.Time
	// oldFrozen is true while the old leader holds the freeze it held when
	// it died, and had written down.
	oldFrozen bool
	obs       *observer
}

// policyChanged tells both controllers of the pool's new settings.
func (cs *controllers) policyChanged() {
	for _, c := range []*controller{cs.leader, cs.old} {
		if c == nil {
			continue
		}
		c.model.SetPool("p", ptrTo(c.w.pool()), c.w.now)
		for _, k := range c.w.kubelets {
			if k.pool == "p" {
				c.wakeNow(k.name)
			}
		}
	}
}

// outageEnded tells every controller of the outage, as the reconcilers'
// sight.Monitor does once the apiserver answers again: each executor
// excuses it before it next decides.
func (cs *controllers) outageEnded(from, to time.Time) {
	for _, c := range []*controller{cs.leader, cs.old} {
		if c != nil {
			c.ended = append(c.ended, disruption.Span{From: from, To: to})
		}
	}
	// The leader's resync keeps it in the cluster at once.
	cs.leader.exec.KeepFreeze(context.Background(), port{cs.leader})
}

// failover kills the leader: it becomes the phantom, and a new process
// starts from the cluster alone.
func (cs *controllers) failover() {
	cs.leader.phantom = true
	cs.old = cs.leader
	// The freeze a new leader must keep is the one the cluster kept: one
	// the old leader held but could not write down (its writes refused)
	// is known to no one else. The new leader judges the partition afresh
	// from the cluster, and the ground truth's check (freeze a partition)
	// holds it to that.
	cs.oldFrozen = cs.old.model.Snapshot().Frozen && cs.w.freeze != nil
	// The old leader last renewed its Lease when the apiserver last
	// answered it.
	renewed := cs.w.now
	if cs.w.down {
		renewed = cs.w.downSince
	}
	cs.leader = newController(cs.w, cs.obs, renewed)
	cs.failedOver = cs.w.now
	cs.obs.failoverTimes = append(cs.obs.failoverTimes, cs.w.now)
	for name := range cs.w.denied {
		cs.obs.deniedAtFailover[name] = cs.w.now
	}
	cs.obs.oldCooling, cs.obs.oldHot = time.Time{}, time.Time{}
	cs.obs.keptAtFailover = time.Time{}
	if f := cs.w.freeze; f != nil {
		cs.obs.keptAtFailover = f.ClearSince
	}
}
