package nodehealth

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// hearing is an event handler that lets the tracker hear a heartbeat the
// moment the informer delivers it, then hands the event on. A heartbeat is
// thus timed when the controller first saw it, not when the node's turn in
// the work queue comes: a long queue, or a client held back by its rate
// limit, cannot make a live node look silent. An update that hear says
// needs no reconcile goes no further.
type hearing[T any] struct {
	hear func(T) (reconcile bool)
	next handler.TypedEventHandler[T, reconcile.Request]
}

var _ handler.TypedEventHandler[*corev1.Node, reconcile.Request] = hearing[*corev1.Node]{}

// Create implements handler.TypedEventHandler.
func (h hearing[T]) Create(ctx context.Context, e event.TypedCreateEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.hear(e.Object)
	if h.next != nil {
		h.next.Create(ctx, e, q)
	}
}

// Update implements handler.TypedEventHandler.
func (h hearing[T]) Update(ctx context.Context, e event.TypedUpdateEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if h.hear(e.ObjectNew) && h.next != nil {
		h.next.Update(ctx, e, q)
	}
}

// Delete implements handler.TypedEventHandler. A deletion is no heartbeat.
func (h hearing[T]) Delete(ctx context.Context, e event.TypedDeleteEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if h.next != nil {
		h.next.Delete(ctx, e, q)
	}
}

// Generic implements handler.TypedEventHandler.
func (h hearing[T]) Generic(ctx context.Context, e event.TypedGenericEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if h.next != nil {
		h.next.Generic(ctx, e, q)
	}
}

// hearLease records a node Lease as soon as it arrives. The renewal of a
// healthy node's Lease, the bulk of a cluster's events, is recorded and
// nothing more: the node is judged at its old deadline, finds the heartbeat
// and waits for the new one. Anything else is reconciled.
func (r *Reconciler) hearLease(lease *coordinationv1.Lease) bool {
	if lease.Namespace != LeaseNamespace {
		return true
	}
	heartbeat := r.Tracker.HeardLease(lease.Name, lease, r.Clock.Now())
	return !heartbeat || !r.Tracker.Healthy(lease.Name)
}

// hearNode records a Node's status heartbeat as soon as it arrives, and
// passes it on only for a node not judged healthy, as hearLease does a
// renewal: a healthy node finds the heartbeat at its old deadline. The other
// Node changes that matter are queued by the controller's For.
func (r *Reconciler) hearNode(node *corev1.Node) bool {
	return r.Tracker.HeardNode(node, r.Clock.Now()) && !r.Tracker.Healthy(node.Name)
}
