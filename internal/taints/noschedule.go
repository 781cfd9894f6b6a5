package taints

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionTaints maps a condition and its status to the NoSchedule taint that
// keeps new pods off the node, as kube-controller-manager does.
var conditionTaints = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeReady: {
		corev1.ConditionFalse:   corev1.TaintNodeNotReady,
		corev1.ConditionUnknown: corev1.TaintNodeUnreachable,
	},
	corev1.NodeMemoryPressure:     {corev1.ConditionTrue: corev1.TaintNodeMemoryPressure},
	corev1.NodeDiskPressure:       {corev1.ConditionTrue: corev1.TaintNodeDiskPressure},
	corev1.NodeNetworkUnavailable: {corev1.ConditionTrue: corev1.TaintNodeNetworkUnavailable},
	corev1.NodePIDPressure:        {corev1.ConditionTrue: corev1.TaintNodePIDPressure},
}

// Owned reports whether a taint is one this package manages: a NoSchedule
// taint with one of the condition keys or the unschedulable key.
func Owned(t *corev1.Taint) bool {
	if t.Effect != corev1.TaintEffectNoSchedule {
		return false
	}
	switch t.Key {
	case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeMemoryPressure,
		corev1.TaintNodeDiskPressure, corev1.TaintNodeNetworkUnavailable, corev1.TaintNodePIDPressure,
		corev1.TaintNodeUnschedulable:
		return true
	}
	return false
}

// WantedNoSchedule returns the keys of the NoSchedule taints a node's
// conditions and spec call for.
//
// A node without a Ready condition has not reported yet and is kept
// not-ready; the apiserver's admission adds that taint when the node is
// created, and it stays until the kubelet reports. A Ready status that no API
// version defines is treated as Unknown.
func WantedNoSchedule(node *corev1.Node) []string {
	keys := make([]string, 0, 2)
	sawReady := false
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		byStatus, ok := conditionTaints[c.Type]
		if !ok {
			continue
		}
		if c.Type == corev1.NodeReady {
			sawReady = true
			if c.Status != corev1.ConditionTrue && c.Status != corev1.ConditionFalse {
				keys = append(keys, corev1.TaintNodeUnreachable)
				continue
			}
		}
		if key, ok := byStatus[c.Status]; ok {
			keys = append(keys, key)
		}
	}
	if !sawReady {
		keys = append(keys, corev1.TaintNodeNotReady)
	}
	if node.Spec.Unschedulable {
		keys = append(keys, corev1.TaintNodeUnschedulable)
	}
	return keys
}

// ReconcileNoSchedule returns the node's taints with the owned NoSchedule
// taints brought in line with WantedNoSchedule, and whether anything changed.
// Taints that stay keep their timeAdded; new ones get now. Taints the package
// does not own are kept as they are, in their order.
func ReconcileNoSchedule(node *corev1.Node, now metav1.Time) ([]corev1.Taint, bool) {
	wanted := WantedNoSchedule(node)
	out := make([]corev1.Taint, 0, len(node.Spec.Taints)+len(wanted))
	changed := false
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if Owned(t) && !slices.Contains(wanted, t.Key) {
			changed = true
			continue
		}
		if Owned(t) && hasOwned(out, t.Key) {
			// A duplicate; the apiserver refuses these, but do not keep one.
			changed = true
			continue
		}
		out = append(out, *t.DeepCopy())
	}
	for _, key := range wanted {
		if hasOwned(out, key) {
			continue
		}
		added := now
		out = append(out, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &added})
		changed = true
	}
	return out, changed
}

func hasOwned(ts []corev1.Taint, key string) bool {
	for i := range ts {
		if ts[i].Key == key && ts[i].Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}
