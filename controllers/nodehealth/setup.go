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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "node-lifecycle-controller"

// Workers is how many nodes are judged at once.
const Workers = 8

// SetupWithManager registers the reconciler with mgr: it watches Nodes and
// the Leases in kube-node-lease, and every resyncPeriod sends the nodes whose
// deadline passed unnoticed back through the queue.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, resyncPeriod time.Duration, ticker clock.WithTicker) error {
	resync := &resyncer{tracker: r.Tracker, clock: ticker, period: resyncPeriod,
		events: make(chan event.TypedGenericEvent[*corev1.Node], 64)}
	if err := mgr.Add(resync); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: nodeUpdateMatters})).
		WatchesRawSource(source.Kind(mgr.GetCache(), &coordinationv1.Lease{},
			handler.TypedEnqueueRequestsFromMapFunc(leaseToNode),
			predicate.TypedFuncs[*coordinationv1.Lease]{UpdateFunc: leaseSpecChanged})).
		WatchesRawSource(source.Channel(resync.events, &handler.TypedEnqueueRequestForObject[*corev1.Node]{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers}).
		Complete(r)
}

// leaseToNode maps a node Lease to the Node of the same name.
func leaseToNode(_ context.Context, lease *coordinationv1.Lease) []reconcile.Request {
	if lease.Namespace != LeaseNamespace {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: lease.Name}}}
}

// leaseSpecChanged passes Lease updates that can be a heartbeat.
func leaseSpecChanged(e event.TypedUpdateEvent[*coordinationv1.Lease]) bool {
	return !equality.Semantic.DeepEqual(e.ObjectOld.Spec, e.ObjectNew.Spec)
}

// nodeUpdateMatters passes Node updates that change what the controller
// judges or writes: conditions (heartbeats among them), taints and the
// unschedulable flag. Kubelet image lists and the like do not wake it.
func nodeUpdateMatters(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return o.UID != n.UID ||
		o.Spec.Unschedulable != n.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
		!equality.Semantic.DeepEqual(o.Status.Conditions, n.Status.Conditions)
}

// resyncer is the safety net behind RequeueAfter: every period it looks for
// nodes whose deadline passed without a verdict and queues them.
type resyncer struct {
	tracker *health.Tracker
	clock   clock.WithTicker
	period  time.Duration
	events  chan event.TypedGenericEvent[*corev1.Node]
}

// Start runs until ctx ends. It runs only on the leader, like the
// controller, and starts each term with zeroed state counts.
func (s *resyncer) Start(ctx context.Context) error {
	resetStateGauge()
	t := s.clock.NewTicker(s.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			for _, name := range s.tracker.Overdue(s.clock.Now()) {
				n := &corev1.Node{}
				n.Name = name
				select {
				case s.events <- event.TypedGenericEvent[*corev1.Node]{Object: n}:
				case <-ctx.Done():
					return nil
				}
			}
		}
	}
}
