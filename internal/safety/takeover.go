package safety

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
)

// Seed counts every node in the guard before the first look, as the cluster
// shows them: a new leader judges zones, the halt and the freeze from every
// node, not from the few it happens to look at first. It also reads how far
// the local clock runs ahead of the apiserver's (now minus apiNow), once for
// the process's life.
//
// kept is what the cluster kept of the disruption state, on the apiserver's
// clock: a new leader carries on with the freeze the old one held, its
// window and its cooldown, and knows of the spans no leader could mark a
// node in (AnnotationUnwatched).
//
// settings is called for every node before the model's turn is taken: the
// policies it reads give the model their pools (SetPool), which takes the
// turn, the first time they are read.
func (m *Model) Seed(nodes []*corev1.Node, settings func(*corev1.Node) policy.Settings, kept Kept, now, apiNow time.Time) disruption.Change {
	pools := make([]policy.Settings, len(nodes))
	for i, node := range nodes {
		pools[i] = settings(node)
	}
	m.turn.Lock()
	defer m.turn.Unlock()
	m.skew = now.Sub(apiNow)
	freeze := kept.Freeze
	if freeze != nil {
		freeze = ptr.To(m.shiftRecord(*freeze, m.skewNow()))
	}
	for _, o := range kept.Unwatched {
		m.guard.Excuse(o.From.Add(m.skewNow()), o.To.Add(m.skewNow()), now)
	}
	statuses := make(map[string]disruption.NodeStatus, len(nodes))
	m.unseen = make(map[string]struct{}, len(nodes))
	for i, node := range nodes {
		m.unseen[node.Name] = struct{}{}
		w, held := m.maintenance(node, pools[i], now)
		// Nothing is heard yet: a node already marked counts as silent
		// since its mark, unless its maintenance holds it.
		statuses[node.Name] = m.status(node, health.Verdict{}, pools[i].Pool, time.Time{}, w, held, now)
	}
	return m.guard.Seed(statuses, freeze, now)
}

// Kept is what the cluster keeps of the disruption state for a new leader,
// on the apiserver's clock.
type Kept struct {
	// Freeze is the partition freeze (AnnotationFreeze), nil for none.
	Freeze *disruption.Record
	// Unwatched are the recent spans in which no leader could mark a node
	// (AnnotationUnwatched).
	Unwatched []disruption.Span
}

// UnwatchedSpans returns the recent spans in which no leader could mark a
// node (the outages excused, the time before this process took over), as
// the cluster should keep them, on the apiserver's clock.
func (m *Model) UnwatchedSpans(now time.Time) []disruption.Span {
	m.turn.Lock()
	defer m.turn.Unlock()
	spans := m.guard.Excused(now)
	d := m.skewNow()
	for i := range spans {
		spans[i].From, spans[i].To = spans[i].From.Add(-d), spans[i].To.Add(-d)
	}
	return spans
}

// FreezeRecord returns the partition freeze as the cluster should keep it,
// on the apiserver's clock, and whether one holds.
func (m *Model) FreezeRecord() (disruption.Record, bool) {
	m.turn.Lock()
	defer m.turn.Unlock()
	r, ok := m.guard.FreezeRecord()
	if !ok {
		return r, false
	}
	return m.shiftRecord(r, -m.skewNow()), true
}

// shiftRecord moves a freeze record's times by d: from the apiserver's
// clock to the local one, or back.
func (m *Model) shiftRecord(r disruption.Record, d time.Duration) disruption.Record {
	shift := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.Add(d)
	}
	return disruption.Record{Since: shift(r.Since), From: shift(r.From), ClearSince: shift(r.ClearSince)}
}

// skewNow returns the skew read at Seed.
func (m *Model) skewNow() time.Duration {
	return m.skew
}

// Excuse takes a span during which the controller could not reach the
// apiserver off every node's silence, and out of the partition freeze's
// window: the kubelets' heartbeats could not be written, or not be seen, so
// the span says nothing of the nodes.
func (m *Model) Excuse(from, to, now time.Time) {
	m.turn.Lock()
	defer m.turn.Unlock()
	m.tracker.Excuse(from, to)
	m.guard.Excuse(from, to, now)
}

// Unwatched takes a span no leader watched the cluster (this process took
// the leader election Lease from one that last renewed it at from) out of
// the partition freeze's window, as an outage: no node could be marked in
// it, so the nodes marked before it and those seen going quiet after it may
// have gone silent together. Unlike an outage, it says nothing of the
// nodes' heartbeats, which the apiserver took all along: no node's silence
// is excused.
func (m *Model) Unwatched(from, to, now time.Time) {
	m.turn.Lock()
	defer m.turn.Unlock()
	m.guard.Excuse(from, to, now)
}
