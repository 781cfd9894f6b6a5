package nodehealth

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Event reasons on Nodes, the same as kube-controller-manager's.
const (
	ReasonRegisteredNode = "RegisteredNode"
	ReasonRemovingNode   = "RemovingNode"
	ReasonNodeNotReady   = "NodeNotReady"
)

// Event actions, which the events.k8s.io API requires.
const (
	actionRegister        = "Register"
	actionRemove          = "Remove"
	actionMarkUnreachable = "MarkUnreachable"
)

func (r *Reconciler) eventRegistered(node *corev1.Node) {
	r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonRegisteredNode, actionRegister,
		"Node %s event: Registered Node %s in Controller", node.Name, node.Name)
}

func (r *Reconciler) eventRemoving(name string, uid types.UID) {
	ref := &corev1.Node{}
	ref.Name, ref.UID = name, uid
	r.Recorder.Eventf(ref, nil, corev1.EventTypeNormal, ReasonRemovingNode, actionRemove,
		"Node %s event: Removing Node %s from Controller", name, name)
}

func (r *Reconciler) eventNotReady(node *corev1.Node) {
	r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonNodeNotReady, actionMarkUnreachable,
		"Node %s status is now: NodeNotReady", node.Name)
}
