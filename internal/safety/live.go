package safety

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// Confirm judges a node again from what a live read shows, just before it
// is marked: a heartbeat the cache had not shown, or an outage excused while
// the read was in flight, moves the deadline. It reports whether the node is
// still silent, with the verdict that stands.
func (m *Model) Confirm(node *corev1.Node, lease *coordinationv1.Lease, grace health.Grace, now time.Time) (health.Verdict, bool) {
	m.turn.Lock()
	defer m.turn.Unlock()
	obs := m.tracker.ObserveLive(node.Name, node.UID, health.PulseOf(node, lease), now)
	v := health.Judge(node, obs.LastHeartbeat, grace, now)
	silent := !obs.Renewed && v.Expired
	if silent {
		m.confirmed[node.Name] = now
	}
	return v, silent
}

// MarksPods reports whether the node's pods are to be marked NotReady as
// the node stands: it is Unknown (the controller found it silent) and
// nothing holds the marking. A look decides it so, and so does the pods'
// own turn, which may come after the node is back.
func (m *Model) MarksPods(node *corev1.Node) bool {
	m.turn.Lock()
	defer m.turn.Unlock()
	return m.marksPods(node)
}

// marksPods is MarksPods within a decision.
func (m *Model) marksPods(node *corev1.Node) bool {
	if WantedNoExecute(node) != corev1.TaintNodeUnreachable {
		return false
	}
	ok, _ := m.guard.PodMarkingAllowedFor(node.Name)
	return ok
}

// Fresh reports whether the node's silence was confirmed from a live read
// within the last second, and nothing was heard of it since: a write that
// follows needs no live read of its own.
func (m *Model) Fresh(name string, now time.Time) bool {
	m.turn.Lock()
	at, ok := m.confirmed[name]
	m.turn.Unlock()
	return ok && now.Sub(at) < freshFor && m.tracker.HeardAt(name).Before(at)
}

// heardLive records what a live read shows of a tracked node, as every
// live read is heard: a heartbeat it shows is dated from the read, as one
// the watch delivers is from its delivery, whichever comes first. It reports
// whether the node was heard within its grace: it is alive, whatever the
// cache says of it, and nothing is to be evicted from it for its silence.
// The pods of a node that came back while the watch lagged are not evicted
// in the moment before its heartbeats arrive. A node not looked at yet is
// not judged here.
func (m *Model) heardLive(node *corev1.Node, lease *coordinationv1.Lease, grace time.Duration, now time.Time) bool {
	if !m.tracker.Tracked(node.Name, node.UID) {
		return false
	}
	m.tracker.ObserveLive(node.Name, node.UID, health.PulseOf(node, lease), now)
	heard := m.tracker.HeardAt(node.Name)
	return !heard.IsZero() && now.Sub(heard) < grace
}

// Back reports, from a node and its Lease as read live, whether the node is
// back: Ready, or, still marked Unknown, heard within its grace. Nothing is
// evicted from a node that is back, nor its pods marked NotReady: the watch
// may lag behind a node that has just come back, and the cache still show
// it down.
func (m *Model) Back(live *corev1.Node, lease *coordinationv1.Lease, grace time.Duration, now time.Time) bool {
	m.turn.Lock()
	defer m.turn.Unlock()
	heard := m.heardLive(live, lease, grace, now)
	ready := health.ReadyCondition(live)
	switch {
	case ready == nil:
		return false
	case ready.Status == corev1.ConditionTrue:
		return true
	default:
		return ready.Status == corev1.ConditionUnknown && heard
	}
}

// Silent reports, from a node and its Lease as read live, whether the node
// is still silent: marked Unknown, and not heard within its grace. Its pods
// are marked NotReady only then: a kubelet that is back, Ready or not, owns
// its pods' readiness.
func (m *Model) Silent(live *corev1.Node, lease *coordinationv1.Lease, grace time.Duration, now time.Time) bool {
	m.turn.Lock()
	defer m.turn.Unlock()
	heard := m.heardLive(live, lease, grace, now)
	ready := health.ReadyCondition(live)
	return ready != nil && ready.Status == corev1.ConditionUnknown && !heard
}
