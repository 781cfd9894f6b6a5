package nodehealth

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Event reasons on Nodes, the same as kube-controller-manager's.
const (
	ReasonRegisteredNode = "RegisteredNode"
	ReasonRemovingNode   = "RemovingNode"
	ReasonNodeNotReady   = "NodeNotReady"
)

// EventSource is the component that reports the events on Nodes, and on the
// Pods marked NotReady: kube-controller-manager's node lifecycle controller
// reports as node-controller, and filters and alerts select on it.
const EventSource = "node-controller"

// Event actions, which the events.k8s.io API requires; the recorder that
// writes events as kube-controller-manager does drops them.
const (
	actionRegister        = "Register"
	actionRemove          = "Remove"
	actionMarkUnreachable = "MarkUnreachable"
	actionMarkNotReady    = "MarkNotReady"
	actionFreeze          = "Freeze"
)

// Reasons of the events that report the partition freeze.
const (
	ReasonPartitionFreeze      = "PartitionFreeze"
	ReasonPartitionFreezeEnded = "PartitionFreezeEnded"
)

// registeredSince reports whether the node was created at or after start,
// by its creationTimestamp, which has whole seconds: a node created in the
// second the controller started counts as new.
func registeredSince(node *corev1.Node, start time.Time) bool {
	return !node.CreationTimestamp.Time.Before(start.Truncate(time.Second))
}

// eventRegistered announces a node registered since the controller started.
// Nodes already there are not announced again, unlike
// kube-controller-manager, which announces every node at each start: at
// 5,000 nodes, writing them all takes minutes at 20 requests a second, and
// the events that matter queue behind them.
func (r *Reconciler) eventRegistered(node *corev1.Node) {
	r.d.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonRegisteredNode, actionRegister,
		"Node %s event: Registered Node %s in Controller", node.Name, node.Name)
}

func (r *Reconciler) eventRemoving(name string, uid types.UID) {
	ref := &corev1.Node{}
	ref.Name, ref.UID = name, uid
	r.d.Recorder.Eventf(ref, nil, corev1.EventTypeNormal, ReasonRemovingNode, actionRemove,
		"Node %s event: Removing Node %s from Controller", name, name)
}

// eventNotReady announces a node the controller has just marked Unknown. The
// caller emits it only when the mark took the Ready condition from True, as
// kube-controller-manager does: a node already NotReady reported that
// itself, and a node never ready has no readiness to lose.
func (r *Reconciler) eventNotReady(node *corev1.Node) {
	r.d.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonNodeNotReady, actionMarkUnreachable,
		"Node %s status is now: NodeNotReady", node.Name)
}

// freezeSubject is what freeze events are about: the namespace that holds
// the heartbeats whose loss set the freeze off.
func freezeSubject() *corev1.Namespace {
	ns := &corev1.Namespace{}
	ns.Name = corev1.NamespaceNodeLease
	return ns
}

func (r *Reconciler) eventFreeze(frozen bool, silent, total int) {
	if frozen {
		r.d.Recorder.Eventf(freezeSubject(), nil, corev1.EventTypeWarning, ReasonPartitionFreeze, actionFreeze,
			"%d of %d nodes lost their heartbeats within one grace period: NoExecute tainting, "+
				"pod NotReady marking and eviction are frozen", silent, total)
		return
	}
	r.d.Recorder.Eventf(freezeSubject(), nil, corev1.EventTypeNormal, ReasonPartitionFreezeEnded, actionFreeze,
		"Heartbeats are back (%d of %d nodes silent): the partition freeze has ended", silent, total)
}
