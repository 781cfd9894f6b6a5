package podscope

import corev1 "k8s.io/api/core/v1"

// Needs reports whether the controllers act on the node's pods as the node
// stands: its Ready condition is there and not True (its pods are marked
// NotReady), or it carries a NoExecute taint (its pods are evicted unless
// they tolerate it).
func Needs(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return false
}
