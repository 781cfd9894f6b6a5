package nodehealthpolicy

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
)

// NodesOnChange maps a NodeHealthPolicy event to the nodes a controller must
// look at again: it refreshes src first, so the reconciles it queues see the
// new policies, and returns the nodes, read from r, that keep accepts (every
// node when keep is nil). Every event requeues: the Source is shared, and
// another controller's handler may already have refreshed it for this very
// event; the watch's predicate passes spec changes only.
func NodesOnChange(src policy.Source, r client.Reader, keep func(*corev1.Node) bool) handler.TypedMapFunc[*v1alpha1.NodeHealthPolicy, reconcile.Request] {
	return func(ctx context.Context, _ *v1alpha1.NodeHealthPolicy) []reconcile.Request {
		log := ctrl.LoggerFrom(ctx)
		if err := src.Refresh(ctx); err != nil {
			log.Error(err, "Reading NodeHealthPolicies failed")
			return nil
		}
		nodes := &corev1.NodeList{}
		if err := r.List(ctx, nodes); err != nil {
			log.Error(err, "Listing nodes after a policy change failed")
			return nil
		}
		var reqs []reconcile.Request
		for i := range nodes.Items {
			if keep == nil || keep(&nodes.Items[i]) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: nodes.Items[i].Name}})
			}
		}
		return reqs
	}
}
