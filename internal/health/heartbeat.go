package health

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// Pulse is what a node's heartbeats showed when last observed: the parts of
// the Lease spec a renewal changes and the heartbeat time of the Ready
// condition. Two pulses that differ mean the node wrote something in between.
// It holds plain values so that comparing and storing one does not allocate.
type Pulse struct {
	HasLease             bool
	LeaseRenewNanos      int64
	LeaseAcquireNanos    int64
	LeaseDurationSeconds int32
	LeaseTransitions     int32
	LeaseHolder          string
	// ReadyHeartbeatNanos is the Ready condition's lastHeartbeatTime, or the
	// node's creation time when there is no Ready condition. The controller
	// writes the creation time itself when it marks a node that never
	// reported, so that write does not read as a heartbeat.
	ReadyHeartbeatNanos int64
	// ReadyUnknown is true when the Ready condition says Unknown: the node
	// was marked, by this controller or one before it. It is no part of
	// the heartbeat; it tells a node first observed already marked.
	ReadyUnknown bool
}

// PulseOf reads the pulse of a node and its Lease; lease may be nil.
func PulseOf(node *corev1.Node, lease *coordinationv1.Lease) Pulse {
	var p Pulse
	if node != nil {
		p.ReadyHeartbeatNanos = readyHeartbeat(node)
		if c := ReadyCondition(node); c != nil && c.Status == corev1.ConditionUnknown {
			p.ReadyUnknown = true
		}
	}
	p.setLease(lease)
	return p
}

// readyHeartbeat is the status part of a node's pulse.
func readyHeartbeat(node *corev1.Node) int64 {
	if c := ReadyCondition(node); c != nil {
		return c.LastHeartbeatTime.UnixNano()
	}
	return node.CreationTimestamp.UnixNano()
}

// setLease replaces the Lease part of the pulse with what lease shows.
func (p *Pulse) setLease(lease *coordinationv1.Lease) {
	*p = Pulse{ReadyHeartbeatNanos: p.ReadyHeartbeatNanos, ReadyUnknown: p.ReadyUnknown}
	if lease != nil {
		s := &lease.Spec
		p.HasLease = true
		if s.RenewTime != nil {
			p.LeaseRenewNanos = s.RenewTime.UnixNano()
		}
		if s.AcquireTime != nil {
			p.LeaseAcquireNanos = s.AcquireTime.UnixNano()
		}
		if s.LeaseDurationSeconds != nil {
			p.LeaseDurationSeconds = *s.LeaseDurationSeconds
		}
		if s.LeaseTransitions != nil {
			p.LeaseTransitions = *s.LeaseTransitions
		}
		if s.HolderIdentity != nil {
			p.LeaseHolder = *s.HolderIdentity
		}
	}
}

// withLeaseOf returns p with q's Lease part.
func (p Pulse) withLeaseOf(q Pulse) Pulse {
	q.ReadyHeartbeatNanos, q.ReadyUnknown = p.ReadyHeartbeatNanos, p.ReadyUnknown
	return q
}

// LeaseChanged reports whether the Lease part of two pulses differs. A Lease
// that appears counts; one that disappears does not, since a deleted Lease is
// not a sign of life.
func (p Pulse) LeaseChanged(prev Pulse) bool {
	if !p.HasLease {
		return false
	}
	return !prev.HasLease ||
		p.LeaseRenewNanos != prev.LeaseRenewNanos ||
		p.LeaseAcquireNanos != prev.LeaseAcquireNanos ||
		p.LeaseDurationSeconds != prev.LeaseDurationSeconds ||
		p.LeaseTransitions != prev.LeaseTransitions ||
		p.LeaseHolder != prev.LeaseHolder
}

// StatusChanged reports whether the Ready heartbeat of two pulses differs.
func (p Pulse) StatusChanged(prev Pulse) bool {
	return p.ReadyHeartbeatNanos != prev.ReadyHeartbeatNanos
}

// ReadyCondition returns the node's Ready condition, or nil.
func ReadyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// ReadyStatus returns the status of the node's Ready condition, "" for
// none.
func ReadyStatus(node *corev1.Node) corev1.ConditionStatus {
	if c := ReadyCondition(node); c != nil {
		return c.Status
	}
	return ""
}

// PodReady reports whether a pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
