package nodehealth

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
)

// ControllerName names the controller in logs and metrics; its events come
// from EventSource.
const ControllerName = "node-lifecycle-controller"

// Workers is how many nodes are judged at once. A look waits on the
// apiserver alone (a mark is a live read and a write), and when a zone
// dies its marks come together: with 8, each of 334 marks waited up to
// 20s in the queue for a worker while the apiserver answered in 0.2 to
// 1.5s.
const Workers = 32

// Register adds the reconciler to mgr: it watches Nodes and the Leases in
// kube-node-lease, runs the nodes' wakes and the pods' workers, and every
// resyncPeriod re-evaluates the partition freeze and sends the nodes whose
// deadline passed unnoticed back through the queue.
func (r *Reconciler) Register(mgr ctrl.Manager, resyncPeriod time.Duration) error {
	pods := r.d.Pods
	if pods == nil {
		pods = podscope.Cluster{Reader: r.d.Client, Cache: mgr.GetCache()}
	}
	for _, run := range []manager.Runnable{r.world.podMarks, manager.RunnableFunc(func(ctx context.Context) error {
		return r.resync(ctx, r.d.Clock, resyncPeriod)
	})} {
		if err := mgr.Add(run); err != nil {
			return err
		}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: nodeUpdateMatters})).
		// Heartbeats are heard before the queue, and only those of a node
		// not judged healthy go on to it; the other Node changes that
		// matter are queued by For.
		WatchesRawSource(&heartbeatSource{cache: mgr.GetCache(), obj: &corev1.Node{}, handler: r.nodeHeartbeats}).
		WatchesRawSource(&heartbeatSource{cache: mgr.GetCache(), obj: &coordinationv1.Lease{}, handler: r.leaseHeartbeats}).
		WatchesRawSource(pods.Source(predicate.TypedFuncs[*corev1.Pod]{UpdateFunc: podBound, DeleteFunc: podGone})).
		WatchesRawSource(r.world.wakes.source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers, ReconciliationTimeout: r.d.ReconcileTimeout})
	if r.d.Policies != nil {
		// A policy change can move any node's deadline or pool.
		b = b.WatchesRawSource(r.d.Policies.Nodes(nil))
	}
	return b.Complete(r)
}

// podBound passes pod updates that bind it to a node or make it Ready: on a
// node that is not ready, either calls for marking it NotReady.
func podBound(e event.TypedUpdateEvent[*corev1.Pod]) bool {
	return e.ObjectOld.Spec.NodeName != e.ObjectNew.Spec.NodeName ||
		(!health.PodReady(e.ObjectOld) && health.PodReady(e.ObjectNew))
}

// podGone ignores pod deletions: nothing about a node changes with them.
func podGone(event.TypedDeleteEvent[*corev1.Pod]) bool { return false }

// nodeUpdateMatters passes Node updates that change what the controller
// judges or writes: labels, the conditions' status, taints and the
// unschedulable flag. A status report that only renews the conditions'
// heartbeat times is a heartbeat, which hearNode records and passes on
// when the node needs a look; image lists and the like do not wake it.
func nodeUpdateMatters(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return o.UID != n.UID ||
		// Labels place a node in its zone and its policy's pool.
		!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		o.Spec.Unschedulable != n.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
		conditionsChanged(o.Status.Conditions, n.Status.Conditions)
}

// conditionsChanged reports whether two lists of node conditions differ in
// anything but their heartbeat times.
func conditionsChanged(o, n []corev1.NodeCondition) bool {
	if len(o) != len(n) {
		return true
	}
	for i := range o {
		a, b := &o[i], &n[i]
		if a.Type != b.Type || a.Status != b.Status || a.Reason != b.Reason || a.Message != b.Message ||
			!a.LastTransitionTime.Equal(&b.LastTransitionTime) {
			return true
		}
	}
	return false
}

// resync runs the executor's resync (act.Executor.Resync) every period,
// and keeps an outage that ended in the cluster at once, for a new leader,
// which did not see it. It runs only on the leader, like the controller,
// and starts each term with zeroed state counts.
func (r *Reconciler) resync(ctx context.Context, ticker clock.WithTicker, period time.Duration) error {
	resetStateGauge()
	t := ticker.NewTicker(period)
	defer t.Stop()
	var regained <-chan struct{}
	if r.d.Sight != nil {
		regained = r.d.Sight.Regained()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-regained:
			r.exec.KeepFreeze(ctx, port{r})
		case <-t.C():
			ch, strays := r.exec.Resync(ctx, port{r})
			r.applyChange(ctx, ch)
			if strays > 0 {
				ctrl.LoggerFrom(ctx).V(1).Info("Looking again at nodes whose NoExecute taints are not what they should be", "nodes", strays)
			}
		}
	}
}
