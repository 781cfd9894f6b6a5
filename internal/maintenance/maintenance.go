package maintenance

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Conditions are the node conditions that, True, say the node's silence is
// planned. MaintenancePlanned and DrainInProgress are not among them: a node
// that is only about to be worked on, or is still being emptied, is expected
// to keep heartbeating, and its silence is a failure like any other.
var Conditions = [...]corev1.NodeConditionType{
	corev1.NodeMaintenanceInProgress,
	corev1.NodeGracefulNodeShutdownInProgress,
	corev1.NodeDrained,
}

// Window is a node's maintenance as its conditions show it at one instant.
// The zero Window is a node not in maintenance.
type Window struct {
	// Condition is the maintenance condition that is True, the one that
	// turned True first when several are; "" when none is.
	Condition corev1.NodeConditionType
	// Since is when Condition turned True, on the local clock; zero when
	// whoever set it wrote no transition time.
	Since time.Time
	// Until is when the hold on the node's NoExecute taint ends: the
	// maintenance grace after the later of Since and the moment the node
	// stopped being Ready. It is zero while the node is Ready, or has never
	// reported: nothing is held yet, and the grace has not begun.
	Until time.Time
}

// In reports whether the node is in maintenance.
func (w Window) In() bool { return w.Condition != "" }

// Holds reports whether, at now, the maintenance holds the node's NoExecute
// taint and evictions (and, for a node that is down, keeps it out of the
// disruption counts): it is in maintenance, and its grace has not run out.
func (w Window) Holds(now time.Time) bool {
	return w.In() && (w.Until.IsZero() || now.Before(w.Until))
}

// Of returns the node's maintenance window under the given grace; a grace
// of zero or less turns maintenance off, and every node is judged as if it
// had no maintenance condition. skew is how far the local clock runs ahead
// of the clocks that wrote the conditions' times (the apiserver's, as far as
// the controller can tell): it is added to every time read.
//
// The grace counts from the later of the maintenance starting and the node
// ceasing to be Ready, both as the cluster stores them: a node drained at
// ten and rebooted at half past eleven gets its whole grace from half past
// eleven, and a node that failed before its maintenance was declared gets it
// from the declaration. A condition written without a transition time counts
// from the node ceasing to be Ready.
func Of(node *corev1.Node, grace, skew time.Duration) Window {
	if grace <= 0 {
		return Window{}
	}
	var w Window
	var ready *corev1.NodeCondition
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		if c.Type == corev1.NodeReady {
			ready = c
			continue
		}
		if c.Status != corev1.ConditionTrue || !isMaintenance(c.Type) {
			continue
		}
		since := localTime(c.LastTransitionTime.Time, skew)
		if w.Condition == "" || earlier(since, w.Since) {
			w.Condition, w.Since = c.Type, since
		}
	}
	if w.Condition == "" || ready == nil || ready.Status == corev1.ConditionTrue {
		return w
	}
	from := localTime(ready.LastTransitionTime.Time, skew)
	if w.Since.After(from) {
		from = w.Since
	}
	w.Until = from.Add(grace)
	return w
}

// earlier reports whether a is before b, a time left unwritten (zero)
// coming after every written one: the window is dated by a condition that
// says when it began, when one does.
func earlier(a, b time.Time) bool {
	switch {
	case a.IsZero():
		return false
	case b.IsZero():
		return true
	default:
		return a.Before(b)
	}
}

// localTime carries a time read from the API to the local clock; the zero
// time stays zero.
func localTime(t time.Time, skew time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(skew)
}

func isMaintenance(t corev1.NodeConditionType) bool {
	for _, c := range Conditions {
		if c == t {
			return true
		}
	}
	return false
}
