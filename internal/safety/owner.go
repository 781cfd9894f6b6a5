package safety

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// HeardLease records a renewal of the node's Lease as the informer delivers
// it, and says whether the node needs a look: the cheap path of a healthy
// node, which takes the tracker's lock alone.
func (m *Model) HeardLease(name string, lease *coordinationv1.Lease, now time.Time) health.Heard {
	return m.tracker.HeardLease(name, lease, now)
}

// HeardNode records a Node update as the informer delivers it, a heartbeat
// if its Ready condition's heartbeat moved, and says whether the node needs
// a look.
func (m *Model) HeardNode(node *corev1.Node, now time.Time) health.Heard {
	return m.tracker.HeardNode(node, now)
}

// Deadline returns when the node's grace runs out, as the heartbeats heard
// so far have it, false for a node with none.
func (m *Model) Deadline(name string) (time.Time, bool) { return m.tracker.Deadline(name) }

// Overdue returns the nodes whose grace ran out at now without a verdict
// that says so: their look was lost, or is late.
func (m *Model) Overdue(now time.Time) []string { return m.tracker.Overdue(now) }

// SetPool gives the pool its disruption settings, nil for a pool whose
// policy is gone. What that changes beyond the pool's nodes (its hold, its
// zones' states) is returned by the next look or tick, which tell it; the
// policy's change has every node looked at again.
func (m *Model) SetPool(name string, p *disruption.Pool, now time.Time) {
	m.turn.Lock()
	defer m.turn.Unlock()
	c := m.guard.SetPool(name, p, now)
	m.pending = merge(m.pending, c)
}

// takePending returns what changed outside a look or tick since the last
// one, and forgets it.
func (m *Model) takePending() disruption.Change {
	c := m.pending
	m.pending = disruption.Change{}
	return c
}

// Snapshot returns the disruption state at one moment: the zones, the
// pools' holds, the halt and the freeze.
func (m *Model) Snapshot() disruption.Snapshot {
	m.turn.Lock()
	defer m.turn.Unlock()
	return m.guard.Snapshot()
}

// Hold says why the node's NoExecute taint and evictions are held, "" for
// nothing.
func (m *Model) Hold(name string) string {
	m.turn.Lock()
	defer m.turn.Unlock()
	return m.guard.Hold(name)
}

// DestructiveAllowedFor reports whether the node's pods may be evicted for
// its failure now, and if not, why.
func (m *Model) DestructiveAllowedFor(name string) (bool, string) {
	m.turn.Lock()
	defer m.turn.Unlock()
	why := m.evictionHold(name)
	return why == "", why
}
