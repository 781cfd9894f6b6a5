package podeviction

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
)

// ControllerName names the controller in logs and metrics; its events come
// from EventSource.
const ControllerName = "pod-eviction"

// Workers is how many nodes are worked on at once.
const Workers = 8

// SetupWithManager registers the reconciler: it watches Nodes that carry
// NoExecute taints when first seen (every Node, in a dry run) or whose
// NoExecute taints change, and pods whose binding or tolerations change.
// Without Pods, pods must be indexed by node in the manager's cache
// (index.Register).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Pods == nil {
		r.Pods = podscope.Cluster{Reader: r.Client, Cache: mgr.GetCache()}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{CreateFunc: r.firstSeen, UpdateFunc: noExecuteTaintsChanged})).
		WatchesRawSource(r.Pods.Source(predicate.TypedFuncs[*corev1.Pod]{UpdateFunc: podEvictionInputsChanged})).
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers, ReconciliationTimeout: r.ReconcileTimeout})
	if r.Nudges != nil {
		b = b.WatchesRawSource(source.Channel(r.Nudges, &handler.TypedEnqueueRequestForObject[*corev1.Node]{}))
	}
	if r.Policies != nil {
		// A policy change can move the deadlines of pods on tainted nodes.
		b = b.WatchesRawSource(r.Policies.Nodes(hasNoExecute))
	}
	return b.Complete(r)
}

// hasNoExecute reports whether the node carries a NoExecute taint.
func hasNoExecute(node *corev1.Node) bool { return len(noExecute(node.Spec.Taints)) > 0 }

// firstSeen passes the Nodes first seen with a NoExecute taint: a node
// without one has no pod to evict, and a starting controller, which sees
// every Node as created, looks at the few tainted nodes only rather than
// queueing the whole fleet. A dry run's own taints are on no Node (Nudges):
// it looks at every node it first sees, those it had tainted before a
// restart among them.
func (r *Reconciler) firstSeen(e event.CreateEvent) bool {
	n, ok := e.Object.(*corev1.Node)
	return !ok || r.Nudges != nil || hasNoExecute(n)
}

// noExecuteTaintsChanged passes Node updates that change its NoExecute taints.
func noExecuteTaintsChanged(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return !equality.Semantic.DeepEqual(noExecute(o.Spec.Taints), noExecute(n.Spec.Taints))
}

func noExecute(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// podEvictionInputsChanged passes pod updates that can change its deadline.
func podEvictionInputsChanged(e event.TypedUpdateEvent[*corev1.Pod]) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return o.Spec.NodeName != n.Spec.NodeName ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		!equality.Semantic.DeepEqual(o.Spec.Tolerations, n.Spec.Tolerations)
}
