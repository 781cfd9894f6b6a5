package health

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons and messages of the conditions written for an unreachable node.
// They match kube-controller-manager's, so that alerts and tools built on
// them keep working.
const (
	ReasonUnknown       = "NodeStatusUnknown"
	MessageUnknown      = "Kubelet stopped posting node status."
	ReasonNeverUpdated  = "NodeStatusNeverUpdated"
	MessageNeverUpdated = "Kubelet never posted node status."
)

// conditionsMarkedUnknown are the conditions set to Unknown when a node is
// unreachable. NetworkUnavailable is left alone: the network plugin or cloud
// provider owns it, not the kubelet.
var conditionsMarkedUnknown = [...]corev1.NodeConditionType{
	corev1.NodeReady,
	corev1.NodeMemoryPressure,
	corev1.NodeDiskPressure,
	corev1.NodePIDPressure,
}

// MarkUnknown returns the conditions an unreachable node should carry, and
// whether they differ from the given ones. A condition the kubelet posted
// becomes Unknown with its heartbeat time kept; a missing one is added as
// never updated, with the node's creation time as its heartbeat; one already
// Unknown is left as it is. The given slice is not modified.
func MarkUnknown(conds []corev1.NodeCondition, created, now metav1.Time) ([]corev1.NodeCondition, bool) {
	out := make([]corev1.NodeCondition, len(conds), len(conds)+len(conditionsMarkedUnknown))
	for i := range conds {
		conds[i].DeepCopyInto(&out[i])
	}
	changed := false
	for _, t := range conditionsMarkedUnknown {
		i := indexOf(out, t)
		switch {
		case i < 0:
			out = append(out, corev1.NodeCondition{
				Type:               t,
				Status:             corev1.ConditionUnknown,
				Reason:             ReasonNeverUpdated,
				Message:            MessageNeverUpdated,
				LastHeartbeatTime:  created,
				LastTransitionTime: now,
			})
			changed = true
		case out[i].Status != corev1.ConditionUnknown:
			out[i].Status = corev1.ConditionUnknown
			out[i].Reason = ReasonUnknown
			out[i].Message = MessageUnknown
			out[i].LastTransitionTime = now
			changed = true
		}
	}
	return out, changed
}

func indexOf(conds []corev1.NodeCondition, t corev1.NodeConditionType) int {
	for i := range conds {
		if conds[i].Type == t {
			return i
		}
	}
	return -1
}
