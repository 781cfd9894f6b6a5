package podscope

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/syncinformer"
)

// byNode indexes the pods of the watch of every pod by their node.
const byNode = "node"

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// watch is one informer of pods: of one node's, or of every pod.
type watch struct {
	// node is the node whose pods are watched; "" for every pod.
	node   string
	inf    toolscache.SharedIndexInformer
	synced toolscache.DoneChecker
	stop   context.CancelFunc
}

// listed reports whether the watch has listed its pods and told the
// handlers of them.
func (w *watch) listed() bool { return toolscache.IsDone(w.synced) }

// startWatch starts a watch of the node's pods, or of every pod for "".
// Called with mu held.
func (s *Scoped) startWatch(node string) *watch {
	sel := ""
	var indexers toolscache.Indexers
	if node == "" {
		indexers = toolscache.Indexers{byNode: podNode}
	} else {
		sel = fields.OneTermEqualSelector("spec.nodeName", node).String()
	}
	inf := toolscache.NewSharedIndexInformerWithOptions(syncinformer.ListThenWatch(s.listers(sel)), &corev1.Pod{},
		toolscache.SharedIndexInformerOptions{Indexers: indexers})
	// Nothing here reads managed fields; they are most of a pod's size.
	_ = inf.SetTransform(stripManagedFields)
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				e := event.TypedCreateEvent[*corev1.Pod]{Object: pod}
				s.podEvent(pod, func(p predicate.TypedPredicate[*corev1.Pod]) bool { return p.Create(e) })
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if ok1 && ok2 {
				e := event.TypedUpdateEvent[*corev1.Pod]{ObjectOld: o, ObjectNew: n}
				s.podEvent(n, func(p predicate.TypedPredicate[*corev1.Pod]) bool { return p.Update(e) })
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				e := event.TypedDeleteEvent[*corev1.Pod]{Object: pod}
				s.podEvent(pod, func(p predicate.TypedPredicate[*corev1.Pod]) bool { return p.Delete(e) })
			}
		},
	})
	if err != nil {
		// Only a stopped informer refuses a handler, and this one has
		// not started.
		panic(fmt.Sprintf("pod watch handler: %v", err))
	}
	ctx, cancel := context.WithCancel(s.ctx)
	w := &watch{node: node, inf: inf, synced: reg.HasSyncedChecker(), stop: cancel}
	go inf.RunWithContext(ctx)
	go func() {
		select {
		case <-w.synced.Done():
			s.listedNow(w)
		case <-ctx.Done():
		}
	}()
	return w
}

// podNode is the byNode index function.
func podNode(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{pod.Spec.NodeName}, nil
}

// stripManagedFields drops a pod's managed fields before it is stored.
func stripManagedFields(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.ManagedFields = nil
	}
	return obj, nil
}

// nodeKey is the request key of a node.
func nodeKey(node string) client.ObjectKey { return client.ObjectKey{Name: node} }
