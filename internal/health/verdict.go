package health

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// State is the controller's judgement of a node.
type State uint8

// The states a node can be judged in. StateUnjudged is the zero value, for a
// node the controller has observed but not yet judged.
const (
	StateUnjudged State = iota
	// StateHealthy: heartbeats within grace and the kubelet says Ready=True.
	StateHealthy
	// StateNotReady: heartbeats within grace, but the kubelet says Ready=False.
	StateNotReady
	// StateNeverReported: heartbeats within grace, but the node has never
	// posted a Ready condition (it is still starting).
	StateNeverReported
	// StateUnreachable: no heartbeat for a whole grace period, or a Ready
	// condition that says Unknown.
	StateUnreachable
)

// States lists every judged state, for metrics that report each one.
var States = []State{StateHealthy, StateNotReady, StateNeverReported, StateUnreachable}

// String returns the state's name as used in metrics and logs.
func (s State) String() string {
	switch s {
	case StateHealthy:
		return "Healthy"
	case StateNotReady:
		return "NotReady"
	case StateNeverReported:
		return "NeverReported"
	case StateUnreachable:
		return "Unreachable"
	default:
		return "Unjudged"
	}
}

// Grace holds the grace periods that apply to a node.
type Grace struct {
	// Monitor applies to a node that has posted a Ready condition.
	Monitor time.Duration
	// Startup applies to a node that never has.
	Startup time.Duration
}

// Verdict is the judgement of one node at one instant.
type Verdict struct {
	State State
	// Deadline is when the node becomes unreachable if no heartbeat comes:
	// the last observed heartbeat plus the grace period that applies.
	Deadline time.Time
	// Expired is true once the deadline has passed without a heartbeat.
	Expired bool
	// NeverReported is true for a node that has never posted a Ready
	// condition; it gets the startup grace period.
	NeverReported bool
	// Grace is the grace period that applies, from the last heartbeat to
	// the deadline.
	Grace time.Duration
}

// Judge decides a node's state from its last heartbeat, as observed on the
// controller's clock, and the grace periods. The deadline itself belongs to
// the unreachable side: at now == Deadline the node is expired.
func Judge(node *corev1.Node, lastHeartbeat time.Time, grace Grace, now time.Time) Verdict {
	ready := ReadyCondition(node)
	v := Verdict{NeverReported: NeverReported(ready)}
	period := grace.Monitor
	if v.NeverReported {
		period = grace.Startup
	}
	v.Grace = period
	v.Deadline = lastHeartbeat.Add(period)
	v.Expired = !now.Before(v.Deadline)

	switch {
	case v.Expired:
		v.State = StateUnreachable
	case v.NeverReported && (ready == nil || ready.Status != corev1.ConditionUnknown):
		v.State = StateNeverReported
	case ready.Status == corev1.ConditionTrue:
		v.State = StateHealthy
	case ready.Status == corev1.ConditionFalse:
		v.State = StateNotReady
	default:
		// Unknown, whether posted by the kubelet or left by an earlier mark
		// that no status report has replaced yet, or a status no version of
		// the API defines: the node is not known to be ready.
		v.State = StateUnreachable
	}
	return v
}

// NeverReported reports whether a Ready condition (nil when absent) shows a
// node that has never posted its own: either none at all, or the one the
// controller wrote when it marked such a node.
func NeverReported(ready *corev1.NodeCondition) bool {
	return ready == nil || ready.Reason == ReasonNeverUpdated
}
