package shadow

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// disruptionReason is the reason of the DisruptionTarget condition a taint
// eviction sets on a pod before deleting it, kube-controller-manager's and
// this controller's alike.
const disruptionReason = "DeletionByTaintManager"

// Watch records what the controller that decides does to Nodes and Pods,
// as the informers of c show it. It runs until ctx ends.
func (s *Shadow) Watch(ctx context.Context, c cache.Informers) error {
	nodes, err := c.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return fmt.Errorf("node informer: %w", err)
	}
	pods, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	log := ctrl.LoggerFrom(ctx)
	nh, err := nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.observeNode(ctx, obj) },
		UpdateFunc: func(_, obj any) { s.observeNode(ctx, obj) },
		DeleteFunc: func(obj any) { s.nodeGone(obj) },
	})
	if err != nil {
		return fmt.Errorf("watch nodes: %w", err)
	}
	ph, err := pods.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		// A pod already deleting when the watch begins was evicted before
		// this run: the record kept in the cluster has it, if anything.
		AddFunc: func(obj any, initial bool) {
			if !initial {
				s.observePod(ctx, obj, false)
			}
		},
		UpdateFunc: func(_, obj any) { s.observePod(ctx, obj, false) },
		DeleteFunc: func(obj any) { s.observePod(ctx, obj, true) },
	})
	if err != nil {
		_ = nodes.RemoveEventHandler(nh)
		return fmt.Errorf("watch pods: %w", err)
	}
	log.Info("Dry run: comparing with the controller that decides")
	<-ctx.Done()
	_ = nodes.RemoveEventHandler(nh)
	_ = pods.RemoveEventHandler(ph)
	return nil
}

// observeNode records the other controller's mark and NoExecute taint of a
// node, and ends the node's episode once it is healthy on both sides.
func (s *Shadow) observeNode(ctx context.Context, obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	now := s.Clock.Now()
	ours, _ := s.View.Node(node.Name)
	ready := health.ReadyCondition(node)
	if markedByController(ready) {
		first := !s.Record.hasMark(node.Name, false)
		s.Record.Marked(node.Name, false, seenAt(ready.LastTransitionTime.Time, now))
		if first {
			upstreamActions.WithLabelValues(ActionMark).Inc()
		}
	}
	if key, added := lifecycleNoExecute(node.Spec.Taints); key != "" {
		// A taint without timeAdded is timed when first seen.
		added = seenAt(added, now)
		held := ""
		if ours.NoExecute == "" {
			held = s.holdOf(node.Name)
		}
		if !s.Record.hasTaint(node.Name, false) {
			upstreamActions.WithLabelValues(ActionTaint).Inc()
			if held != "" {
				differences.WithLabelValues(ActionTaint, held).Inc()
			}
			ctrl.LoggerFrom(ctx).Info("Dry run: the controller that decides tainted a node NoExecute",
				"Node", node.Name, "taint", key, "heldHere", held, "taintedHere", ours.NoExecute != "")
		}
		s.Record.Tainted(node.Name, false, key, added, held)
		s.Record.UpstreamHealth(node.Name, false)
		return
	}
	healthy := ready != nil && ready.Status == corev1.ConditionTrue
	s.Record.UpstreamHealth(node.Name, healthy)
	if healthy && ours.Marked.IsZero() && ours.NoExecute == "" {
		s.Record.Recovered(node.Name, now)
	}
}

// seenAt times a write of the other controller from its stamp, which the
// apiserver keeps in whole seconds: up to a second before the write. Seen
// within that second, the write is timed when seen, as the dry run's own
// are; seen later (listed after a restart, or stamped by a clock ahead of
// this one), by its stamp. A write without a stamp is timed when seen.
func seenAt(stamp, now time.Time) time.Time {
	if stamp.IsZero() || (!now.Before(stamp) && now.Sub(stamp) < time.Second) {
		return now
	}
	return stamp
}

// nodeGone ends a deleted node's episode and forgets it.
func (s *Shadow) nodeGone(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	s.Record.Gone(node.Name, s.Clock.Now())
	s.View.ForgetNode(node.Name)
}

// observePod records a pod the other controller evicted: one deleting, or
// gone, with the DisruptionTarget condition of a taint eviction that this
// dry run did not make.
func (s *Shadow) observePod(ctx context.Context, obj any, gone bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	defer func() {
		if gone {
			s.View.ForgetPod(pod.UID)
		}
	}()
	decided, byTaint := taintEviction(pod)
	if pod.Spec.NodeName == "" || (pod.DeletionTimestamp == nil && !gone) || !byTaint {
		return
	}
	// The dry run writes nothing: a pod evicted in the cluster was evicted
	// by the other controller, whether or not the dry run evicted it too.
	name := pod.Namespace + "/" + pod.Name
	if s.Record.hasPod(pod.Spec.NodeName, name, decided) {
		return
	}
	held := s.evictionHoldOf(pod.Spec.NodeName)
	upstreamActions.WithLabelValues(ActionEvict).Inc()
	if held != "" {
		differences.WithLabelValues(ActionEvict, held).Inc()
	}
	ctrl.LoggerFrom(ctx).Info("Dry run: the controller that decides evicted a pod",
		"Pod", name, "Node", pod.Spec.NodeName, "heldHere", held)
	s.Record.Evicted(Eviction{Node: pod.Spec.NodeName, Pod: name, At: s.Clock.Now(), Decided: decided,
		Held: held, Due: s.View.Due(pod.UID)})
}

// taintEviction reports whether the pod carries the DisruptionTarget
// condition of a taint eviction, and when the condition was set.
func taintEviction(pod *corev1.Pod) (time.Time, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == disruptionReason {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}
