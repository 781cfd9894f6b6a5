package safety

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/maintenance"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
)

// status is what the disruption guard needs of a node.
//
// A node silent past its deadline is silent since then. A node marked
// Unknown and not heard since its mark is silent since the mark, at the
// latest: the Ready condition's lastTransitionTime, capped at now. That is
// how a new leader or a restarted process tells the nodes that went silent
// together in a partition from those that died long before it, and how a
// process whose deadlines moved (a refresh after every zone was down, an
// excused outage) still dates a silence from when it began. The
// mark was written by the apiserver's clock, which the local one runs skew
// ahead of: it is carried over to the local clock, so that a replica whose
// clock runs ahead does not take fresh marks for old ones. The rest is
// Counted's.
func (m *Model) status(node *corev1.Node, v health.Verdict, pool string, heardAt time.Time, w maintenance.Window, held bool, now time.Time) disruption.NodeStatus {
	st := Counted(node, pool, w, held)
	if v.Expired {
		st.SilentSince = v.Deadline
	}
	if ready := health.ReadyCondition(node); ready != nil && ready.Status == corev1.ConditionUnknown {
		marked := ready.LastTransitionTime.Add(m.skewNow())
		if marked.After(now) {
			marked = now
		}
		if heardAt.IsZero() || !heardAt.After(marked) {
			if st.SilentSince.IsZero() || marked.Before(st.SilentSince) {
				st.SilentSince = marked
			}
		}
	}
	return st
}

// Counted is how the zone, pool and freeze counts take the node, as the
// cluster shows it, leaving out when it fell silent, which only the model
// knows. w is the node's maintenance window, and held whether it holds the
// node.
//
// A Ready node counts as Ready in every count, whatever its maintenance
// conditions: only a node its maintenance holds, one that is down, leaves
// the counts. A node in maintenance whose grace has not run out, down or
// not yet, falls silent as planned: its silence is not counted towards a
// freeze or a breaker.
func Counted(node *corev1.Node, pool string, w maintenance.Window, held bool) disruption.NodeStatus {
	// A node in maintenance whose grace has not begun (it is Ready) or not
	// run out.
	planned := w.In() && (w.Until.IsZero() || held)
	st := disruption.NodeStatus{Pool: pool, Zone: disruption.ZoneKey(node), Excluded: disruption.Excluded(node), Planned: planned,
		Ready: health.ReadyStatus(node) == corev1.ConditionTrue}
	st.Maintenance = held && !st.Ready
	if st.Maintenance {
		st.MaintenanceSince = w.Since
	}
	return st
}

// stampSlack is how far a time this controller wrote into the API can run
// ahead of one written at the same moment by another writer: a taint's
// timeAdded is stamped a time the apiserver's clock has surely not reached
// (up to about two seconds ahead), and a condition's lastTransitionTime is
// kept in whole seconds. A countdown that began within it of a maintenance
// may have begun before it.
const stampSlack = 3 * time.Second

// maintenance returns the node's maintenance window and whether it holds
// the node at now, as MaintenanceOf, and keeps the grace it found, for
// while the node's record of it cannot be written.
func (m *Model) maintenance(node *corev1.Node, s policy.Settings, now time.Time) (maintenance.Window, bool) {
	w, held := MaintenanceOf(node, s, m.skewNow(), now)
	if !w.In() || health.ReadyStatus(node) == corev1.ConditionTrue {
		delete(m.graces, node.Name)
		return w, false
	}
	if !w.Until.IsZero() {
		if g, ok := m.graces[node.Name]; ok && g.Since.Equal(w.Since) && g.Until.Before(w.Until) {
			w.Until = g.Until
			held = w.Holds(now)
		}
		m.graces[node.Name] = MaintenanceGrace{Since: w.Since, Until: w.Until}
	}
	return w, held
}

// MaintenanceOf returns the node's maintenance window under its pool's
// settings as the cluster keeps it, and whether it holds the node at now.
// skew is how far the local clock runs ahead of the apiserver's.
//
// A maintenance grace runs once per failure within a maintenance: from the
// later of the maintenance's start and the node ceasing to be Ready, to the
// grace after it. A node whose Ready condition then changes status (not
// ready, then unreachable, then not ready again, each with a new transition
// time) does not start it again: the grace's end is kept on the Node
// (AnnotationMaintenanceGrace) and only ever moves earlier while the node
// stays down in the same maintenance. It has surely ended, too, once an
// eviction countdown began or went on within the maintenance (a NoExecute
// taint, or a countdown record, dated after the maintenance began). Both
// are what a new leader reads from the cluster. A node Ready again, or out
// of maintenance, ends it: a later failure gets a grace of its own.
func MaintenanceOf(node *corev1.Node, s policy.Settings, skew time.Duration, now time.Time) (maintenance.Window, bool) {
	w := maintenance.Of(node, s.MaintenanceGrace, skew)
	if !w.In() || health.ReadyStatus(node) == corev1.ConditionTrue {
		return w, false
	}
	if started := countdownStarted(node); !started.IsZero() && !w.Until.IsZero() {
		// The node has been down since its countdown began at the latest,
		// whatever later changes of its Ready condition (a mark, a kubelet
		// back and not ready) say: the grace counts from then, or from the
		// maintenance's start.
		if until := health.Later(w.Since, started.Add(skew)).Add(s.MaintenanceGrace); until.Before(w.Until) {
			w.Until = until
		}
	}
	if start := countdownSince(node); !start.IsZero() {
		if start = start.Add(skew); !start.Before(w.Since.Add(stampSlack)) && (w.Until.IsZero() || start.Before(w.Until)) {
			w.Until = start
		}
	}
	if g, ok := MaintenanceGraceOf(node); ok && !w.Until.IsZero() && g.Since.Add(skew).Equal(w.Since) {
		if until := g.Until.Add(skew); until.Before(w.Until) {
			w.Until = until
		}
	}
	return w, w.Holds(now)
}

// graceWrite returns the maintenance grace record the node should carry
// after a look that found its window w: the grace's start and end while it
// is in maintenance and down, on the apiserver's clock; nil otherwise. It
// reports whether that differs from what the node carries.
func (m *Model) graceWrite(node *corev1.Node, w maintenance.Window) (*MaintenanceGrace, bool) {
	have, ok := MaintenanceGraceOf(node)
	var want *MaintenanceGrace
	if w.In() && !w.Until.IsZero() {
		skew := m.skewNow()
		want = &MaintenanceGrace{Since: w.Since.Add(-skew), Until: w.Until.Add(-skew)}
	}
	switch {
	case want == nil:
		return nil, ok
	case !ok:
		return want, true
	default:
		return want, !have.Since.Equal(want.Since) || !have.Until.Equal(want.Until)
	}
}
