package nodehealth

import (
	"context"
	"errors"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// queue is the controller's work queue, as a source is handed it.
type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// heartbeatSource is a source whose handler the informer of obj's kind calls
// directly. Heartbeats, a Lease renewal from each node every 10s, are the
// bulk of the events the controller hears, and nearly all are only
// recorded: a handler behind source.Kind would pay, for each, the wrapping
// of the event and a cancelable context made and torn down, which cost
// twice what recording it does. The handler has the tracker record a
// heartbeat the moment the informer delivers it, so that a heartbeat is
// timed when the controller first saw it, not when the node's turn in the
// work queue comes: a long queue, or a client held back by its rate limit,
// cannot make a live node look silent.
type heartbeatSource struct {
	cache   cache.Cache
	obj     client.Object
	handler func(queue) toolscache.ResourceEventHandler
	// synced is sent the outcome of the start, and closed once the
	// handler has been told of every object of the informer's first list.
	synced chan error
}

var _ source.TypedSyncingSource[reconcile.Request] = (*heartbeatSource)(nil)

// String names the source in the controller's logs.
func (s *heartbeatSource) String() string { return fmt.Sprintf("heartbeats of %T", s.obj) }

// Start registers the handler with the informer. The informer is asked for
// in the background, as source.Kind does: once the cache has started, the
// ask waits for a new informer's first list.
func (s *heartbeatSource) Start(ctx context.Context, q queue) error {
	s.synced = make(chan error, 1)
	go func() {
		defer close(s.synced)
		informer, err := s.cache.GetInformer(ctx, s.obj)
		if err != nil {
			s.synced <- fmt.Errorf("get the informer of %T: %w", s.obj, err)
			return
		}
		registration, err := informer.AddEventHandler(s.handler(q))
		if err != nil {
			s.synced <- fmt.Errorf("add the heartbeat handler to the informer of %T: %w", s.obj, err)
			return
		}
		if !toolscache.WaitForCacheSync(ctx.Done(), registration.HasSynced) {
			s.synced <- fmt.Errorf("the informer of %T did not sync: %w", s.obj, ctx.Err())
		}
	}()
	return nil
}

// WaitForSync returns once the handler has heard every object of the
// informer's first list, so that no node is judged before its heartbeats
// are known.
func (s *heartbeatSource) WaitForSync(ctx context.Context) error {
	select {
	case err := <-s.synced:
		return err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil
		}
		return fmt.Errorf("wait for %s to sync: %w", s, ctx.Err())
	}
}

// leaseHeartbeats returns the handler of node Lease changes: a renewal is
// recorded, and the node queued only if it needs a look (hearLease); a
// Lease added is recorded and queued, and one deleted queued.
func (r *Reconciler) leaseHeartbeats(q queue) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if lease, ok := obj.(*coordinationv1.Lease); ok {
				r.hearLease(lease)
				queueLeaseNode(q, lease)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*coordinationv1.Lease)
			n, ok2 := newObj.(*coordinationv1.Lease)
			if ok1 && ok2 && leaseSpecChanged(o, n) && r.hearLease(n) {
				queueLeaseNode(q, n)
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if lease, ok := obj.(*coordinationv1.Lease); ok {
				queueLeaseNode(q, lease)
			}
		},
	}
}

// nodeHeartbeats returns the handler of Node changes as heartbeats: a
// status report is recorded, and queued only for a node not judged healthy
// (hearNode). The controller's For queues the other Node changes that
// matter, additions and deletions among them.
func (r *Reconciler) nodeHeartbeats(q queue) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if node, ok := obj.(*corev1.Node); ok {
				r.hearNode(node)
			}
		},
		UpdateFunc: func(_, newObj any) {
			if node, ok := newObj.(*corev1.Node); ok && r.hearNode(node) {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: node.Name}})
			}
		},
	}
}

// queueLeaseNode queues the node whose Lease this is, if it is a node Lease.
func queueLeaseNode(q queue, lease *coordinationv1.Lease) {
	if lease.Namespace == LeaseNamespace {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: lease.Name}})
	}
}

// leaseSpecChanged reports whether a Lease update can be a heartbeat. A new
// renewTime, nearly every update, is told without comparing the rest.
func leaseSpecChanged(o, n *coordinationv1.Lease) bool {
	a, b := o.Spec.RenewTime, n.Spec.RenewTime
	if (a == nil) != (b == nil) || a != nil && !a.Equal(b) {
		return true
	}
	return !equality.Semantic.DeepEqual(o.Spec, n.Spec)
}

// hearLease records a node Lease as soon as it arrives. The renewal of a
// healthy node's Lease before its deadline, the bulk of a cluster's events,
// is recorded and nothing more: the node is judged at its old deadline,
// finds the heartbeat and waits for the new one. Anything else is
// reconciled, a renewal heard past the deadline too: the look at the
// deadline may have counted the node as silent even if its mark failed.
func (r *Reconciler) hearLease(lease *coordinationv1.Lease) bool {
	if lease.Namespace != LeaseNamespace {
		return true
	}
	return r.d.Model.HeardLease(lease.Name, lease, r.d.Clock.Now()) != health.OnTime
}

// hearNode records a Node's status heartbeat as soon as it arrives, and
// passes it on only for a node not judged healthy or heard past its
// deadline, as hearLease does a renewal: a healthy node finds the heartbeat
// at its old deadline. The other
// Node changes that matter are queued by the controller's For.
func (r *Reconciler) hearNode(node *corev1.Node) bool {
	return r.d.Model.HeardNode(node, r.d.Clock.Now()) == health.NeedsLook
}
