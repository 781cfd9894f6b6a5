// Package testobj builds the Nodes, Leases and Pods that tests start from.
// It imports nothing but the API types, so that the tests of any package,
// the pure ones among them, can use it.
package testobj

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeOption changes a Node that Node builds.
type NodeOption func(*corev1.Node)

// Node returns a Node of the given name, with the UID "uid-" and its name
// so that nodes of different names differ in UID too, changed by opts in
// order.
func Node(name string, opts ...NodeOption) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	for _, opt := range opts {
		opt(n)
	}
	return n
}

// Labels sets the node's labels.
func Labels(labels map[string]string) NodeOption {
	return func(n *corev1.Node) { n.Labels = labels }
}

// Taints adds a taint of the given effect for each key.
func Taints(effect corev1.TaintEffect, keys ...string) NodeOption {
	return func(n *corev1.Node) {
		for _, key := range keys {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
		}
	}
}

// Ready adds a Ready condition of status s, without times or a reason.
func Ready(s corev1.ConditionStatus) NodeOption {
	return Conditions(corev1.NodeCondition{Type: corev1.NodeReady, Status: s})
}

// Conditions adds conds to the node's status.
func Conditions(conds ...corev1.NodeCondition) NodeOption {
	return func(n *corev1.Node) { n.Status.Conditions = append(n.Status.Conditions, conds...) }
}

// Condition returns a node condition of type t and status s as a kubelet
// posts one whose status changed at since: last heard and changed then.
// A zero since leaves both times unset.
func Condition(t corev1.NodeConditionType, s corev1.ConditionStatus, since time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since)}
}

// Lease returns the Lease of the node name in kube-node-lease, held by
// holder and renewed at renewed; a zero renewed leaves it never renewed.
func Lease(name, holder string, renewed time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}
	if !renewed.IsZero() {
		l.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
	}
	return l
}

// Pod returns a Pod of the given name in the default namespace, with the
// UID "uid-" and its name, bound to node and with the given tolerations.
func Pod(name, node string, tolerations ...corev1.Toleration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: node, Tolerations: tolerations},
	}
}

// Toleration returns a toleration of every NoExecute taint of the given
// key, for seconds after the taint was added; nil seconds tolerates it
// forever.
func Toleration(key string, seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}
