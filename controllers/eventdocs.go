package controllers

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealthpolicy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/shadow"
)

// EventDoc describes one kind of event the controllers emit: docs/reference
// lists them, and a test checks the list against every event the code
// emits.
type EventDoc struct {
	Reason string
	// Type is Normal or Warning.
	Type string
	// On is the kind of object the event is about.
	On string
	// From is the component the event comes from: its source and
	// reporting controller.
	From string
	// When says what the event tells.
	When string
	// DryRun is true for the events only a dry run emits.
	DryRun bool
}

// Events lists every kind of event the controllers emit.
func Events() []EventDoc {
	const normal, warning = corev1.EventTypeNormal, corev1.EventTypeWarning
	node, lease := nodehealth.EventSource, "Namespace `"+corev1.NamespaceNodeLease+"`"
	return []EventDoc{
		{Reason: nodehealth.ReasonRegisteredNode, Type: normal, On: "Node", From: node,
			When: "A node created at or after the second the controller started is first seen; nodes already there are not announced."},
		{Reason: nodehealth.ReasonNodeNotReady, Type: normal, On: "Node", From: node,
			When: "The controller marked the node Unknown, taking its Ready condition from True."},
		{Reason: nodehealth.ReasonRemovingNode, Type: normal, On: "Node", From: node,
			When: "The node was deleted."},
		{Reason: nodehealth.ReasonNodeNotReady, Type: warning, On: "Pod", From: node,
			When: "The pod was marked Ready=False: its node went silent."},
		{Reason: nodehealth.ReasonPartitionFreeze, Type: warning, On: lease, From: node,
			When: "Enough nodes lost their heartbeats within one grace period: NoExecute tainting, pod NotReady marking and eviction are frozen."},
		{Reason: nodehealth.ReasonPartitionFreezeEnded, Type: normal, On: lease, From: node,
			When: "The heartbeats are back and the freeze ended."},
		{Reason: nodehealth.ReasonMaintenanceHold, Type: normal, On: "Node", From: node,
			When: "The node is down in maintenance: its NoExecute taint and evictions are held until the maintenance grace runs out."},
		{Reason: nodehealth.ReasonMaintenanceHoldEnded, Type: warning, On: "Node", From: node,
			When: "The maintenance grace ran out, or the maintenance ended with the node still down: it is tainted NoExecute and its pods evicted as any other's."},
		{Reason: nodehealth.ReasonForeignLifecycleWriter, Type: warning, On: "Node", From: node,
			When: "Another field manager marked the node Unknown, or kube-controller-manager wrote its taints with a node lifecycle taint among them, while this controller decides: kube-controller-manager's node lifecycle loops, or another controller, are still on. Told once per write; not in a dry run."},
		{Reason: podeviction.ReasonTaintManagerEviction, Type: normal, On: "Pod", From: podeviction.EventSource,
			When: "The pod is being deleted for a NoExecute taint of its node that it does not tolerate, or no longer tolerates."},
		{Reason: nodehealthpolicy.ReasonEvictionBlocked, Type: warning, On: "NodeHealthPolicy", From: nodehealthpolicy.ControllerName,
			When: "The policy's EvictionAllowed condition turned False (TooManyUnhealthy, Paused, PartitionFreeze or FullDisruption): its pool's NoExecute tainting and eviction are blocked."},
		{Reason: shadow.ReasonWouldTaint, Type: normal, On: "ConfigMap (the dry run's record)", From: DryRunEventSource, DryRun: true,
			When: "A dry run would have tainted a node NoExecute."},
		{Reason: shadow.ReasonWouldUntaint, Type: normal, On: "ConfigMap (the dry run's record)", From: DryRunEventSource, DryRun: true,
			When: "A dry run would have removed a node's NoExecute taint."},
	}
}
